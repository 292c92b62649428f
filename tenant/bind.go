package tenant

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// How a read binds its project's schema.
//
// On a pool set up by ConfigurePool, a read leaves its project's
// search_path on the connection (set_config(..., false), in the read's
// pipeline, only when the connection is bound to another schema or to
// none), so the next read of the same project on that connection sends
// no binding at all: one statement fewer for PostgreSQL to run, and no
// setting to undo at the end of each read. The connection remembers what
// it is bound to (boundKey), and the pool's PrepareConn hook resets a
// bound connection before any other code acquires it: only the tenant
// reads and transactions, which set the schema they need, ever get a
// connection bound to a project. On any other pool a read binds its
// schema for itself alone (set_config(..., true), undone at its end).

// boundKey keeps, in the CustomData of a connection of a pool set up by
// ConfigurePool, the search_path a read left on it: "" for the one the
// connection started with, unknownBinding while a binding's outcome is not
// known (its read failed: PostgreSQL rolled the setting back, or did not
// get it). A connection without the key is of another pool.
const boundKey = "plinth.tenant.bound"

// unknownBinding is never a search_path a read sets.
const unknownBinding = "?"

// bindSessionSQL leaves the search_path on the connection.
const bindSessionSQL = "SELECT set_config('search_path', $1, false)"

// tenantAcquire marks the context of an acquisition by this package's
// reads and transactions, which set the search_path they need.
type tenantAcquire struct{}

func acquireCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, tenantAcquire{}, true)
}

// ConfigurePool sets up a pool config so that the project reads of its
// pool may leave their binding on a connection (see above): each new
// connection is marked as able to, and a connection bound to a project is
// reset (RESET search_path, to what it started with) before anything but
// this package's reads and transactions acquires it. The AfterConnect and
// PrepareConn hooks cfg has already run first (PrepareConn replaces the
// deprecated BeforeAcquire, which pgxpool then ignores).
func ConfigurePool(cfg *pgxpool.Config) {
	connected := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		if connected != nil {
			if err := connected(ctx, c); err != nil {
				return err
			}
		}
		c.PgConn().CustomData()[boundKey] = ""
		return nil
	}
	prepare := cfg.PrepareConn
	cfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		if prepare != nil {
			if ok, err := prepare(ctx, c); !ok || err != nil {
				return ok, err
			}
		}
		if ctx.Value(tenantAcquire{}) != nil {
			return true, nil
		}
		data := c.PgConn().CustomData()
		if bound, _ := data[boundKey].(string); bound != "" {
			if _, err := c.Exec(ctx, "RESET search_path"); err != nil {
				return false, nil // the pool destroys it and takes another
			}
			data[boundKey] = ""
		}
		return true, nil
	}
}

// binding is what a read sends to bind conn to path: nothing (sql "")
// when a read left conn bound to path; otherwise the statement, and
// whether the read leaves it on the connection (then conn's binding is
// unknown until the read succeeds, when bound records it).
func binding(conn *pgx.Conn, path string) (sql string, session bool) {
	data := conn.PgConn().CustomData()
	bound, ok := data[boundKey].(string)
	switch {
	case !ok:
		return bindSQL, false
	case bound == path:
		return "", false
	}
	data[boundKey] = unknownBinding
	return bindSessionSQL, true
}

// bound records that a read leaving path on conn succeeded.
func bound(conn *pgx.Conn, path string) {
	conn.PgConn().CustomData()[boundKey] = path
}
