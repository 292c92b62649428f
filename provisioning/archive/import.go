package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/tenant"
)

// Spec is the new project an import creates.
type Spec struct {
	TenantID        int64
	Name            string
	Plan            string
	Industry        string
	DefaultLanguage string
	TargetLanguages []string
	Timezone        string
	// FallbackLanguages are checked as PATCH /v1/projects/me checks them.
	FallbackLanguages tenant.Fallbacks
}

// Creator is what an import needs of the control plane (*central.Central).
type Creator interface {
	Plane
	// Pool is the central database, whose placement rows record levels.
	Pool() *pgxpool.Pool
	// CreateForImport creates a project whose schema has exactly the
	// tenant migrations numbered in applied (the archive's level).
	CreateForImport(ctx context.Context, s Spec, applied []int64) (*tenant.Project, error)
	// DiscardImport removes a project whose import failed: its schema,
	// placement and row (it has no keys yet).
	DiscardImport(ctx context.Context, projectID string) error
}

// Limits bound what Import reads, against a crafted archive (a gzip that
// inflates a thousandfold, one enormous row, media that are not images of
// an upload's size): the archive's own size; the total size of its
// entries once inflated, at most Ratio times the archive's size (or
// MinExpanded when that is more) and never more than Expanded; the
// manifest's size; one media object's (an upload's limit); and one row's.
type Limits struct {
	Archive     int64
	Expanded    int64
	Ratio       int64
	MinExpanded int64
	Manifest    int64
	Media       int64
	Row         int64
}

// DefaultLimits are the limits of the API and the CLI. An archive of this
// server inflates some 5 to 20 times (NDJSON rows; the media are images,
// compressed already); 100 leaves room. A row of 8 MiB is eight times
// the largest JSON body a write takes.
var DefaultLimits = Limits{Archive: 4 << 30, Expanded: 16 << 30, Ratio: 100, MinExpanded: 16 << 20, Manifest: 8 << 20,
	Media: 10 << 20, Row: 8 << 20}

// expanded is how many inflated bytes an archive of size bytes may hold.
func (l Limits) expanded(size int64) int64 {
	n := l.Expanded
	if l.Ratio > 0 && size <= n/l.Ratio {
		n = min(n, max(size*l.Ratio, l.MinExpanded))
	}
	return n
}

// MediaInfo is what Options.Inspect finds in a media object: its type
// and dimensions; Size is its size in bytes.
type MediaInfo struct {
	ContentType   string
	Width, Height int
	Size          int64
}

// Fixup is a pillar's pass over the project an import restored, run in
// one transaction on its schema (search_path bound) once the schema is
// migrated to this release: it checks and rewrites the rows the archive
// stated (media columns, stored HTML). media holds the objects the import
// stored, by their key below the new project's prefix. An error wrapping
// ErrInvalid refuses the archive.
type Fixup func(ctx context.Context, tx pgx.Tx, p *tenant.Project, media map[string]MediaInfo) error

// Options are what Import is given besides the archive.
type Options struct {
	Limits Limits
	// Authorize, when set, may refuse what the manifest asks for (the
	// plan) before anything is created; its error is returned as is.
	Authorize func(Manifest) error
	// Inspect checks the bytes of each media object (at most
	// Limits.Media) before anything is created, as an upload's are
	// checked: an error refuses the archive. An archive with media
	// needs it.
	Inspect func(data []byte) (MediaInfo, error)
	// Fixups run after the rows are restored and migrated (Fixup).
	Fixups []Fixup
}

// Import creates a new project of tenantID from the archive r (named name,
// or as the archive's project when name is empty) and returns it with
// the archive's manifest. It spools r to a temporary file and checks the
// whole archive before it creates anything (a refusal wraps ErrInvalid):
// its structure, its limits, and each media object (o.Inspect); then
// o.Authorize sees the manifest. It then restores, in one transaction,
// every table into a schema at the archive's migration level (ids kept,
// sequences moved past the highest id), copies the media under the new
// project's prefix, migrates the schema up to this release (an older
// archive's rows go through the same migrations as a live schema's
// would), and runs o.Fixups. The source's project id, which media keys
// and URLs hold, is replaced by the new one in every row. API keys are
// not in an archive, nor are the tables of Skipped. A failure after the
// project was created removes it again.
func Import(ctx context.Context, c Creator, media storage.Store, tenantID int64, name string, r io.Reader, o Options) (*tenant.Project, Manifest, error) {
	lim := o.Limits
	spool, err := os.CreateTemp("", "plinth-import-*.tar.gz")
	if err != nil {
		return nil, Manifest{}, err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	n, err := io.Copy(spool, io.LimitReader(r, lim.Archive+1))
	if err != nil {
		return nil, Manifest{}, fmt.Errorf("read archive: %w", err)
	}
	if n > lim.Archive {
		return nil, Manifest{}, invalid("larger than %d bytes", lim.Archive)
	}
	lim.Expanded = lim.expanded(n)
	m, inspected, err := check(spool, lim, o.Inspect)
	if err != nil {
		return nil, m, err
	}
	if o.Authorize != nil {
		if err := o.Authorize(m); err != nil {
			return nil, m, err
		}
	}
	if name == "" {
		name = m.Project.Name
	}
	p, err := c.CreateForImport(ctx, Spec{TenantID: tenantID, Name: name, Plan: m.Project.Plan, Industry: m.Project.Industry,
		DefaultLanguage: m.Project.DefaultLanguage, TargetLanguages: m.Project.TargetLanguages, Timezone: m.Project.Timezone,
		FallbackLanguages: m.Project.FallbackLanguages}, m.Migrations.Applied)
	if err != nil {
		return nil, m, err
	}
	var put []string
	if err := restore(ctx, c, media, p, spool, m, inspected, o.Fixups, &put); err != nil {
		bg := context.WithoutCancel(ctx)
		for _, k := range put {
			_ = media.Delete(bg, k)
		}
		if derr := c.DiscardImport(bg, p.ID); derr != nil {
			err = errors.Join(err, fmt.Errorf("discard %s: %w", p.ID, derr))
		}
		return nil, m, err
	}
	p, err = c.Project(ctx, p.ID)
	return p, m, err
}

// entries walks the archive's entries, refusing any that is not a plain
// file at a clean relative path, and stops at lim.Expanded inflated bytes.
func entries(f *os.File, lim Limits, fn func(h *tar.Header, r io.Reader) error) error {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	gz, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return invalid("not a gzip file")
	}
	defer gz.Close()
	// The headers and padding count too: a tar of a million empty
	// entries inflates as well as one large one.
	inflated := &limited{r: gz, left: lim.Expanded}
	tr := tar.NewReader(inflated)
	for first := true; ; first = false {
		h, err := tr.Next()
		if err == io.EOF {
			if first {
				return invalid("empty archive")
			}
			return nil
		}
		if err != nil {
			if inflated.left < 0 {
				return invalid("inflates to more than %d bytes", lim.Expanded)
			}
			return invalid("not a tar archive: %v", err)
		}
		if h.Typeflag != tar.TypeReg {
			return invalid("entry %q is not a plain file", h.Name)
		}
		if !cleanName(h.Name) {
			return invalid("entry %q: an entry's path must be relative, without . or .. segments", h.Name)
		}
		if first && h.Name != ManifestName {
			return invalid("the first entry must be %s, not %q", ManifestName, h.Name)
		}
		if err := fn(h, tr); err != nil {
			if inflated.left < 0 {
				return invalid("inflates to more than %d bytes", lim.Expanded)
			}
			return err
		}
	}
}

func cleanName(name string) bool {
	if name == "" || strings.HasPrefix(name, "/") || strings.Contains(name, `\`) || path.Clean(name) != name {
		return false
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// limited is an io.LimitReader that tells it ran out (left < 0).
type limited struct {
	r    io.Reader
	left int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		l.left = -1
		return 0, errors.New("inflated size limit reached")
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// check reads the whole archive once: the manifest, then every entry
// against it (each expected file present once, row counts and sizes as
// stated, each row a JSON object of at most lim.Row bytes, each media
// object at most lim.Media bytes and accepted by inspect). It returns the
// manifest and what inspect found in each media file.
func check(f *os.File, lim Limits, inspect func([]byte) (MediaInfo, error)) (Manifest, map[string]MediaInfo, error) {
	var m Manifest
	want := map[string]int64{} // file -> rows (tables) or size (media)
	isTable := map[string]bool{}
	inspected := map[string]MediaInfo{}
	err := entries(f, lim, func(h *tar.Header, r io.Reader) error {
		if h.Name == ManifestName && len(want) == 0 && m.Format == "" {
			if h.Size > lim.Manifest {
				return invalid("%s is larger than %d bytes", ManifestName, lim.Manifest)
			}
			if err := json.NewDecoder(io.LimitReader(r, lim.Manifest)).Decode(&m); err != nil {
				return invalid("%s: %v", ManifestName, err)
			}
			return checkManifest(&m, lim, want, isTable)
		}
		expect, ok := want[h.Name]
		if !ok {
			return invalid("entry %q is not in the manifest, or appears twice", h.Name)
		}
		delete(want, h.Name)
		if !isTable[h.Name] {
			if h.Size != expect {
				return invalid("%s: %d bytes, the manifest says %d", h.Name, h.Size, expect)
			}
			if inspect == nil {
				return errors.New("archive: no media inspector for " + h.Name)
			}
			data, err := io.ReadAll(io.LimitReader(r, lim.Media+1))
			if err != nil {
				return err
			}
			if int64(len(data)) != h.Size {
				return invalid("%s: %d bytes, the manifest says %d", h.Name, len(data), h.Size)
			}
			info, err := inspect(data)
			if err != nil {
				return invalid("%s: %v", h.Name, err)
			}
			info.Size = h.Size
			inspected[h.Name] = info
			return nil
		}
		rows, err := eachRow(r, h.Name, lim.Row, func([]byte) error { return nil })
		if err != nil {
			return err
		}
		if rows != expect {
			return invalid("%s: %d rows, the manifest says %d", h.Name, rows, expect)
		}
		return nil
	})
	if err != nil {
		return m, nil, err
	}
	if len(want) > 0 {
		missing := make([]string, 0, len(want))
		for f := range want {
			missing = append(missing, f)
		}
		slices.Sort(missing)
		return m, nil, invalid("missing entries: %s", strings.Join(missing, ", "))
	}
	return m, inspected, nil
}

// checkManifest checks the manifest's format and names and fills the
// files it announces.
func checkManifest(m *Manifest, lim Limits, want map[string]int64, isTable map[string]bool) error {
	if m.Format != FormatName {
		return invalid("unknown format %q (want %s)", m.Format, FormatName)
	}
	if m.FormatVersion != FormatVersion {
		return invalid("unknown format version %d (this release reads %d)", m.FormatVersion, FormatVersion)
	}
	if len(m.Migrations.Applied) == 0 || m.Migrations.Version != slices.Max(m.Migrations.Applied) {
		return invalid("migrations: version must be the highest of applied")
	}
	latest, err := provisioning.LatestTenantVersion()
	if err != nil {
		return err
	}
	if m.Migrations.Version > latest {
		return invalid("written at migration version %d, newer than this release's %d", m.Migrations.Version, latest)
	}
	if !strings.HasPrefix(m.Project.ID, "prj_") || len(m.Project.ID) != len("prj_")+24 {
		return invalid("project.id %q is not a project id", m.Project.ID)
	}
	for _, t := range m.Tables {
		if !tableRe.MatchString(t.Name) {
			return invalid("table name %q", t.Name)
		}
		if _, skip := Skipped[t.Name]; skip {
			return invalid("table %s is never imported", t.Name)
		}
		if t.File != "tables/"+t.Name+".ndjson" || t.Rows < 0 {
			return invalid("table %s: file must be tables/%s.ndjson", t.Name, t.Name)
		}
		if _, dup := want[t.File]; dup {
			return invalid("table %s named twice", t.Name)
		}
		want[t.File], isTable[t.File] = t.Rows, true
	}
	for _, md := range m.Media {
		if !storage.ValidKey(md.Key) || md.File != "media/"+md.Key || md.Size < 0 {
			return invalid("media key %q", md.Key)
		}
		if md.Size > lim.Media {
			return invalid("media %s: %d bytes, more than the %d an image may have", md.Key, md.Size, lim.Media)
		}
		if _, dup := want[md.File]; dup {
			return invalid("media %s named twice", md.Key)
		}
		want[md.File] = md.Size
	}
	return nil
}

// eachRow calls fn with every line of r (the entry name), each checked
// to be a JSON object of at most max bytes, and counts them. A line is read up to max
// bytes and no further: one enormous row is refused, never held whole.
// The line passed to fn is valid until fn returns.
func eachRow(r io.Reader, name string, max int64, fn func(line []byte) error) (int64, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var rows int64
	var long []byte // a line longer than br's buffer, gathered
	for {
		chunk, err := br.ReadSlice('\n')
		if int64(len(long)+len(chunk)) > max+1 { // +1: the line's '\n'
			return rows, invalid("%s: row %d is larger than %d bytes", name, rows+1, max)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, chunk...)
			continue
		}
		line := chunk
		if len(long) > 0 {
			long = append(long, chunk...)
			line = long
		}
		if len(line) > 0 {
			row := bytes.TrimSuffix(line, []byte{'\n'})
			if int64(len(row)) > max {
				return rows, invalid("%s: row %d is larger than %d bytes", name, rows+1, max)
			}
			if len(row) == 0 || row[0] != '{' || !json.Valid(row) {
				return rows, invalid("%s: row %d is not a JSON object", name, rows+1)
			}
			rows++
			if err := fn(row); err != nil {
				return rows, err
			}
		}
		long = long[:0]
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return rows, err
		}
	}
}

// restore loads the checked archive into p's new schema and media, then
// migrates the schema up to date.
func restore(ctx context.Context, c Creator, media storage.Store, p *tenant.Project, f *os.File, m Manifest,
	inspected map[string]MediaInfo, fixups []Fixup, put *[]string) error {
	pool, err := c.ShardPool(p.Shard)
	if err != nil {
		return err
	}
	oldID, newID := []byte(m.Project.ID), []byte(p.ID)
	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	have, err := provisioning.Tables(ctx, tx, p.Schema)
	if err != nil {
		return err
	}
	byName := map[string]provisioning.Table{}
	for _, t := range have {
		byName[t.Name] = t
	}
	var load []provisioning.Table
	staged := map[string]string{} // table -> its staging table
	for i, t := range m.Tables {
		tt, ok := byName[t.Name]
		if !ok {
			return invalid("table %s does not exist at migration version %d", t.Name, m.Migrations.Version)
		}
		load = append(load, tt)
		staged[t.Name] = "_import_" + strconv.Itoa(i)
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE `+staged[t.Name]+` (line text NOT NULL) ON COMMIT DROP`); err != nil {
			return err
		}
	}
	// Rows are staged as text first, as they come, and inserted in the
	// order of the foreign keys at the end. Media are stored under the new
	// project's prefix, whatever the rows say of them (the fixups make
	// the rows agree).
	stored := make(map[string]MediaInfo, len(inspected))
	err = entries(f, Limits{Expanded: 1 << 62}, func(h *tar.Header, r io.Reader) error {
		switch {
		case strings.HasPrefix(h.Name, "tables/"):
			name := strings.TrimSuffix(strings.TrimPrefix(h.Name, "tables/"), ".ndjson")
			pr, pw := io.Pipe()
			done := make(chan struct{})
			go func() {
				defer close(done)
				bw := bufio.NewWriterSize(pw, 256<<10)
				_, err := eachRow(r, h.Name, 1<<62, func(row []byte) error { // checked already
					if _, err := bw.Write(bytes.ReplaceAll(row, oldID, newID)); err != nil {
						return err
					}
					return bw.WriteByte('\n')
				})
				if err == nil {
					err = bw.Flush()
				}
				pw.CloseWithError(err)
			}()
			_, err := tx.Conn().PgConn().CopyFrom(ctx, pr, `COPY `+staged[name]+` FROM STDIN WITH `+copyOptions)
			pr.CloseWithError(err) // ends the writer if COPY stopped early
			<-done
			if err != nil {
				return fmt.Errorf("stage %s: %w", name, err)
			}
			return nil
		case strings.HasPrefix(h.Name, "media/"):
			key := p.ID + "/" + strings.TrimPrefix(h.Name, "media/")
			*put = append(*put, key)
			if _, err := media.Put(ctx, key, r); err != nil {
				return fmt.Errorf("store media %s: %w", key, err)
			}
			stored[key] = inspected[h.Name]
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := fill(ctx, tx, p.Schema, load, staged); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if err := provisioning.MigrateProject(ctx, c.Pool(), pool, p.Schema); err != nil {
		return err
	}
	if len(fixups) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, provisioning.SearchPath(p.Schema)); err != nil {
			return err
		}
		for _, fix := range fixups {
			if err := fix(ctx, tx, p, stored); err != nil {
				return err
			}
		}
		return nil
	})
}

// fill empties the tables (a migration may have seeded a row, such as
// the brand's), inserts the staged rows in foreign-key order with their
// ids, and moves every sequence of the tables past the highest id.
func fill(ctx context.Context, tx pgx.Tx, schema string, load []provisioning.Table, staged map[string]string) error {
	if len(load) == 0 {
		return nil
	}
	names := make([]string, len(load))
	for i, t := range load {
		names[i] = pgx.Identifier{schema, t.Name}.Sanitize()
	}
	if _, err := tx.Exec(ctx, `TRUNCATE `+strings.Join(names, ", ")); err != nil {
		return err
	}
	ordered, err := provisioning.LoadOrder(ctx, tx, load)
	if err != nil {
		return err
	}
	for _, t := range ordered {
		ident := pgx.Identifier{schema, t.Name}.Sanitize()
		// OVERRIDING SYSTEM VALUE keeps the ids of GENERATED ALWAYS
		// identity columns.
		if _, err := tx.Exec(ctx, `INSERT INTO `+ident+` OVERRIDING SYSTEM VALUE SELECT r.* FROM `+staged[t.Name]+
			` s, json_populate_record(NULL::`+ident+`, s.line::json) r`); err != nil {
			// A value the column cannot take (class 22) or a row a
			// constraint refuses (23) is the archive's fault.
			if pgErr, ok := errors.AsType[*pgconn.PgError](err); ok && (strings.HasPrefix(pgErr.Code, "22") || strings.HasPrefix(pgErr.Code, "23")) {
				return invalid("rows of %s: %s", t.Name, pgErr.Message)
			}
			return fmt.Errorf("rows of %s: %w", t.Name, err)
		}
	}
	oids := make([]uint32, len(load))
	for i, t := range load {
		oids[i] = t.OID
	}
	rows, err := tx.Query(ctx, `SELECT d.objid, c.relname, a.attname FROM pg_catalog.pg_depend d
		JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'
		JOIN pg_catalog.pg_class c ON c.oid = d.refobjid
		JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
		WHERE d.refclassid = 'pg_catalog.pg_class'::regclass AND d.refobjid = ANY($1::oid[]) AND d.classid = 'pg_catalog.pg_class'::regclass
		  AND d.deptype IN ('a', 'i')`, oids)
	if err != nil {
		return err
	}
	type seq struct {
		oid        uint32
		table, col string
	}
	var seqs []seq
	var sq seq
	if _, err := pgx.ForEachRow(rows, []any{&sq.oid, &sq.table, &sq.col}, func() error {
		seqs = append(seqs, sq)
		return nil
	}); err != nil {
		return err
	}
	for _, s := range seqs {
		if _, err := tx.Exec(ctx, `SELECT setval($1::oid::regclass, m) FROM (SELECT max(`+pgx.Identifier{s.col}.Sanitize()+`) m FROM `+
			pgx.Identifier{schema, s.table}.Sanitize()+`) x WHERE m IS NOT NULL`, s.oid); err != nil {
			return fmt.Errorf("sequence of %s.%s: %w", s.table, s.col, err)
		}
	}
	return nil
}
