package pgtest

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/plinth-dev/plinth/tenant"
)

// RoundTrips counts the network round trips of a pool's connections to
// PostgreSQL: a round trip is a turn from sending to receiving, so a
// pipeline of many messages that waits once for its answers counts one,
// and a statement that waits for its answer before the next is sent
// counts one each. It counts on the wire, below pgx, so it sees every
// message whatever API sent it (pgconn batches included, which pgx's
// tracers do not see).
type RoundTrips struct{ n, sent atomic.Int64 }

// Count is the number of round trips so far.
func (r *RoundTrips) Count() int64 { return r.n.Load() }

// Sent is the number of bytes sent to PostgreSQL so far.
func (r *RoundTrips) Sent() int64 { return r.sent.Load() }

// CountingPool returns a pool of one connection to db that counts its
// round trips. The connection is opened, and the pool's liveness ping
// turned off, before it returns, so the count covers only what the test
// sends.
func CountingPool(t testing.TB, db *DB) (*pgxpool.Pool, *RoundTrips) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	rt := Count(cfg)
	tenant.ConfigurePool(cfg)
	cfg.MaxConns, cfg.MinConns = 1, 0
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := pool.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	return pool, rt
}

// Count makes the connections of a pool built with cfg count their round
// trips, and turns off its liveness ping (a round trip the code under
// test did not ask for).
func Count(cfg *pgxpool.Config) *RoundTrips {
	rt := &RoundTrips{}
	dial := cfg.ConnConfig.DialFunc
	cfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c, rt: rt}, nil
	}
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false }
	return rt
}

// countingConn counts a round trip at the first data read after a write,
// when the data arrives: pgx may have a read under way from before the
// write (its background reader), and the answer must be counted before
// the caller that waits for it goes on.
type countingConn struct {
	net.Conn
	rt    *RoundTrips
	mu    sync.Mutex
	wrote bool
}

func (c *countingConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.wrote = true
	c.mu.Unlock()
	n, err := c.Conn.Write(b)
	c.rt.sent.Add(int64(n))
	return n, err
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		if c.wrote {
			c.wrote = false
			c.rt.n.Add(1)
		}
		c.mu.Unlock()
	}
	return n, err
}
