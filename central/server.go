package central

import (
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/central/dashboard"
	"github.com/plinth-dev/plinth/central/mcp"
	"github.com/plinth-dev/plinth/docs"
	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/metrics"
	"github.com/plinth-dev/plinth/internal/openapi"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/ratelimit"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/booking"
	"github.com/plinth-dev/plinth/tenant/commerce"
	"github.com/plinth-dev/plinth/tenant/content"
	"github.com/plinth-dev/plinth/tenant/forms"
	"github.com/plinth-dev/plinth/tenant/idempotency"
	"github.com/plinth-dev/plinth/tenant/jobs"
	"github.com/plinth-dev/plinth/tenant/outbox"
	projectlimit "github.com/plinth-dev/plinth/tenant/ratelimit"
	"github.com/plinth-dev/plinth/tenant/releases"
	"github.com/plinth-dev/plinth/tenant/sites"
	"github.com/plinth-dev/plinth/tenant/social"
	"github.com/plinth-dev/plinth/tenant/usage"
	"github.com/plinth-dev/plinth/tenant/webhooks"
)

// This file is the composition root: the one place that knows every
// pillar. It builds the process (the River client with every pillar's
// workers, the background loops) and the HTTP handler of /v1 and
// /central/api, whose request path reads top to bottom in NewServer.

// Options choose what a process runs.
type Options struct {
	// Workers runs River workers and periodic jobs in this process.
	Workers bool
	// Build is the binary's version, given by cmd/plinth (plinth
	// version prints it): GET /v1/health reports it as build, beside
	// the API's version.
	Build string
	// Queue tunes the River client (fetch intervals, test mode).
	Queue queue.Options
	// RateStore replaces the rate-limit store chosen from the config
	// (in-process, or Redis with REDIS_URL); RateClock its clock. Tests
	// use them to run limits on a simulated clock.
	RateStore ratelimit.Store
	RateClock func() time.Time
	// TestRoutes mounts extra routes inside the authenticated /v1 group,
	// behind rate limits and idempotency; TestPublicRoutes inside
	// /v1/public. Only tests set them.
	TestRoutes       func(chi.Router)
	TestPublicRoutes func(chi.Router)
	// RootCAs, when set, replaces the system roots for outgoing HTTPS
	// (webhook receivers); tests trust their httptest servers with it.
	RootCAs *x509.CertPool
	// AI, when set, replaces the provider chosen from the config; tests
	// wrap the offline provider with it to fail a job mid-way.
	AI ai.Provider
}

// Server is one assembled process.
type Server struct {
	Handler http.Handler
	// Router is Handler as the router, for the route-coverage test.
	Router  *chi.Mux
	Central *Central
	River   *queue.Client
	Config  config.Config
	Pool    *pgxpool.Pool
	// Jobs runs every job type; pillars register their handlers on it.
	Jobs *jobs.Runner
	// JobEvents wakes SSE streams on job events from any instance.
	JobEvents *jobs.Hub
	AI        ai.Provider
	// Store is the whole of PLINTH_STORAGE; Media its view of the
	// projects' media (storage.ProjectMedia), all the pillars and a
	// project's deletion are given: export archives, stored beside them
	// under exports/, are out of its reach.
	Store storage.Store
	Media storage.Store
	// Outbox emits webhook events inside a pillar's transaction.
	Outbox *outbox.Outbox
	// prefetch is the Outbox's read of the endpoints, put in the context
	// of every request and job (tenant.WithPrefetch).
	prefetch *tenant.Prefetch
	// Limits is the rate limiter in front of every route (tests that
	// mount routes of their own put it in front of them too).
	Limits *projectlimit.Guard

	// Metrics is the process's registry (GET /metrics).
	Metrics *metrics.Metrics

	live   *queue.Liveness
	wakers *queue.Wakers // notify the delivery queue of a shard when a snoozed delivery is due
	// riverWorkers and riverOpts build the River client of each shard
	// other than the default's (shardwork.go), which runs in shardWork.
	riverWorkers *river.Workers
	riverOpts    queue.Options
	shardMu      sync.Mutex
	shardWork    map[string]*shardWork
	backfills    []backfill
	// working is set while the River workers run (GET /readyz).
	working atomic.Bool

	logger  *slog.Logger
	started time.Time
	opts    Options
	cancel  context.CancelFunc
	done    chan struct{}
	redis   redis.UniversalClient
}

// NewServer builds the server over the central pool (also the default
// shard). Migrations must have run.
func NewServer(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger, opts Options) (*Server, error) {
	if err := CheckConfig(cfg); err != nil {
		return nil, err
	}
	c, err := Open(ctx, pool, cfg.Secret, cfg.KeyCacheTTL, logger)
	if err != nil {
		return nil, err
	}
	s := &Server{Central: c, Config: cfg, Pool: pool, logger: logger, started: time.Now(), opts: opts, Metrics: metrics.New(),
		shardWork: map[string]*shardWork{}}
	if s.AI = opts.AI; s.AI == nil {
		if s.AI, err = ai.New(cfg, logger); err != nil {
			return nil, err
		}
	}
	if s.Store, err = storage.Open(cfg.Storage, cfg.Getenv); err != nil {
		return nil, err
	}
	s.Media = storage.ProjectMedia(s.Store)

	// River: one client and one set of workers for the process. The
	// pillars are built with the client and add their workers to the set
	// before it starts (River reads the set when it works a job).
	workers := river.NewWorkers()
	qo := opts.Queue
	qo.Work, qo.Logger = opts.Workers, logger
	qo.Middleware = append(slices.Clip(qo.Middleware), s.jobMiddleware(), c.JobGateOn(ShardDefault))
	qo.Queues = maps.Clone(qo.Queues)
	if qo.Queues == nil {
		qo.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 50}}
	}
	qo.Queues[outbox.Queue] = outbox.QueueConfig // deliveries run on their own queue
	shardQueues := maps.Clone(qo.Queues)
	// Moves run on the central database's River only, a bounded number at
	// once. An idle process polls every queue, and each poll is a wake-up of
	// the process and a statement PostgreSQL runs; moves are rare, are
	// started by an operator and wake their queue by notification, so their
	// fallback poll (for a lost notification, or two moves enqueued within
	// River's FetchCooldown of each other) is ten of the others'.
	qo.Queues[MoveQueue] = river.QueueConfig{MaxWorkers: cfg.MoveConcurrency, FetchPollInterval: movePollFactor * cmp.Or(qo.FetchPoll, time.Second)}
	s.registerMetrics(slices.Sorted(maps.Keys(qo.Queues)))
	if s.River, err = queue.New(pool, workers, qo); err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	s.riverWorkers, s.riverOpts = workers, qo
	s.riverOpts.Queues = shardQueues
	// Each other shard's client adds its own gate (startShard).
	s.riverOpts.Middleware = slices.Clip(qo.Middleware[:len(qo.Middleware)-1])
	s.Outbox = outbox.NewOutbox(s.River)
	s.prefetch = s.Outbox.Prefetch()
	c.SetLifecycle(Lifecycle{Queue: s.River, Media: s.Media, Grace: cfg.DeleteGrace, MoveGrace: cfg.MoveGrace, MoveMaxPause: cfg.MoveMaxPause, MoveCopyRows: cfg.MoveCopyRows, MoveCopyRate: cfg.MoveCopyRate})
	c.SetProjectCap(cfg.MaxProjectsPerTenant)
	river.AddWorker(workers, &DropWorker{Central: c})
	river.AddWorker(workers, &MoveWorker{Central: c})
	river.AddWorker(workers, &MovedDropWorker{Central: c})
	hookSecrets := outbox.NewSecrets(c.Secret())
	c.UseArchives(s.River, s.Store, cfg.MediaURL)
	river.AddWorker(workers, NewExportWorker(c))
	river.AddWorker(workers, &idempotency.ExpireWorker{})
	s.wakers = queue.NewWakers(outbox.Queue, logger)
	river.AddWorker(workers, outbox.NewWorker(outbox.WorkerConfig{Dev: cfg.Dev, Timeout: cfg.WebhookTimeout,
		Retry: cfg.WebhookRetry, RootCAs: opts.RootCAs, Logger: logger, Attempted: s.Metrics.WebhookAttempt, Wakers: s.wakers}, hookSecrets))

	// The pillars.
	// The jobs hub also wakes webhook listeners' streams (plinth listen).
	jobsSvc := jobs.New(jobs.Deps{Pool: pool, Queue: s.River, Logger: logger, Channels: []string{outbox.ListenChannel}})
	s.Jobs, s.JobEvents = jobsSvc.Runner(), jobsSvc.Hub()
	contentSvc := content.New(content.Deps{AI: s.AI, Media: s.Media, Queue: s.River, Events: s.Outbox, Jobs: s.Jobs,
		MediaURL: cfg.MediaURL, Fetch: content.GuardedFetch(cfg.Dev, opts.RootCAs)})
	blogSvc := blog.New(blog.Deps{Queue: s.River, AI: s.AI, Media: s.Media, MediaURL: contentSvc.MediaURL,
		Events: s.Outbox, Jobs: s.Jobs})
	socialSvc := social.New(social.Deps{Config: cfg, Plane: c, Queue: s.River, AI: s.AI, Images: contentSvc,
		Events: s.Outbox, Jobs: s.Jobs, Logger: logger})
	// Releases publish items of both pillars.
	publishers := contentSvc.Publishers()
	maps.Copy(publishers, blogSvc.Publishers())
	releasesSvc := releases.New(releases.Deps{Queue: s.River, Publishers: publishers})
	// Posts scheduled before their publishing became jobs at their time
	// get their jobs once.
	s.backfills = []backfill{{"scheduled-blog-posts", blogSvc.EnqueueScheduled}, {"scheduled-social-posts", socialSvc.EnqueueScheduled}}
	pillars := []tenant.Pillar{
		usage.New(),
		jobsSvc,
		contentSvc,
		blogSvc,
		releasesSvc,
		socialSvc,
		commerce.New(commerce.Deps{Plane: c, Queue: s.River, Events: s.Outbox, Logger: logger,
			Payments: payments.New(payments.Config{SecretKey: cfg.StripeSecretKey, WebhookSecret: cfg.StripeWebhookKey, APIBase: cfg.StripeAPIBase})}),
		booking.New(booking.Deps{Events: s.Outbox}),
		sites.New(sites.Deps{AI: s.AI, Queue: s.River, Content: contentSvc, Blog: blogSvc, Jobs: s.Jobs}),
		forms.New(),
		webhooks.New(webhooks.Deps{Outbox: s.Outbox, Secrets: hookSecrets, Dev: cfg.Dev, Hub: jobsSvc.Hub()}),
	}
	for _, p := range pillars {
		p.Workers(workers)
	}

	if s.Limits, err = s.rateLimits(opts); err != nil {
		return nil, err
	}
	idem := idempotency.New(logger, s.River)

	// The request path. The root router logs and measures every request
	// and serves the operators' probes; the API router is mounted in it.
	root := httpapi.NewRouter()
	root.Use(s.observe)                                   // access log and metrics, of everything below
	root.Use(httpapi.Base(cfg.ErrorBase, logger, 11<<20)) // request id, panics, body size
	root.Use(httpapi.StrictTransport(cfg.TrustedProxies)) // HSTS over HTTPS, directly or through a trusted proxy
	s.opsRoutes(root)
	r := httpapi.NewRouter()
	// The MCP tools run the API's routes in the process, through r
	// (central/inproc); the request that carried the call was identified
	// and rate-limited once. Each route a tool runs is logged and
	// measured as a request of its own, named by the tool, by a router
	// like root (observe reads the route pattern its mux records).
	tools := httpapi.NewRouter()
	tools.Use(s.observe, httpapi.Base(cfg.ErrorBase, logger, 11<<20))
	tools.Mount("/", r)
	agent, err := mcp.New(mcp.Deps{API: tools, OpenAPI: OpenAPIJSON, Docs: docs.FS, Logger: logger})
	if err != nil {
		return nil, err
	}
	root.Get("/llms.txt", agent.ServeLLMs) // static, keyless, for agents: beside the probes, outside the API's limits
	root.Get("/docs/*", agent.ServeDoc)
	root.Mount("/", r)
	// The host's root and /central are for people: they lead to the
	// dashboard (the API is /v1, the dashboard's API /central/api).
	for _, p := range []string{"/", "/central", "/central/"} {
		root.Get(p, dashboard.Home)
	}
	r.Use(VaryPublic)       // public answers vary with the project header, errors included
	r.Use(c.PublicCORS)     // before the limiter: a 429 of the public surface is readable in a browser
	r.Use(c.Identify)       // the key, resolved once
	r.Use(noteScope)        // the key's project in the access log
	r.Use(s.Limits.Handler) // before routing: every response carries the headers
	r.Route("/v1", func(v1 chi.Router) {
		v1.Use(httpapi.ValidURL) // a path or query that is not text reaches no handler
		v1.Get("/health", s.health)
		v1.Get("/openapi.json", ServeOpenAPI)
		// Routes that authenticate themselves: OAuth callbacks, the
		// payment processor's webhook.
		for _, p := range pillars {
			p.KeylessRoutes(v1)
		}
		// The public read surface: no key; the project is named by
		// X-Service-Project-Key or ?project_id=.
		v1.Route("/public", func(pub chi.Router) {
			pub.Use(c.PublicPreflight) // preflights name no project in a header
			pub.Use(c.PublicProject)
			pub.Use(noteScope)
			pub.Use(idem.Handler) // public submits (bookings, forms) accept Idempotency-Key too (entries under PublicKeyID)
			for _, p := range pillars {
				p.PublicRoutes(pub)
			}
			if opts.TestPublicRoutes != nil {
				opts.TestPublicRoutes(pub)
			}
		})
		// Everything else needs a project API key.
		v1.Group(func(api chi.Router) {
			api.Use(tenant.Authenticated)
			// Armed here, run by tenant.Handle once the route's scope
			// check let the request through: a key that may not call the
			// route gets its 403, never another key's stored answer.
			api.Use(idem.Handler)
			c.ProjectRoutes(api)
			mcpHandler := agent.Handler()
			api.Method(http.MethodPost, "/mcp", mcpHandler) // each tool checks its route's scope
			// No GET stream (stateless): 405 with Allow, as the transport
			// asks, for clients that open one (the TypeScript SDK does).
			api.Method(http.MethodGet, "/mcp", mcpHandler)
			for _, p := range pillars {
				p.Routes(api)
			}
			if opts.TestRoutes != nil {
				opts.TestRoutes(api)
			}
		})
	})
	// Dashboard login and the dashboard API (JWT, not API keys). The
	// limiter above skips them; they have limits of their own, in the
	// same store: the login endpoints per client IP, the rest per client
	// IP and per user.
	dashLimits := DashboardLimits{
		Login: &ratelimit.PerIP{Store: s.Limits.Store, Limit: ratelimit.Limit{RPM: cfg.LoginRPM, Burst: cfg.LoginBurst},
			Trusted: cfg.TrustedProxies, Clock: s.Limits.Clock, Logger: logger, Rejected: s.Metrics.RateLimited},
		IP: &ratelimit.PerKey{Store: s.Limits.Store, Limit: ratelimit.Limit{RPM: cfg.DashboardIPRPM, Burst: cfg.DashboardIPBurst},
			Key:  func(r *http.Request) string { return ratelimit.ClientIP(r, cfg.TrustedProxies) },
			Name: "dashboard-ip", Clock: s.Limits.Clock, Logger: logger, Rejected: s.Metrics.RateLimited},
		User: &ratelimit.PerKey{Store: s.Limits.Store, Limit: ratelimit.Limit{RPM: cfg.DashboardRPM, Burst: cfg.DashboardBurst},
			Key:  dashboardUser,
			Name: "dashboard-user", Clock: s.Limits.Clock, Logger: logger, Rejected: s.Metrics.RateLimited},
	}
	// Its project routes that mirror a /v1 route (mirror.go) are served
	// by r, so through the limiter and the /v1 router.
	r.Route("/central/api", func(cr chi.Router) { c.DashboardRoutes(cr, dashLimits, r, cfg.DashboardPlans) })
	// The admin API: admin tokens only (a project key is 401 here, as an
	// admin token is on /v1), each limited in a bucket of its own.
	adminLimits := &ratelimit.PerKey{Store: s.Limits.Store, Limit: ratelimit.Limit{RPM: cfg.AdminRPM, Burst: cfg.AdminBurst},
		Key: func(r *http.Request) string {
			if t := AdminFrom(r.Context()); t != nil {
				return t.ID
			}
			return "ip:" + ratelimit.ClientIP(r, cfg.TrustedProxies) // guesses are limited too
		}, Name: "admin", Clock: s.Limits.Clock, Logger: logger, Rejected: s.Metrics.RateLimited}
	r.Route(AdminPath, func(r chi.Router) {
		r.Use(c.AdminIdentify, adminLimits.Handler, AdminAuthenticated, httpapi.ValidURL)
		c.AdminRoutes(r)
		c.AdminExportRoutes(r, c.RequireAdmin)
		c.AdminShardRoutes(r)
	})
	// The web dashboard: its pages call /central/api through this router.
	dash, err := dashboard.New(r, logger, cfg.TrustedProxies)
	if err != nil {
		return nil, err
	}
	r.Route(dashboard.Prefix, dash.Routes)
	s.Handler, s.Router = root, r
	return s, nil
}

// OpenAPIDocument is the whole OpenAPI document: the control plane's
// operations and every pillar's, in a fixed order. openapi.json is its
// output (go generate ./central).
func OpenAPIDocument() openapi.M {
	return openapi.Build(OpenAPI, usage.OpenAPI, jobs.OpenAPI, content.OpenAPI, blog.OpenAPI, releases.OpenAPI, sites.OpenAPI, commerce.OpenAPI,
		booking.OpenAPI, social.OpenAPI, forms.OpenAPI, webhooks.OpenAPI, mcp.OpenAPI, AdminOpenAPI, AdminExportsOpenAPI, AdminShardsOpenAPI)
}

// rateLimits builds the limiter of every request: Redis when REDIS_URL
// is set (shared by every instance), else in-process.
func (s *Server) rateLimits(opts Options) (*projectlimit.Guard, error) {
	clock := opts.RateClock
	if clock == nil {
		clock = time.Now
	}
	store := opts.RateStore
	if store == nil {
		mem := ratelimit.NewMemory(clock)
		store = mem
		if s.Config.RedisURL != "" {
			rs, client, err := ratelimit.Dial(s.Config.RedisURL, mem, s.logger)
			if err != nil {
				return nil, fmt.Errorf("REDIS_URL: %w", err)
			}
			store, s.redis = rs, client
		}
	}
	return &projectlimit.Guard{
		Store:        store,
		Anonymous:    projectlimit.ForProject(&tenant.Project{Plan: tenant.PlanFree}),
		Public:       ratelimit.Limit{RPM: s.Config.PublicRPM, Burst: s.Config.PublicBurst},
		PublicPrefix: PublicPath,
		// The processor's webhook is signed and comes in bursts: it shows
		// the sender's bucket but is never refused.
		Peek:     []string{"/v1/health", "/v1/payments/webhook"},
		Skip:     []string{"/central/", dashboard.Prefix, AdminPath + "/"},
		Trusted:  s.Config.TrustedProxies,
		Clock:    clock,
		Logger:   s.logger,
		Rejected: s.Metrics.RateLimited,
	}, nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	status, code := "ok", 200
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.Pool.Ping(ctx); err != nil {
		status, code = "unavailable", 503
		w.Header().Set("Retry-After", "5")
	}
	_ = httpapi.JSON(w, code, map[string]any{"status": status, "version": openapi.Version, "build": s.opts.Build, "uptime_s": int64(time.Since(s.started).Seconds())})
}

// Start runs the background parts: cache invalidation and, when enabled,
// the River workers.
func (s *Server) Start(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	var loops sync.WaitGroup
	loops.Go(func() { s.Central.Listen(ctx) })
	loops.Go(func() { s.Central.KeepSpares(ctx, s.Config.SpareSchemas) })
	// The other shards' work (shardwork.go): their River clients, when
	// this process works jobs, and their job events.
	loops.Go(func() { s.followShards(ctx) })
	go func() {
		loops.Wait()
		close(s.done)
	}()
	go s.JobEvents.Run(ctx)
	if s.opts.Workers {
		// The liveness lock is held before the first fetch, so a job this
		// process runs is never taken for an orphan while it lives.
		var err error
		if s.live, err = queue.StartLiveness(ctx, s.Pool, s.River.ID(), 5*time.Second, s.logger); err != nil {
			return fmt.Errorf("start workers: %w", err)
		}
		events, _ := s.River.SubscribeConfig(outcomeEvents())
		go s.jobOutcomes(ctx, events, s.Pool)
		if err := s.River.Start(ctx); err != nil {
			return fmt.Errorf("start workers: %w", err)
		}
		s.working.Store(true)
	}
	return nil
}

// Stop soft-stops River (running jobs get their soft-stop timeout), then
// ends the background loops.
func (s *Server) Stop(ctx context.Context) error {
	var err error
	if s.opts.Workers {
		s.working.Store(false)
		var shardErr error
		var shards sync.WaitGroup
		shards.Go(func() { shardErr = s.stopShards(ctx) })
		if e := s.River.Stop(ctx); e != nil && !errors.Is(e, context.Canceled) {
			err = e
		}
		shards.Wait()
		err = errors.Join(err, shardErr)
		if s.live != nil {
			s.live.Stop() // after River: its running jobs are done or handed back
		}
	}
	if !s.opts.Workers {
		_ = s.stopShards(ctx) // their LISTENs
	}
	s.wakers.Stop() // after River, whose workers register wake-ups
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	if s.redis != nil {
		_ = s.redis.Close()
	}
	s.Central.Close() // the shard pools it opened, now that nothing runs on them
	return err
}
