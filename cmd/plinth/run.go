package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/credits"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/pgcluster"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/provisioning"
)

const usage = `usage: plinth <command> [flags]

commands:
  serve [--no-migrate] [--no-workers]   migrate, then serve the API, central routes and workers
  worker                                run only job workers and the scheduler
  migrate                               migrate central, river and every project schema
  tenant create --name N --domain D --owner-email E --owner-password P
  user add --tenant ID --email E --password P [--name N]
  project create --tenant ID --name N [--plan free] [--default-language en] [--target-languages fr,de] [--timezone UTC] [--industry X]
  key create --project prj_… [--name N] [--scopes '*'] [--test]
  credits topup --project prj_… --amount N
`

// run is the whole program; main only supplies the process's context,
// arguments, environment and streams.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cfg, err := config.Load(getenv)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cmd, rest := args[0], args[1:]
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		cmd, rest = cmd+" "+rest[0], rest[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, cfg, rest, logger, stdout, true)
	case "worker":
		return serve(ctx, cfg, append(rest, "--workers-only"), logger, stdout, true)
	case "migrate":
		return withDB(ctx, cfg, logger, func(db *database) error { return migrateAll(ctx, db.pool, logger) })
	case "tenant create", "user add", "project create", "key create", "credits topup":
		return withDB(ctx, cfg, logger, func(db *database) error {
			c, err := central.Open(ctx, db.pool, cfg.Secret, cfg.KeyCacheTTL, logger)
			if err != nil {
				return err
			}
			out, err := admin(ctx, c, cmd, rest)
			var f *httpapi.Failure
			if errors.As(err, &f) && len(f.Fields) > 0 {
				return fmt.Errorf("%w: %v", err, f.Fields)
			}
			if err != nil {
				return err
			}
			return json.NewEncoder(stdout).Encode(out)
		})
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}

// privatePort is the port the private cluster prefers.
const privatePort = 54329

type database struct {
	pool    *pgxpool.Pool
	cluster *pgcluster.Cluster
	started bool
}

// openDB connects to DATABASE_URL or starts (or reuses) the private
// cluster under ./.plinth/pg.
func openDB(ctx context.Context, cfg config.Config, logger *slog.Logger) (*database, error) {
	db := &database{}
	url := cfg.DatabaseURL
	if url == "" {
		c, err := pgcluster.New(".plinth/pg")
		if err != nil {
			return nil, err
		}
		// A fixed port lets psql find the cluster; another process on it
		// (a second checkout, say) makes this one pick a free port.
		c.Port = privatePort
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", c.Port)); err != nil {
			c.Port = 0
		} else {
			l.Close()
		}
		if db.started, err = c.Start(ctx); err != nil {
			return nil, fmt.Errorf("private PostgreSQL cluster: %w", err)
		}
		db.cluster = c
		if db.started {
			logger.Info("started private PostgreSQL cluster", "dir", c.Dir, "port", c.Port)
		}
		if err := ensureDatabase(ctx, c.URL("postgres"), "plinth"); err != nil {
			return nil, err
		}
		url = c.URL("plinth")
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("DATABASE_URL: %w", err)
	}
	if pcfg.MaxConns < 20 {
		pcfg.MaxConns = int32(max(20, 4*runtime.NumCPU()))
	}
	db.pool, err = pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, err
	}
	if err := db.pool.Ping(ctx); err != nil {
		db.close(logger)
		return nil, fmt.Errorf("database: %w", err)
	}
	return db, nil
}

func (db *database) close(logger *slog.Logger) {
	if db.pool != nil {
		db.pool.Close()
	}
	if db.cluster != nil && db.started {
		if err := db.cluster.Stop(); err != nil {
			logger.Error("stopping the private cluster", "err", err)
		} else {
			logger.Info("stopped private PostgreSQL cluster")
		}
	}
}

func withDB(ctx context.Context, cfg config.Config, logger *slog.Logger, fn func(*database) error) error {
	db, err := openDB(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.close(logger)
	if err := provisioning.MigrateCentral(ctx, db.pool); err != nil {
		return err
	}
	return fn(db)
}

func ensureDatabase(ctx context.Context, adminURL, name string) error {
	pool, err := pgxpool.New(ctx, adminURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return err
	}
	if !exists {
		_, err = pool.Exec(ctx, `CREATE DATABASE plinth`)
	}
	return err
}

// migrateAll migrates central, River, then every project schema.
func migrateAll(ctx context.Context, pool *pgxpool.Pool, logger *slog.Logger) error {
	start := time.Now()
	if err := provisioning.MigrateCentral(ctx, pool); err != nil {
		return err
	}
	if err := queue.Migrate(ctx, pool); err != nil {
		return err
	}
	n, err := provisioning.MigrateAll(ctx, pool, func(shard string) (*pgxpool.Pool, error) {
		if shard != "default" {
			return nil, fmt.Errorf("unknown shard %q", shard)
		}
		return pool, nil
	}, 8)
	logger.Info("migrated", "project_schemas", n, "took", time.Since(start).Round(time.Millisecond))
	return err
}

func serve(ctx context.Context, cfg config.Config, args []string, logger *slog.Logger, stdout io.Writer, _ bool) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error is returned and printed by main
	noMigrate := fs.Bool("no-migrate", false, "skip migrations")
	noWorkers := fs.Bool("no-workers", false, "serve the API only")
	workersOnly := fs.Bool("workers-only", false, "run only workers")
	if err := fs.Parse(args); err != nil {
		return err
	}
	db, err := openDB(ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.close(logger)
	if !*noMigrate {
		if err := migrateAll(ctx, db.pool, logger); err != nil {
			return err
		}
	}
	srv, err := central.NewServer(ctx, cfg, db.pool, logger, central.Options{Workers: !*noWorkers})
	if err != nil {
		return err
	}
	if db.cluster != nil {
		if err := demo(ctx, srv.Central, cfg, stdout); err != nil {
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
	if *workersOnly {
		logger.Info("plinth worker running")
		<-ctx.Done()
		return nil
	}
	hs := &http.Server{
		Addr:              cfg.Addr,
		Handler:           srv.Handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	logger.Info("plinth serving", "addr", ln.Addr().String(), "config", cfg.String())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	return hs.Shutdown(sctx)
}

// demoKeyFile holds the demo key, beside the private cluster.
const demoKeyFile = ".plinth/demo_key"

// demo creates, on the private cluster's first start, a demo tenant,
// project and key, and prints the key with a curl line.
func demo(ctx context.Context, c *central.Central, cfg config.Config, stdout io.Writer) error {
	var n int
	if err := c.Pool().QueryRow(ctx, `SELECT count(*) FROM central.tenants`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		var pid string
		if err := c.Pool().QueryRow(ctx, `SELECT id FROM central.projects ORDER BY seq LIMIT 1`).Scan(&pid); err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		fmt.Fprintf(stdout, "\nReusing the private cluster in .plinth/pg; the demo key was printed on its first start")
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
	p, err := c.CreateProject(ctx, central.ProjectParams{TenantID: t.ID, Name: "Demo site", Plan: "build", TargetLanguages: []string{"fr", "de"}})
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
		p.ID, demoKeyFile, k.Secret, cfg.PublicURL, k.Secret)
	fmt.Fprintf(stdout, "Dashboard login: demo@plinth.dev / plinth-demo\n\n")
	return nil
}

// admin runs one CLI subcommand that prints a resource.
func admin(ctx context.Context, c *central.Central, cmd string, args []string) (any, error) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the error is returned and printed by main
	str := func(name, def string) *string { return fs.String(name, def, "") }
	switch cmd {
	case "tenant create":
		name, domain, email, pw := str("name", ""), str("domain", ""), str("owner-email", ""), str("owner-password", "")
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		t, u, err := c.CreateTenant(ctx, *name, *domain, *email, *pw)
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": t.ID, "name": t.Name, "domain": t.Domain, "owner": u}, nil
	case "user add":
		tid, email, pw, name := fs.Int64("tenant", 0, ""), str("email", ""), str("password", ""), str("name", "")
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return c.AddUser(ctx, *tid, *name, *email, *pw)
	case "project create":
		tid := fs.Int64("tenant", 0, "")
		name, plan, lang, targets, tz, industry := str("name", ""), str("plan", "free"), str("default-language", "en"), str("target-languages", ""), str("timezone", "UTC"), str("industry", "")
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		var tl []string
		for _, l := range strings.Split(*targets, ",") {
			if l = strings.TrimSpace(l); l != "" {
				tl = append(tl, l)
			}
		}
		p, err := c.CreateProject(ctx, central.ProjectParams{TenantID: *tid, Name: *name, Plan: *plan, DefaultLanguage: *lang, TargetLanguages: tl, Timezone: *tz, Industry: *industry})
		if err != nil {
			return nil, err
		}
		return central.ToProjectJSON(p), nil
	case "key create":
		pid, name, scopes := str("project", ""), str("name", "cli"), str("scopes", "*")
		test := fs.Bool("test", false, "")
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if _, err := c.Project(ctx, *pid); err != nil {
			return nil, fmt.Errorf("project %q: %w", *pid, err)
		}
		var sc []string
		for _, s := range strings.Split(*scopes, ",") {
			if s = strings.TrimSpace(s); s != "" {
				sc = append(sc, s)
			}
		}
		return c.MintKey(ctx, *pid, *name, sc, nil, *test)
	case "credits topup":
		pid, amount := str("project", ""), fs.Int64("amount", 0, "")
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		s, err := c.ScopeFor(ctx, *pid)
		if err != nil {
			return nil, fmt.Errorf("project %q: %w", *pid, err)
		}
		var bal int64
		err = s.Tx(ctx, func(tx pgx.Tx) error {
			if err := credits.TopUp(ctx, tx, s, *amount); err != nil {
				return err
			}
			bal, err = credits.Balance(ctx, tx, s)
			return err
		})
		if err != nil {
			return nil, err
		}
		return map[string]any{"project_id": s.Project.ID, "added": *amount, "balance": bal / credits.Unit}, nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}
