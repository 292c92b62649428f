package provisioning

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DeletedPrefix is put before the name of a deleted project's schema
// while it waits to be dropped: no walk of the project_N names sees it.
const DeletedPrefix = "deleted_"

// AppliedVersions lists the tenant migration versions applied to schema
// (a project's, or a deleted project's that waits to be dropped), in
// order, as goose records them: what an export names as the level of its
// rows, so that an import rebuilds the schema they were read from.
func AppliedVersions(ctx context.Context, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, schema string) ([]int64, error) {
	if p := strings.TrimPrefix(schema, DeletedPrefix); !ValidSchema(p) || p == CentralSchema {
		return nil, fmt.Errorf("provisioning: invalid project schema %q", schema)
	}
	rows, err := db.Query(ctx, `SELECT DISTINCT version_id FROM `+pgx.Identifier{schema, "goose_db_version"}.Sanitize()+
		` WHERE version_id > 0 ORDER BY 1`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// ProvisionProjectAt creates a new project schema with exactly the tenant
// migrations numbered in versions (each must be embedded) and records
// that level in the placement row: the schema an import restores rows of
// an older level into, before MigrateProject brings it up to date with
// the migrations' own data changes.
func ProvisionProjectAt(ctx context.Context, central, shard *pgxpool.Pool, schema string, versions []int64) error {
	s, err := tenantSet()
	if err != nil {
		return err
	}
	sub, err := s.subset(versions)
	if err != nil {
		return err
	}
	return sub.provision(ctx, central, shard, schema)
}

// subset is the set of the files numbered in versions.
func (s *migrationSet) subset(versions []int64) (*migrationSet, error) {
	want := make(map[int64]bool, len(versions))
	for _, v := range versions {
		want[v] = true
	}
	sub := &migrationSet{fsys: versionFS{s.fsys, want}}
	for _, m := range s.files {
		if want[m.version] {
			sub.files = append(sub.files, m)
		}
	}
	if len(sub.files) != len(want) {
		var unknown []string
		for v := range want {
			if !slices.ContainsFunc(sub.files, func(m migration) bool { return m.version == v }) {
				unknown = append(unknown, strconv.FormatInt(v, 10))
			}
		}
		slices.Sort(unknown)
		return nil, fmt.Errorf("provisioning: unknown tenant migration versions %s (a newer release wrote them)", strings.Join(unknown, ", "))
	}
	sub.fresh = freshOf(sub.files)
	return sub, nil
}

// versionFS shows goose only the migration files of the versions in want.
type versionFS struct {
	fs.FS
	want map[int64]bool
}

func (v versionFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(v.FS, name)
	if err != nil || name != "." {
		return entries, err
	}
	return slices.DeleteFunc(entries, func(e fs.DirEntry) bool {
		num, _, _ := strings.Cut(e.Name(), "_")
		n, err := strconv.ParseInt(num, 10, 64)
		return err != nil || !v.want[n]
	}), nil
}
