package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/logging"
)

// version is the release this binary is, when the build sets it:
// go build -ldflags "-X main.version=v1.2.3" (make build sets git
// describe's). Unset, it comes from the module's build information (a
// tagged module version, or the commit).
var version string

// commands is the declaration of every command and flag: kong parses the
// arguments with it and prints each command's --help from it.
type commands struct {
	Serve   serveCmd   `cmd:"" help:"Migrate, then serve the API (/v1), the dashboard API (/central/api), /livez, /readyz and /metrics (PLINTH_METRICS_ADDR, or PLINTH_METRICS_TOKEN), and run the job workers."`
	Worker  workerCmd  `cmd:"" help:"Run only the job workers and schedulers (no listener); run as many as the jobs need."`
	Migrate migrateCmd `cmd:"" help:"Migrate central, River and every project schema, then exit (run it before starting instances of a new release)."`
	Tenant  struct {
		Create tenantCreateCmd `cmd:"" help:"Create a workspace and its owner; prints {id, name, domain, owner}."`
		List   tenantListCmd   `cmd:"" help:"List the workspaces, oldest first; prints a page {data, has_more, next_cursor}."`
		Get    tenantGetCmd    `cmd:"" help:"Print a workspace with its numbers of projects and users."`
	} `cmd:"" help:"Workspaces."`
	User struct {
		Add           userAddCmd           `cmd:"" help:"Add a user to a workspace; prints the user."`
		List          userListCmd          `cmd:"" help:"List a workspace's users; prints a page {data, has_more, next_cursor}."`
		Remove        userRemoveCmd        `cmd:"" help:"Remove a user from a workspace (not its last one)."`
		ResetPassword userResetPasswordCmd `cmd:"" name:"reset-password" help:"Set a user's password, or a generated one; prints {user_id, password}."`
	} `cmd:"" help:"Dashboard users."`
	Project struct {
		Create  projectCreateCmd  `cmd:"" help:"Create a project and its schema; prints the project."`
		Plan    projectPlanCmd    `cmd:"" help:"Change a project's billing plan (no API key can); prints the project."`
		List    projectListCmd    `cmd:"" help:"List every project, filtered by workspace, plan or status; prints a page {data, has_more, next_cursor}."`
		Get     projectGetCmd     `cmd:"" help:"Print a project as the admin API shows it (status, tenant, shard, limits)."`
		Set     projectSetCmd     `cmd:"" help:"Change a project's name, plan or enterprise limits; prints the project."`
		Suspend projectSuspendCmd `cmd:"" help:"Suspend a project: keys 403, public surface 404, jobs and webhooks wait; prints the project."`
		Resume  projectResumeCmd  `cmd:"" help:"Resume a suspended project and wake its jobs; prints the project."`
		Delete  projectDeleteCmd  `cmd:"" help:"Delete a project: keys revoked at once, data dropped after PLINTH_DELETE_GRACE (or --now); prints the project."`
		Export  projectExportCmd  `cmd:"" help:"Write a project's archive (.tar.gz: rows and media); prints {project_id, file, size_bytes, row_counts}."`
		Import  projectImportCmd  `cmd:"" help:"Create a new project from an archive; prints the project."`
		Move    projectMoveCmd    `cmd:"" help:"Move a project to another shard online (logical replication, then a short write fence); prints the move."`
	} `cmd:"" help:"Projects."`
	Shard struct {
		Add    shardAddCmd    `cmd:"" help:"Add a PostgreSQL server as a shard: checks it (PostgreSQL 15+, wal_level=logical, the role's rights) and migrates River there; prints the shard."`
		List   shardListCmd   `cmd:"" help:"List the shards: state, projects, capacity, wal_level, version, reachable (a table, or --json)."`
		Drain  shardDrainCmd  `cmd:"" help:"Make a shard take no new projects and move each of its projects to another shard, a few at a time; prints the shard with its drain."`
		Retire shardRetireCmd `cmd:"" help:"Retire a shard that holds no project (never default); prints the shard."`
	} `cmd:"" help:"Shards: the PostgreSQL servers that hold project schemas."`
	AdminToken struct {
		Create adminTokenCreateCmd `cmd:"" help:"Mint an admin token for /admin/api; prints {id, name, scopes, secret, created_at} (the secret shown once)."`
		List   adminTokenListCmd   `cmd:"" help:"List the active admin tokens, without secrets."`
		Revoke adminTokenRevokeCmd `cmd:"" help:"Revoke an admin token at once."`
	} `cmd:"" name:"admin-token" help:"Admin tokens of the admin API."`
	Key struct {
		Create keyCreateCmd `cmd:"" help:"Mint an API key; prints it with its secret (shown once)."`
	} `cmd:"" help:"API keys."`
	Credits struct {
		Topup creditsTopupCmd `cmd:"" help:"Add top-up credits to a project; prints {project_id, added, balance}."`
	} `cmd:"" help:"Credits."`
	MCP     mcpCmd     `cmd:"" name:"mcp" help:"Serve MCP on stdin/stdout for a local agent, forwarding to the server at PLINTH_URL with PLINTH_API_KEY (docs/mcp.md)."`
	Listen  listenCmd  `cmd:"" help:"Forward the project's webhook events, signed as real deliveries, from the server at PLINTH_URL (PLINTH_API_KEY) to a receiver on this machine; Ctrl-C deletes the listener."`
	Version versionCmd `cmd:"" help:"Print the version of this binary (as plinth --version does), the build GET /v1/health reports."`
	Help    helpCmd    `cmd:"" help:"List the commands and the environment variables."`
}

// env is what every command runs with.
type env struct {
	ctx            context.Context
	getenv         func(string) string
	stdin          io.Reader // read by plinth mcp only
	stdout, stderr io.Writer
}

// config reads the configuration and builds the logger: only commands
// that touch something do, so --help, help and version work whatever the
// environment holds.
func (e *env) config() (config.Config, *slog.Logger, error) {
	return e.configTo(e.stderr)
}

// configTo is config with the log written to logs.
func (e *env) configTo(logs io.Writer) (config.Config, *slog.Logger, error) {
	cfg, err := config.Load(e.getenv)
	if err != nil {
		return cfg, nil, err
	}
	if err := central.CheckConfig(cfg); err != nil {
		return cfg, nil, err
	}
	logger, err := logging.New(logs, logging.Options{Format: cfg.LogFormat, Level: cfg.LogLevel})
	return cfg, logger, err
}

// serving is config for a serving process (serve, worker): its log lines
// are written in batches (logging.Buffered: an access-log line per
// request), and done writes what waits when it ends.
func (e *env) serving() (cfg config.Config, logger *slog.Logger, done func(), err error) {
	logs := logging.Buffered(e.stderr)
	done = func() {}
	if b, ok := logs.(*logging.Buffer); ok {
		done = func() { _ = b.Flush() }
	}
	cfg, logger, err = e.configTo(logs)
	return cfg, logger, done, err
}

type serveCmd struct {
	NoMigrate bool `help:"Skip the migrations (when plinth migrate ran before)."`
	NoWorkers bool `help:"Serve the API only; run the workers elsewhere (plinth worker)."`
	Shards    *int `help:"Start N private clusters beside the private one (.plinth/pg-shard1...) and add them as shards shard1...shardN (default PLINTH_SHARDS; only without DATABASE_URL)."`
	databaseOnly
}

func (c *serveCmd) Run(e *env) error {
	cfg, logger, done, err := e.serving()
	defer done()
	if err != nil {
		return err
	}
	shards := cfg.PrivateShards
	if c.Shards != nil {
		if *c.Shards < 0 || *c.Shards > config.MaxPrivateShards {
			return fmt.Errorf("--shards: want 0 to %d, got %d", config.MaxPrivateShards, *c.Shards)
		}
		shards = *c.Shards
	}
	tuneGC(e.getenv)
	return central.Serve(e.ctx, cfg, central.ServeOptions{Migrate: !c.NoMigrate, Workers: !c.NoWorkers, HTTP: true, Shards: shards, Build: buildVersion()}, logger, e.stdout)
}

// gcPercent is the garbage collector's target in a serving process: the
// heap may grow to five times what is live before a collection (Go's
// default lets it double). A server's live heap is small (caches bounded
// by count, a request's data freed when it is answered) while it
// allocates for every request, so collecting a fifth as often is CPU
// back for requests (bench-http: about a sixth of the server's CPU per
// request of the reads) for some tens of MB. GOGC, when set, wins.
const gcPercent = 400

// tuneGC sets the collector's target of a serving process unless the
// environment sets GOGC.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

type workerCmd struct {
	NoMigrate bool `help:"Skip the migrations (when plinth migrate ran before)."`
	NoWorkers bool `hidden:"" help:"Ignored: a worker always works (accepted as serve accepts it)."`
	databaseOnly
}

func (c *workerCmd) Run(e *env) error {
	cfg, logger, done, err := e.serving()
	defer done()
	if err != nil {
		return err
	}
	tuneGC(e.getenv)
	return central.Serve(e.ctx, cfg, central.ServeOptions{Migrate: !c.NoMigrate, Workers: true, Build: buildVersion()}, logger, e.stdout)
}

type migrateCmd struct {
	databaseOnly
}

func (migrateCmd) Run(e *env) error {
	cfg, logger, err := e.config()
	if err != nil {
		return err
	}
	db, err := central.OpenDatabase(e.ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close(logger)
	return central.MigrateAll(e.ctx, cfg, db.Pool, logger)
}

// admin runs one command that prints a resource as one JSON object.
func (e *env) admin(do func(context.Context, *central.Central) (any, error)) error {
	var out any
	err := e.adminDo(func(ctx context.Context, c *central.Central) error {
		var err error
		out, err = do(ctx, c)
		return err
	})
	if err != nil {
		return err
	}
	return json.NewEncoder(e.stdout).Encode(out)
}

// adminDo runs one operator's command on the central database.
func (e *env) adminDo(do func(context.Context, *central.Central) error) error {
	cfg, logger, err := e.config()
	if err != nil {
		return err
	}
	db, err := central.OpenDatabase(e.ctx, cfg, logger)
	if err != nil {
		return err
	}
	defer db.Close(logger)
	c, err := central.Open(e.ctx, db.Pool, cfg.Secret, cfg.KeyCacheTTL, logger)
	if err != nil {
		return err
	}
	life, err := central.OpenLifecycle(cfg, db.Pool, logger) // suspend, resume, delete
	if err != nil {
		return err
	}
	c.SetLifecycle(life)
	c.SetProjectCap(cfg.MaxProjectsPerTenant) // the operator's commands are held to it too
	defer c.Close()                           // the shard pools it opened
	return do(e.ctx, c)
}

type tenantCreateCmd struct {
	Name          string `required:"" help:"Workspace name."`
	Domain        string `required:"" help:"Workspace domain (stored lower-case)."`
	OwnerEmail    string `required:"" help:"Email of the owner, who logs in to the dashboard."`
	OwnerPassword string `required:"" help:"Password of the owner (at least 8 characters)."`
	remoteFlags
}

func (c *tenantCreateCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		t, u, err := cen.CreateTenant(ctx, c.Name, c.Domain, c.OwnerEmail, c.OwnerPassword)
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": t.ID, "name": t.Name, "domain": t.Domain, "owner": u}, nil
	})
}

// Remote creates the workspace, then reads its one user, the owner
// (scopes tenants:write and users:read).
func (c *tenantCreateCmd) Remote(e *env, api *adminClient) error {
	var t central.AdminTenant
	err := api.do(e.ctx, "POST", "/tenants", central.AdminCreateTenantRequest{Name: c.Name, Domain: c.Domain, OwnerEmail: c.OwnerEmail, OwnerPassword: c.OwnerPassword}, &t)
	if err != nil {
		return err
	}
	var users httpapi.List[central.User]
	if err := api.do(e.ctx, "GET", fmt.Sprintf("/tenants/%d/users?limit=1", t.ID), nil, &users); err != nil {
		return fmt.Errorf("tenant %d was created; reading its owner: %w", t.ID, err)
	}
	if len(users.Data) == 0 {
		return fmt.Errorf("tenant %d was created without its owner", t.ID)
	}
	return e.printJSON(map[string]any{"id": t.ID, "name": t.Name, "domain": t.Domain, "owner": users.Data[0]})
}

type userAddCmd struct {
	Tenant   int64  `required:"" help:"Workspace id (tenant create prints it)."`
	Email    string `required:"" help:"The user's email; one email may belong to several workspaces."`
	Password string `required:"" help:"The user's password in this workspace (at least 8 characters)."`
	Name     string `help:"Display name."`
	remoteFlags
}

func (c *userAddCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		return cen.AddUser(ctx, c.Tenant, c.Name, c.Email, c.Password)
	})
}

func (c *userAddCmd) Remote(e *env, api *adminClient) error {
	var u central.User
	err := api.do(e.ctx, "POST", fmt.Sprintf("/tenants/%d/users", c.Tenant), central.AdminAddUserRequest{Email: c.Email, Password: c.Password, Name: c.Name}, &u)
	if err != nil {
		return err
	}
	return e.printJSON(u)
}

type projectCreateCmd struct {
	Tenant          int64  `required:"" help:"Workspace id (tenant create prints it)."`
	Name            string `required:"" help:"Project name."`
	Plan            string `default:"free" help:"Billing plan: free, hobby, build, scale or enterprise."`
	DefaultLanguage string `default:"en" help:"Language of the project's content."`
	TargetLanguages string `help:"Comma-separated languages content is translated into, e.g. fr,de."`
	Timezone        string `default:"UTC" help:"IANA time zone of the project (bookings, schedules)."`
	Industry        string `help:"Free-form industry, used by the AI prompts."`
	Shard           string `help:"Place it on this shard (an active one); unset: the active shard with the most room."`
	remoteFlags
}

func (c *projectCreateCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		p, err := cen.CreateProject(ctx, central.ProjectParams{TenantID: c.Tenant, Name: c.Name, Plan: c.Plan, DefaultLanguage: c.DefaultLanguage,
			TargetLanguages: list(c.TargetLanguages), Timezone: c.Timezone, Industry: c.Industry, Shard: c.Shard})
		if err != nil {
			return nil, err
		}
		return central.ToProjectJSON(p), nil
	})
}

// Remote prints the project as the database mode does: the admin API's
// answer without what only the operator sees.
func (c *projectCreateCmd) Remote(e *env, api *adminClient) error {
	var p central.AdminProject
	err := api.do(e.ctx, "POST", "/projects", central.AdminCreateProjectRequest{TenantID: c.Tenant, Name: c.Name, Plan: c.Plan, DefaultLanguage: c.DefaultLanguage,
		TargetLanguages: list(c.TargetLanguages), Timezone: c.Timezone, Industry: c.Industry, Shard: c.Shard}, &p)
	if err != nil {
		return err
	}
	return e.printJSON(p.ProjectJSON)
}

type projectPlanCmd struct {
	Project string `required:"" help:"Project id (prj_…)."`
	Plan    string `required:"" help:"New plan: free, hobby, build, scale or enterprise."`
	remoteFlags
}

func (c *projectPlanCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		p, err := cen.UpdateProject(ctx, c.Project, central.ProjectUpdate{Plan: &c.Plan})
		if err != nil {
			return nil, fmt.Errorf("project %q: %w", c.Project, err)
		}
		return central.ToProjectJSON(p), nil
	})
}

func (c *projectPlanCmd) Remote(e *env, api *adminClient) error {
	var p central.AdminProject
	if err := api.do(e.ctx, "PATCH", "/projects/"+url.PathEscape(c.Project), map[string]string{"plan": c.Plan}, &p); err != nil {
		return fmt.Errorf("project %q: %w", c.Project, err)
	}
	return e.printJSON(p.ProjectJSON)
}

type keyCreateCmd struct {
	Project string `required:"" help:"Project id (prj_…)."`
	Name    string `default:"cli" help:"Key name, to tell keys apart."`
	Scopes  string `default:"*" help:"Comma-separated scopes, e.g. 'content:read,blog:*'."`
	Test    bool   `help:"Mint a test key (pln_test_…), whose work is never billed."`
	databaseOnly
}

func (c *keyCreateCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		if _, err := cen.Project(ctx, c.Project); err != nil {
			return nil, fmt.Errorf("project %q: %w", c.Project, err)
		}
		return cen.MintKey(ctx, c.Project, c.Name, list(c.Scopes), nil, c.Test)
	})
}

type creditsTopupCmd struct {
	Project string `required:"" help:"Project id (prj_…)."`
	Amount  int64  `required:"" help:"Whole credits to add (at least 1)."`
	remoteFlags
}

func (c *creditsTopupCmd) Run(e *env) error {
	return e.admin(func(ctx context.Context, cen *central.Central) (any, error) {
		bal, err := cen.TopUp(ctx, c.Project, c.Amount)
		if err != nil {
			return nil, err
		}
		return map[string]any{"project_id": c.Project, "added": c.Amount, "balance": bal}, nil
	})
}

func (c *creditsTopupCmd) Remote(e *env, api *adminClient) error {
	var r struct {
		ProjectID string `json:"project_id"`
		Added     int64  `json:"added"`
		Balance   int64  `json:"balance"`
	}
	if err := api.do(e.ctx, "POST", "/projects/"+url.PathEscape(c.Project)+"/credits", central.AdminCreditsRequest{Amount: c.Amount}, &r); err != nil {
		return err
	}
	return e.printJSON(map[string]any{"project_id": r.ProjectID, "added": r.Added, "balance": r.Balance})
}

type versionCmd struct{}

func (versionCmd) Run(e *env) error {
	_, err := fmt.Fprintln(e.stdout, "plinth", buildVersion())
	return err
}

// buildVersion is version, or else the module version and commit the Go
// toolchain recorded.
func buildVersion() string {
	if version != "" {
		return version
	}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := info.Main.Version
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "-dirty"
			}
		}
	}
	if rev != "" && (v == "" || v == "(devel)") {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		return "(devel) " + rev + modified
	}
	if v == "" {
		return "(devel)"
	}
	return v
}

type helpCmd struct {
	Command []string `arg:"" optional:"" help:"A command, to show its flags."`
}

func (helpCmd) Run() error { return nil } // handled in run, before parsing

func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// exit is what kong's Exit panics with after printing a --help, so that
// run returns instead of the process exiting.
type exit struct{ code int }

// run is the whole program; main only supplies the process's context,
// arguments, environment and streams.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	var grammar commands
	width := helpWidth(getenv, stdout)
	parser, err := kong.New(&grammar, kong.Name("plinth"),
		kong.Description("Plinth: a multi-tenant REST backend for AI-built websites. Logs go to stderr; commands that print a resource print one JSON object on stdout."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exit{code}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, WrapUpperBound: width}))
	if err != nil {
		return err
	}
	if len(args) == 0 {
		usage(stderr, parser, width)
		return errors.New("no command given: see the commands above, or run plinth help")
	}
	if args[0] == "--version" {
		args = []string{"version"} // one command prints it, so both print the same
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		words := slices.DeleteFunc(slices.Clone(args[1:]), func(a string) bool { return a == "-h" || a == "--help" })
		if args[0] != "help" || len(words) == 0 {
			usage(stdout, parser, width)
			return nil
		}
		args = append(words, "--help") // plinth help key create: its flags
	}
	if name, ok := known(parser.Model.Node, args); !ok {
		usage(stderr, parser, width)
		return fmt.Errorf("unknown command %q: see the commands above", name)
	}
	defer func() {
		if p := recover(); p != nil {
			e, ok := p.(exit)
			if !ok {
				panic(p)
			}
			if e.code != 0 {
				err = fmt.Errorf("exit status %d", e.code)
			}
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil && pe.Context.Selected() != nil {
			return fmt.Errorf("%w (plinth %s --help lists its flags)", err, pe.Context.Selected().Path())
		}
		return err
	}
	// Only plinth mcp reads input, the process's own: run keeps the
	// signature every command's tests call it with.
	e := &env{ctx: ctx, getenv: getenv, stdin: os.Stdin, stdout: stdout, stderr: stderr}
	if sel := kctx.Selected(); sel != nil && sel.Target.CanAddr() {
		if remote, err := e.runRemote(sel.Path(), sel.Target.Addr().Interface()); remote {
			return err // against the admin API (--url), or refused
		}
	}
	return kctx.Run(e)
}

// known reports whether args start with a command (a leaf of the
// declaration), and otherwise the command words it did not know, as the
// error names them.
func known(app *kong.Node, args []string) (string, bool) {
	node := app
	var words []string
	for _, a := range args {
		if strings.HasPrefix(a, "-") || node.Leaf() && node != app {
			break
		}
		words = append(words, a)
		var next *kong.Node
		for _, c := range node.Children {
			if c.Name == a && !c.Hidden {
				next = c
			}
		}
		if next == nil {
			return strings.Join(words, " "), false
		}
		node = next
	}
	if node != app && !node.Leaf() && (slices.Contains(args, "--help") || slices.Contains(args, "-h")) {
		return "", true // plinth key --help: kong lists the group's commands
	}
	if node == app || !node.Leaf() {
		return strings.Join(words, " "), false
	}
	return "", true
}

// usage prints the commands with their required flags and the
// environment variables, all from their declarations, wrapped to width.
func usage(w io.Writer, parser *kong.Kong, width int) {
	fmt.Fprintln(w, "usage: plinth <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	var rows [][2]string
	for _, n := range parser.Model.Leaves(true) {
		rows = append(rows, [2]string{n.Summary(), n.Help})
	}
	columns(w, width, rows)
	fmt.Fprintln(w)
	for _, line := range wrap("Run plinth <command> --help for a command's flags and what they mean; plinth --version prints the version.", width) {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "environment (every variable is optional):")
	rows = rows[:0]
	for _, v := range config.Vars {
		def := v.Default
		if def != "" {
			def = " (default " + def + ")"
		}
		rows = append(rows, [2]string{v.Name, v.Help + def})
	}
	columns(w, width, rows)
}
