package central_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/content"
)

// TestScopeForReadsTheProjectsShard: a project placed on a second shard
// is bound to that shard's pool by ScopeFor, whether its project comes
// from the database or from the cache (the cached branch once bound the
// central pool: a read of another database as soon as there are two
// shards). The second shard is another database of the test cluster, the
// project's schema provisioned there; the same schema also exists, empty,
// on the default shard, so a read of the wrong one finds nothing.
func TestScopeForReadsTheProjectsShard(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	p := env.NewProject("build") // on the default shard

	second := pgtest.New(t)
	require.NoError(t, provisioning.ProvisionProject(ctx, env.DB.Pool, second.Pool, p.Schema))
	// The shard's row (its URL is never opened: the test gives the pool).
	_, err := env.DB.Pool.Exec(ctx, `INSERT INTO central.shards (name, url_sealed) VALUES ('second', '\x00')`)
	require.NoError(t, err)
	_, err = env.DB.Pool.Exec(ctx, `UPDATE central.placements SET shard = 'second' WHERE project_id = $1`, p.ID)
	require.NoError(t, err)

	// A Central of its own, whose cache keeps the project for the test.
	c, err := central.Open(ctx, env.DB.Pool, env.Config.Secret, time.Hour, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	c.AddShardPool("second", second.Pool)

	read := func(sc *tenant.Scope) map[string]string {
		t.Helper()
		v, err := tenant.TxV(ctx, sc, func(tx pgx.Tx) (map[string]string, error) {
			return content.Values(ctx, tx, "en", []string{"home.title"})
		})
		require.NoError(t, err)
		return v
	}

	missed, err := c.ScopeFor(ctx, p.ID) // from the database
	require.NoError(t, err)
	require.Equal(t, "second", missed.Project.Shard)
	require.True(t, missed.Pool() == second.Pool, "a project read from the database is bound to its shard")
	require.NoError(t, missed.Tx(ctx, func(tx pgx.Tx) error {
		_, _, err := content.SetValue(ctx, tx, "home.title", "en", "On the second shard")
		return err
	}))

	cached, err := c.ScopeFor(ctx, p.ID) // from the cache
	require.NoError(t, err)
	require.True(t, cached.Pool() == second.Pool, "a project from the cache is bound to its shard, not to the central pool")
	require.Equal(t, map[string]string{"home.title": "On the second shard"}, read(cached))

	onDefault, err := tenant.NewScope(env.DB.Pool, cached.Project, nil)
	require.NoError(t, err)
	require.Empty(t, read(onDefault), "the default shard's copy of the schema holds nothing: the two reads tell the shards apart")

	_, err = c.ScopeFor(ctx, "prj_00000000000000000000000000")
	require.ErrorIs(t, err, httpapi.ErrNotFound)
}
