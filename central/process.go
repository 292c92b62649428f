package central

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/pgcluster"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

// The life of a process: its database, migrations, and serving. cmd/plinth
// reads flags and configuration and calls these.

// privatePort is the port the private cluster prefers.
const privatePort = 54329

// privateDir holds the private cluster, and demoKeyFile the demo key
// beside it.
const (
	privateDir  = ".plinth/pg"
	demoKeyFile = ".plinth/demo_key"
)

// A PostgreSQL backend caches the catalog entries (relations, columns,
// types, plans) of every schema it touches and never frees them: a
// connection that serves requests of thousands of projects, or migrates
// them, grows by some tens of kilobytes per schema until it ends. So no
// connection lives long: it is replaced after connLifetime (plus up to
// connLifetimeJitter, so the pool's connections do not all reconnect at
// once) and closed after connIdleTime unused, which also gives back the
// memory of the burst of connections a migration or a traffic peak opened.
// Reconnecting every ten minutes costs a few milliseconds per connection.
const (
	connLifetime       = 10 * time.Minute
	connLifetimeJitter = 2 * time.Minute
	connIdleTime       = time.Minute
)

// Database is the database a process runs on: DATABASE_URL, or a private
// cluster under ./.plinth/pg that it starts (or reuses).
type Database struct {
	Pool    *pgxpool.Pool
	cluster *pgcluster.Cluster // attached: stopped on Close when no other process uses it
	// shards are the private shards' clusters (serve --shards), attached
	// like cluster.
	shards []*pgcluster.Cluster
}

// OpenDatabase connects to DATABASE_URL or starts (or reuses) the private
// cluster, and migrates the central schema.
func OpenDatabase(ctx context.Context, cfg config.Config, logger *slog.Logger) (*Database, error) {
	db := &Database{}
	url := cfg.DatabaseURL
	if url == "" {
		c, err := privateCluster(privateDir, logger)
		if err != nil {
			return nil, err
		}
		started, err := c.Attach(ctx)
		if err != nil {
			return nil, fmt.Errorf("private PostgreSQL cluster: %w", err)
		}
		db.cluster = c
		if started {
			logger.Info("started private PostgreSQL cluster", "dir", c.Dir, "port", c.Port)
		} else {
			logger.Info("using the private PostgreSQL cluster another process started; the last process using it stops it", "dir", c.Dir, "port", c.Port)
		}
		if err := ensureDatabase(ctx, c.URL("postgres"), "plinth"); err != nil {
			db.Close(logger)
			return nil, err
		}
		url = c.URL("plinth")
	}
	pcfg, err := PoolConfig(url)
	if err != nil {
		db.Close(logger)
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if db.Pool, err = pgxpool.NewWithConfig(ctx, pcfg); err != nil {
		db.Close(logger)
		return nil, err
	}
	if err := db.Pool.Ping(ctx); err != nil {
		db.Close(logger)
		return nil, fmt.Errorf("database: %w", err)
	}
	if err := provisioning.MigrateCentral(ctx, db.Pool); err != nil {
		db.Close(logger)
		return nil, err
	}
	return db, nil
}

// privateCluster is the cluster OpenDatabase runs in dir when no
// DATABASE_URL is set: durable, since it holds the operator's data.
//
// As root, the cluster runs as the postgres user, which must be able to
// reach dir. When a directory above it is closed to that user (a checkout
// under /root, mode 0700), the cluster lives under the postgres user's
// home instead and dir becomes a symbolic link to it: opening another
// user's directories to everyone is not this program's decision.
func privateCluster(dir string, logger *slog.Logger) (*pgcluster.Cluster, error) {
	if target, err := os.Readlink(dir); err == nil {
		dir = target // relocated on an earlier start
	}
	c, err := pgcluster.New(dir)
	if errors.Is(err, pgcluster.ErrUnreachable) {
		cwd, _ := os.Getwd()
		target, herr := pgcluster.PostgresHome(filepath.Base(cwd))
		if herr != nil {
			return nil, fmt.Errorf("%w; and no directory under the postgres user's home: %v (set DATABASE_URL, or run plinth as another user)", err, herr)
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o711); err != nil {
			return nil, err
		}
		if err := os.Symlink(target, dir); err != nil {
			return nil, err
		}
		logger.Warn("the private cluster lives under the postgres user's home, linked from "+dir+" (removing .plinth leaves it there)",
			"reason", err.Error(), "dir", target)
		c, err = pgcluster.New(target)
	}
	if err != nil {
		return nil, err
	}
	c.Durable = true
	// A fixed port lets psql find the cluster; another process on it
	// (a second checkout, say) makes this one pick a free port.
	c.Port = privatePort
	if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", c.Port)); err != nil {
		c.Port = 0
	} else {
		l.Close()
	}
	return c, nil
}

// privateShardDir holds private shard n's cluster (serve --shards),
// beside the private cluster.
func privateShardDir(n int) string { return fmt.Sprintf(".plinth/pg-shard%d", n) }

// privateShardName is private shard n's name in central.shards.
func privateShardName(n int) string { return fmt.Sprintf("shard%d", n) }

// startPrivateShards starts (or reuses) n private clusters beside the
// private one, each durable and attached like it, and returns the URL of
// each one's plinth database.
func (db *Database) startPrivateShards(ctx context.Context, n int, logger *slog.Logger) ([]string, error) {
	if n == 0 {
		return nil, nil
	}
	if db.cluster == nil {
		return nil, errors.New("--shards (PLINTH_SHARDS) needs the private cluster (no DATABASE_URL)")
	}
	var urls []string
	for i := 1; i <= n; i++ {
		c, err := privateCluster(privateShardDir(i), logger)
		if err != nil {
			return nil, fmt.Errorf("private shard %d: %w", i, err)
		}
		// A port of its own beside the central cluster's, when free: a
		// shard's URL is recorded (sealed) in central.shards, and
		// ensurePrivateShard updates it when the port had to change.
		c.Port = privatePort + i
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", c.Port)); err != nil {
			c.Port = 0
		} else {
			l.Close()
		}
		started, err := c.Attach(ctx)
		if err != nil {
			return nil, fmt.Errorf("private shard %d: %w", i, err)
		}
		db.shards = append(db.shards, c)
		if started {
			logger.Info("started private shard cluster", "shard", privateShardName(i), "dir", c.Dir, "port", c.Port)
		}
		if err := ensureDatabase(ctx, c.URL("postgres"), "plinth"); err != nil {
			return nil, err
		}
		urls = append(urls, c.URL("plinth"))
	}
	return urls, nil
}

// ensurePrivateShard adds the private shard name at url unless it is
// there; when it is, with another URL (its cluster took another port),
// the recorded URL follows.
func (c *Central) ensurePrivateShard(ctx context.Context, name, url string, logger *slog.Logger) error {
	sealed, err := shardURL(ctx, c.pool, name)
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err := c.AddShard(ctx, ShardParams{Name: name, URL: url}); err != nil {
			return fmt.Errorf("add private shard %s: %w", name, err)
		}
		logger.Info("added private shard", "shard", name)
		return nil
	}
	if err != nil {
		return err
	}
	if old, err := c.shards.sealer.Open(sealed, []byte(name)); err == nil && string(old) == url {
		return nil
	}
	err = setShardURL(ctx, c.pool, name, c.shards.sealer.Seal([]byte(url), []byte(name)))
	if err == nil {
		logger.Info("private shard moved to another port; its URL is updated", "shard", name)
	}
	return err
}

// superviseEvery is how often Serve checks that the private clusters it
// uses still run.
const superviseEvery = time.Second

// supervise restarts, within superviseEvery, a private cluster this
// process uses (the central one and serve --shards's) whose server
// stopped: killed, crashed, or stopped by hand. Requests for it answer 503
// meanwhile, and the pools reconnect once it is back, so the server serves
// again without a restart of Plinth. The returned function stops it and
// waits; it runs before Close detaches the clusters.
func (db *Database) supervise(ctx context.Context, logger *slog.Logger) (stop func()) {
	var clusters []*pgcluster.Cluster
	if db.cluster != nil {
		clusters = append(clusters, db.cluster)
	}
	clusters = append(clusters, db.shards...)
	if len(clusters) == 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(superviseEvery)
		defer tick.Stop()
		failing := map[string]bool{}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			for _, c := range clusters {
				started, err := c.Revive(ctx)
				switch {
				case ctx.Err() != nil:
					return
				case err != nil:
					// Once per outage, not every second.
					if !failing[c.Dir] {
						logger.Warn("a private PostgreSQL cluster stopped and does not start again yet; retrying every second", "dir", c.Dir, "err", err)
					}
					failing[c.Dir] = true
				case started:
					failing[c.Dir] = false
					logger.Warn("restarted a private PostgreSQL cluster that had stopped", "dir", c.Dir, "port", c.Port)
				}
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// Private reports whether the database is the private cluster.
func (db *Database) Private() bool { return db.cluster != nil }

// Close closes the pool, and stops the private cluster unless another
// process uses it.
func (db *Database) Close(logger *slog.Logger) {
	if db.Pool != nil {
		db.Pool.Close()
	}
	for _, c := range db.shards {
		stopped, err := c.Detach()
		switch {
		case err != nil:
			logger.Error("stopping a private shard's cluster", "dir", c.Dir, "err", err)
		case stopped:
			logger.Info("stopped private shard cluster", "dir", c.Dir)
		}
	}
	if db.cluster != nil {
		stopped, err := db.cluster.Detach()
		switch {
		case err != nil:
			logger.Error("stopping the private cluster", "err", err)
		case stopped:
			logger.Info("stopped private PostgreSQL cluster")
		default:
			logger.Info("left the private PostgreSQL cluster running: another process uses it")
		}
	}
}

// ensureDatabase creates the database name on the cluster of adminURL
// when it does not exist.
func ensureDatabase(ctx context.Context, adminURL, name string) error {
	pool, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	exists, err := databaseExists(ctx, pool, name)
	if err != nil || exists {
		return err
	}
	return createDatabase(ctx, pool, name)
}

// MigrateAll migrates central, River, then every project schema, logging
// progress lines as it goes and a summary at the end, then runs the
// backfills the database has not had (see Server.Backfill).
func MigrateAll(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger) error {
	// A pool of its own, closed at the end: migrating and backfilling
	// touch every project schema, and a backend keeps the catalog of every
	// schema it touched while it lives, so the serving pool's connections
	// never do this work.
	pool, err := pgxpool.NewWithConfig(ctx, pool.Config())
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := migrateSchemas(ctx, cfg, pool, logger); err != nil {
		return err
	}
	srv, err := NewServer(ctx, cfg, pool, logger, Options{})
	if err != nil {
		return err
	}
	return srv.Backfill(ctx)
}

// migrateSchemas migrates the central schema, then each shard that is not
// retired, one after another: its River tables, then its project schemas,
// with progress lines and a summary per shard.
func migrateSchemas(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger) error {
	start := time.Now()
	if err := provisioning.MigrateCentral(ctx, pool); err != nil {
		return err
	}
	c, err := Open(ctx, pool, cfg.Secret, time.Minute, logger)
	if err != nil {
		return err
	}
	defer c.Close()
	shards, err := c.ListShards(ctx, false)
	if err != nil {
		return err
	}
	total := 0
	for _, s := range shards {
		if s.State == ShardRetired {
			continue
		}
		shardStart := time.Now()
		sp, err := c.ShardPool(s.Name)
		if err != nil {
			return err
		}
		if err := queue.Migrate(ctx, sp); err != nil {
			return fmt.Errorf("shard %s: %w", s.Name, err)
		}
		log := logger.With("shard", s.Name)
		n, err := provisioning.MigrateAll(ctx, pool, c.ShardPool, provisioning.Options{Logger: log, Shard: s.Name})
		total += n
		if err != nil {
			return fmt.Errorf("shard %s: %w", s.Name, err)
		}
		log.Info("migrated shard", "project_schemas", n, "took", time.Since(shardStart).Round(time.Millisecond))
	}
	// project_schemas first: the summary line scripts read (and tests).
	logger.Info("migrated", "project_schemas", total, "shards", len(shards), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// ServeOptions choose what Serve runs.
type ServeOptions struct {
	Migrate bool // migrate everything first
	Workers bool // run River workers
	// HTTP serves the API; without it the process is a worker only.
	HTTP bool
	// Shards is how many private shards to run beside the private
	// cluster (plinth serve --shards, PLINTH_SHARDS): an error with
	// DATABASE_URL.
	Shards int
	// Build is the binary's version (plinth version), which GET
	// /v1/health reports as build.
	Build string
}

// Serve runs a process until ctx ends: it takes its listeners first (a
// taken address fails at once, before anything is created or started),
// opens the database, migrates, creates the demo project on a new private
// cluster, starts the workers and serves HTTP on cfg.Addr; then it shuts
// down gracefully (HTTP first, then River's soft stop, then the cluster
// unless another process uses it).
func Serve(ctx context.Context, cfg config.Config, opts ServeOptions, logger *slog.Logger, stdout io.Writer) error {
	var ln, metricsLn net.Listener
	if opts.HTTP {
		var err error
		if ln, err = listen(cfg.Addr, "PLINTH_ADDR"); err != nil {
			return err
		}
		defer ln.Close()
	}
	if cfg.MetricsAddr != "" {
		var err error
		if metricsLn, err = listen(cfg.MetricsAddr, "PLINTH_METRICS_ADDR"); err != nil {
			return err
		}
		defer metricsLn.Close()
	}
	if opts.Shards > 0 && cfg.DatabaseURL != "" {
		return fmt.Errorf("--shards (PLINTH_SHARDS) runs private shards beside the private cluster; with DATABASE_URL set, add shards with plinth shard add --name=NAME --url=URL")
	}
	db, err := OpenDatabase(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close(logger)
	shardURLs, err := db.startPrivateShards(ctx, opts.Shards, logger)
	if err != nil {
		return err
	}
	defer db.supervise(ctx, logger)()
	if opts.Migrate {
		if err := MigrateAll(ctx, cfg, db.Pool, logger); err != nil {
			return err
		}
	}
	srv, err := NewServer(ctx, cfg, db.Pool, logger, Options{Workers: opts.Workers, Build: opts.Build})
	if err != nil {
		return err
	}
	for i, url := range shardURLs {
		if err := srv.Central.ensurePrivateShard(ctx, privateShardName(i+1), url, logger); err != nil {
			srv.Central.Close()
			return err
		}
	}
	if db.Private() {
		if err := srv.Central.demo(ctx, cfg.PublicURL, stdout); err != nil {
			return err
		}
	}
	if err := srv.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		defer cancel()
		if err := srv.Stop(sctx); err != nil {
			logger.Error("stopping workers", "err", err)
		}
	}()
	errc := make(chan error, 2)
	var servers []*http.Server
	serve := func(l net.Listener, h http.Handler) {
		hs := &http.Server{
			Handler:           h,
			ReadHeaderTimeout: 10 * time.Second,
			ReadTimeout:       60 * time.Second,
			IdleTimeout:       120 * time.Second,
			ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		}
		servers = append(servers, hs)
		go func() {
			if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
	}
	if metricsLn != nil {
		serve(metricsLn, srv.OpsHandler())
		logger.Info("metrics serving", "addr", metricsLn.Addr().String())
	}
	if ln != nil {
		serve(ln, srv.Handler)
		logger.Info("plinth serving", "addr", ln.Addr().String(), "config", cfg.String())
	} else {
		logger.Info("plinth worker running", "config", cfg.String())
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	for _, hs := range servers {
		if err := hs.Shutdown(sctx); err != nil {
			return err
		}
	}
	return nil
}

// listen takes addr, naming the variable that sets it when it is taken.
func listen(addr, variable string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cannot listen on %s (%s): %w; is another plinth serve running there? Stop it or set %s to a free address",
			addr, variable, err, variable)
	}
	return ln, nil
}

// demo creates, on the private cluster's first start, a demo tenant,
// project and key, and prints the key with a curl line.
func (c *Central) demo(ctx context.Context, publicURL string, stdout io.Writer) error {
	n, err := countTenants(ctx, c.pool)
	if err != nil {
		return err
	}
	if n > 0 {
		pid, err := firstProjectID(ctx, c.pool)
		if err != nil && !errors.Is(err, httpapi.ErrNotFound) {
			return err
		}
		fmt.Fprintf(stdout, "\nReusing the private cluster in %s; the demo key was printed on its first start", privateDir)
		if _, err := os.Stat(demoKeyFile); err == nil {
			fmt.Fprintf(stdout, " and saved in %s", demoKeyFile)
		}
		fmt.Fprintf(stdout, ".\nMint another with: bin/plinth key create --project %s\n\n", pid)
		return nil
	}
	t, _, err := c.CreateTenant(ctx, "Demo", "demo.localhost", "demo@plinth.dev", "plinth-demo")
	if err != nil {
		return err
	}
	p, err := c.CreateProject(ctx, ProjectParams{TenantID: t.ID, Name: "Demo site", Plan: tenant.PlanBuild, TargetLanguages: []string{"fr", "de"}})
	if err != nil {
		return err
	}
	k, err := c.MintKey(ctx, p.ID, "demo", []string{"*"}, nil, false)
	if err != nil {
		return err
	}
	// Saved beside the cluster (which trusts every local connection anyway)
	// so the README's session can read it: KEY=$(cat .plinth/demo_key).
	if err := os.WriteFile(demoKeyFile, []byte(k.Secret+"\n"), 0o600); err != nil {
		return fmt.Errorf("save the demo key: %w", err)
	}
	fmt.Fprintf(stdout, "\nDemo project %s created. Its API key (shown once, saved in %s):\n\n  %s\n\n  curl -s %s/v1/projects/me -H 'Authorization: Bearer %s'\n\n",
		p.ID, demoKeyFile, k.Secret, publicURL, k.Secret)
	fmt.Fprintf(stdout, "Dashboard login: demo@plinth.dev / plinth-demo\n\n")
	return nil
}

// TopUp adds amount whole credits to a project's top-up balance and
// returns its balance after, in whole credits.
func (c *Central) TopUp(ctx context.Context, projectID string, amount int64) (int64, error) {
	s, err := c.ScopeFor(ctx, projectID)
	if err != nil {
		return 0, fmt.Errorf("project %q: %w", projectID, err)
	}
	var bal int64
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		if err := credits.TopUp(ctx, tx, s, amount); err != nil {
			return err
		}
		bal, err = credits.Balance(ctx, tx, s)
		return err
	})
	return bal / credits.Unit, err
}
