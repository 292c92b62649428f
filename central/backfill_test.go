package central_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestBackfillScheduledPosts: a blog post and a social post left
// scheduled by a version that published them on a timer get their jobs
// from the migration's backfill, once per database.
func TestBackfillScheduledPosts(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	projects := []*apitest.Project{env.NewProject("build"), env.NewProject("build")}
	for _, p := range projects {
		if err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO blog_posts (slug, status, language, texts, scheduled_at)
				VALUES ('old', 'scheduled', 'en', '{"en": {"title": "Old"}}', now() + interval '1 hour')`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO social_posts (title, content, platforms, status, scheduled_at)
				VALUES ('', 'Hello', '{twitter}', 'scheduled', now() + interval '1 hour')`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The database as an older version left it: never backfilled.
	if _, err := env.DB.Pool.Exec(ctx, `DELETE FROM central.settings WHERE key LIKE 'backfill:%'`); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second run finds both backfills recorded
		if err := env.Server.Backfill(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range projects {
		if n := len(env.RiverJobs(t, "blog.publish_scheduled", map[string]any{"project_id": p.ID})); n != 1 {
			t.Errorf("project %s: %d blog publish jobs, want 1", p.ID, n)
		}
		if n := len(env.RiverJobs(t, "social.publish_scheduled", map[string]any{"project_id": p.ID})); n != 1 {
			t.Errorf("project %s: %d social publish jobs, want 1", p.ID, n)
		}
	}
	var recorded int
	if err := env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM central.settings WHERE key LIKE 'backfill:%'`).Scan(&recorded); err != nil {
		t.Fatal(err)
	}
	if recorded != 2 {
		t.Errorf("%d backfills recorded, want 2", recorded)
	}
}
