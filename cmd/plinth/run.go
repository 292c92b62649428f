package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/config"
)

const usage = `usage: plinth <command> [flags]

commands:
  serve [--no-migrate] [--no-workers]   migrate, then serve the API, central routes and workers
  worker                                run only job workers and the scheduler
  migrate                               migrate central, river and every project schema
  tenant create --name N --domain D --owner-email E --owner-password P
  user add --tenant ID --email E --password P [--name N]
  project create --tenant ID --name N [--plan free] [--default-language en] [--target-languages fr,de] [--timezone UTC] [--industry X]
  project plan --project prj_… --plan P
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
	case "serve", "worker":
		fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
		fs.SetOutput(io.Discard) // the error is returned and printed by main
		noMigrate := fs.Bool("no-migrate", false, "skip migrations")
		noWorkers := fs.Bool("no-workers", false, "serve the API only")
		if err := fs.Parse(rest); err != nil {
			return err
		}
		return central.Serve(ctx, cfg, central.ServeOptions{Migrate: !*noMigrate, Workers: cmd == "worker" || !*noWorkers,
			HTTP: cmd == "serve"}, logger, stdout)
	case "migrate":
		db, err := central.OpenDatabase(ctx, cfg, logger)
		if err != nil {
			return err
		}
		defer db.Close(logger)
		return central.MigrateAll(ctx, cfg, db.Pool, logger)
	case "tenant create", "user add", "project create", "project plan", "key create", "credits topup":
		db, err := central.OpenDatabase(ctx, cfg, logger)
		if err != nil {
			return err
		}
		defer db.Close(logger)
		c, err := central.Open(ctx, db.Pool, cfg.Secret, cfg.KeyCacheTTL, logger)
		if err != nil {
			return err
		}
		out, err := admin(ctx, c, cmd, rest)
		if err != nil {
			return err
		}
		return json.NewEncoder(stdout).Encode(out)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
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
	case "project plan":
		pid, plan := str("project", ""), str("plan", "")
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		p, err := c.UpdateProject(ctx, *pid, central.ProjectUpdate{Plan: plan})
		if err != nil {
			return nil, fmt.Errorf("project %q: %w", *pid, err)
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
		bal, err := c.TopUp(ctx, *pid, *amount)
		if err != nil {
			return nil, err
		}
		return map[string]any{"project_id": *pid, "added": *amount, "balance": bal}, nil
	}
	return nil, fmt.Errorf("unknown command %q", cmd)
}
