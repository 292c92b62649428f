package central_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning"
)

// spare is a row of central.spare_schemas.
type spare struct {
	Name    string
	Current bool // built by the embedded migrations
}

func spareRows(t *testing.T, env *apitest.Env) []spare {
	t.Helper()
	latest, count, err := provisioning.TenantVersion()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := env.DB.Pool.Query(context.Background(), `SELECT schema_name, schema_version = $1 AND migrations_applied = $2
		FROM central.spare_schemas ORDER BY schema_name`, latest, count)
	if err != nil {
		t.Fatal(err)
	}
	spares, err := pgx.CollectRows(rows, pgx.RowToStructByPos[spare])
	if err != nil {
		t.Fatal(err)
	}
	return spares
}

// waitSpares waits until the spares are exactly want current ones and
// none other (a stale spare is dropped by the same refill that creates
// the current ones, which may count two before the drop) and returns
// their names.
func waitSpares(t *testing.T, env *apitest.Env, want int) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		spares := spareRows(t, env)
		var names []string
		for _, s := range spares {
			if s.Current {
				names = append(names, s.Name)
			}
		}
		if len(names) == want && len(spares) == want {
			return names
		}
		if time.Now().After(deadline) {
			t.Fatalf("spare schemas: %+v, want %d current ones and no other", spares, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestSpareSchemas: the server keeps PLINTH_SPARE_SCHEMAS schemas created
// ahead; a new project takes one (its placement is migrated at once and
// it serves requests), the filler replaces it, and a spare built by older
// migrations is dropped, never handed to a project.
func TestSpareSchemas(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_SPARE_SCHEMAS", "2"))
	ctx := context.Background()
	spares := waitSpares(t, env, 2)

	p := env.NewProject("build")
	if !slices.Contains(spares, p.Schema) {
		t.Fatalf("project schema %s is not one of the spares %v", p.Schema, spares)
	}
	var version int64
	var applied int
	var migrated bool
	if err := env.DB.Pool.QueryRow(ctx, `SELECT schema_version, migrations_applied, migrated_at IS NOT NULL FROM central.placements WHERE project_id = $1`,
		p.ID).Scan(&version, &applied, &migrated); err != nil {
		t.Fatal(err)
	}
	latest, count, err := provisioning.TenantVersion()
	if err != nil {
		t.Fatal(err)
	}
	if version != latest || applied != count || !migrated {
		t.Errorf("placement of a claimed spare: version %d applied %d migrated %t, want %d %d true", version, applied, migrated, latest, count)
	}
	env.Do("PUT", "/v1/content/home.title", p.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	if got := env.Do("GET", "/v1/content/home.title", p.Key, nil).Expect(t, 200).JSON(t)["value"]; got != "Hello" {
		t.Errorf("value = %v", got)
	}

	refilled := waitSpares(t, env, 2)
	if slices.Contains(refilled, p.Schema) {
		t.Fatalf("the claimed schema %s is still a spare: %v", p.Schema, refilled)
	}

	// A spare of an older migration set: never claimed, dropped on the
	// next refill.
	stale := refilled[0]
	if _, err := env.DB.Pool.Exec(ctx, `UPDATE central.spare_schemas SET schema_version = 1 WHERE schema_name = $1`, stale); err != nil {
		t.Fatal(err)
	}
	q := env.NewProject("build")
	if q.Schema == stale {
		t.Fatalf("a stale spare %s was claimed", stale)
	}
	waitSpares(t, env, 2) // the stale one's row gone, two current ones made
	var exists bool
	if err := env.DB.Pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, stale).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("stale spare schema %s was not dropped", stale)
	}
	// Two projects that each got a schema of their own.
	if p.Schema == q.Schema {
		t.Errorf("two projects share schema %s", p.Schema)
	}
}

// TestSpareClaimSkipsLocked: a creation claims a spare no other creation
// is claiming. With the first spare's row locked, as a claim in progress
// holds it, for longer than the creation is given (20 s, ample on a
// loaded machine), a new project is created with the other spare, at
// once, instead of waiting for that claim.
func TestSpareClaimSkipsLocked(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_SPARE_SCHEMAS", "2"))
	ctx := context.Background()
	spares := waitSpares(t, env, 2) // in the order claims take them
	claim, err := env.DB.Pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer claim.Rollback(ctx) // held until the creation has returned
	if _, err := claim.Exec(ctx, `SELECT 1 FROM central.spare_schemas WHERE schema_name = $1 FOR UPDATE`, spares[0]); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	p, err := env.Server.Central.CreateProject(cctx, central.ProjectParams{TenantID: env.TenantID(), Name: "Beside a claim", Plan: "build"})
	if err != nil {
		t.Fatalf("creating a project while another claim holds a spare: %v (it waited for that claim)", err)
	}
	if p.Schema != spares[1] {
		t.Fatalf("project schema %s, want the spare nobody was claiming, %s (spares %v)", p.Schema, spares[1], spares)
	}
}
