// Package server assembles the process: the HTTP handler of /v1 and
// /central/api, the River client with every pillar's workers, and the
// background loops. Each pillar is wired here explicitly.
package server

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/idempotency"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/ratelimit"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/internal/webhook"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/booking"
	"github.com/plinth-dev/plinth/tenant/commerce"
	"github.com/plinth-dev/plinth/tenant/content"
	"github.com/plinth-dev/plinth/tenant/forms"
	"github.com/plinth-dev/plinth/tenant/jobs"
	"github.com/plinth-dev/plinth/tenant/social"
	"github.com/plinth-dev/plinth/tenant/usage"
	"github.com/plinth-dev/plinth/tenant/webhooks"
)

// Version is the API version reported by /v1/health.
const Version = "1.0.1"

// Options choose what a process runs.
type Options struct {
	// Workers runs River workers and periodic jobs in this process.
	Workers bool
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
}

// Server is one assembled process.
type Server struct {
	Handler http.Handler
	// Router is Handler as the router, for the route-coverage test.
	Router  *chi.Mux
	Central *central.Central
	River   *queue.Client
	Config  config.Config
	Pool    *pgxpool.Pool
	// Jobs runs every job type; pillars register their handlers on it.
	Jobs *jobs.Runner
	// JobEvents wakes SSE streams on job events from any instance.
	JobEvents *jobs.Hub
	AI        ai.Provider
	Media     storage.Store
	// Outbox emits webhook events inside a pillar's transaction.
	Outbox *webhook.Outbox
	// Limits is the rate limiter in front of every route (tests that
	// mount routes of their own put it in front of them too).
	Limits *ratelimit.Guard

	live *queue.Liveness

	logger  *slog.Logger
	started time.Time
	opts    Options
	cancel  context.CancelFunc
	done    chan struct{}
	redis   redis.UniversalClient
}

// New builds the server over the central pool (also the default shard).
// Migrations must have run.
func New(ctx context.Context, cfg config.Config, pool *pgxpool.Pool, logger *slog.Logger, opts Options) (*Server, error) {
	c, err := central.Open(ctx, pool, cfg.Secret, cfg.KeyCacheTTL, logger)
	if err != nil {
		return nil, err
	}
	s := &Server{Central: c, Config: cfg, Pool: pool, logger: logger, started: time.Now(), opts: opts}

	workers := river.NewWorkers()
	var periodic []*river.PeriodicJob
	registered := 0 // pillars add their workers and periodic jobs here, counting them
	river.AddWorker(workers, &idempotency.CleanupWorker{Projects: c})
	periodic = append(periodic, idempotency.PeriodicCleanup())
	registered++
	s.Jobs = jobs.NewRunner(c, logger)
	river.AddWorker(workers, s.Jobs)
	registered++
	socialSvc := social.New(cfg, c, logger)
	socialSvc.Register(s.Jobs)
	river.AddWorker(workers, socialSvc.PublishWorker())
	river.AddWorker(workers, socialSvc.ScheduleWorker())
	periodic = append(periodic, socialSvc.Periodic(cfg.SchedulerInterval))
	registered += 2
	blogSvc := &blog.Service{Projects: c}
	river.AddWorker(workers, blogSvc.ScheduleWorker())
	periodic = append(periodic, blog.Periodic(cfg.SchedulerInterval))
	registered++
	// Webhooks: deliveries run on their own queue.
	hookSecrets := webhook.NewSecrets(c.Secret())
	river.AddWorker(workers, webhook.NewWorker(webhook.WorkerConfig{Dev: cfg.Dev, Timeout: cfg.WebhookTimeout,
		Retry: cfg.WebhookRetry, RootCAs: opts.RootCAs, Logger: logger}, c, hookSecrets))
	registered++

	// Commerce: the release job settles checkouts the processor left pending.
	shop := commerce.New(commerce.Config{Central: c, Logger: logger, Payments: payments.New(payments.Config{
		SecretKey: cfg.StripeSecretKey, WebhookSecret: cfg.StripeWebhookKey, APIBase: cfg.StripeAPIBase})})
	river.AddWorker(workers, shop.Worker())
	registered++
	s.opts.Workers = opts.Workers && registered > 0

	qo := opts.Queue
	qo.Work, qo.Logger, qo.PeriodicJobs = s.opts.Workers, logger, periodic
	qo.Queues = maps.Clone(qo.Queues)
	if qo.Queues == nil {
		qo.Queues = map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: 50}}
	}
	qo.Queues[webhook.Queue] = webhook.QueueConfig
	s.River, err = queue.New(pool, workers, qo)
	if err != nil {
		return nil, fmt.Errorf("river client: %w", err)
	}
	s.Outbox = webhook.NewOutbox(s.River)
	shop.SetQueue(s.River)
	shop.SetEvents(s.Outbox)
	s.JobEvents = jobs.NewHub(pool, logger)
	jobsAPI := &jobs.API{Hub: s.JobEvents, River: s.River}
	if s.AI, err = ai.New(cfg, logger); err != nil {
		return nil, err
	}
	if s.Media, err = storage.Open(cfg.Storage, cfg.Getenv); err != nil {
		return nil, err
	}
	contentSvc := &content.Service{AI: s.AI, Media: s.Media, River: s.River, PublicURL: cfg.PublicURL,
		Fetch: content.GuardedFetch(cfg.Dev, opts.RootCAs)}
	contentSvc.EmitTo(s.Outbox)
	contentSvc.Register(s.Jobs)
	socialSvc.River, socialSvc.AI, socialSvc.Images, socialSvc.Events = s.River, s.AI, contentSvc, s.Outbox
	blogSvc.River, blogSvc.AI, blogSvc.Media, blogSvc.MediaURL, blogSvc.Events = s.River, s.AI, s.Media, contentSvc.MediaURL, s.Outbox
	blogSvc.Register(s.Jobs)

	limits, err := s.rateLimits(opts)
	s.Limits = limits
	if err != nil {
		return nil, err
	}
	bookings := booking.New(s.Outbox, time.Now)

	r := httpapi.NewRouter()
	r.Use(httpapi.Base(cfg.ErrorBase, logger, 11<<20))
	r.Use(forms.CORS) // before the limiter: a 429 of a public form is readable in a browser
	// Rate limits run before routing, so that every response (401s, 404s
	// of unknown routes, the public surface) carries the headers.
	r.Use(c.Identify)
	r.Use(limits.Handler)
	idem := idempotency.New(logger)
	r.Route("/v1", func(v1 chi.Router) {
		v1.Get("/health", s.health)
		v1.Get("/openapi.json", central.ServeOpenAPI) // no key
		// The payment processor's webhook: its signature authenticates it.
		shop.WebhookRoute(v1)
		// The public read surface: no key; the project is named by
		// X-Service-Project-Key or ?project_id=.
		v1.Route("/public", func(pub chi.Router) {
			pub.Use(forms.Preflight) // preflights name no project
			pub.Use(c.PublicProject)
			pub.Use(idem.Handler) // public submits (bookings, forms) accept Idempotency-Key too
			forms.PublicRoutes(pub)
			shop.PublicRoutes(pub)
			contentSvc.MountPublic(pub)
			bookings.PublicRoutes(pub)
			blogSvc.MountPublic(pub)
			if opts.TestPublicRoutes != nil {
				opts.TestPublicRoutes(pub)
			}
		})
		// OAuth callbacks: no key; the signed, single-use state names the project.
		socialSvc.MountKeyless(v1)
		v1.Group(func(api chi.Router) {
			api.Use(tenant.Authenticated)
			api.Use(idem.Handler)
			c.ProjectRoutes(api)
			usage.Routes(api)
			forms.Routes(api)
			shop.Routes(api)
			jobsAPI.Mount(api)
			contentSvc.Mount(api)
			socialSvc.Mount(api)
			blogSvc.Mount(api)
			api.Route("/webhook-endpoints", webhooks.New(s.Outbox, hookSecrets, cfg.Dev).Routes)
			bookings.Routes(api)
			if opts.TestRoutes != nil {
				opts.TestRoutes(api)
			}
		})
	})
	// Dashboard login and the dashboard API (JWT, not API keys).
	r.Route("/central/api", c.DashboardRoutes)
	s.Handler, s.Router = r, r
	return s, nil
}

// rateLimits builds the limiter of every request: Redis when REDIS_URL
// is set (shared by every instance), else in-process.
func (s *Server) rateLimits(opts Options) (*ratelimit.Guard, error) {
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
	return &ratelimit.Guard{
		Store:        store,
		Anonymous:    ratelimit.ForProject(&tenant.Project{Plan: "free"}),
		Public:       ratelimit.Limit{RPM: s.Config.PublicRPM, Burst: s.Config.PublicBurst},
		PublicPrefix: central.PublicPath,
		// The processor's webhook is signed and comes in bursts: it shows
		// the sender's bucket but is never refused.
		Peek:    []string{"/v1/health", "/v1/payments/webhook"},
		Skip:    []string{"/central/"},
		Trusted: s.Config.TrustedProxies,
		Clock:   clock,
		Logger:  s.logger,
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
	_ = httpapi.JSON(w, code, map[string]any{"status": status, "version": Version, "uptime_s": int64(time.Since(s.started).Seconds())})
}

// Start runs the background parts: cache invalidation and, when enabled,
// the River workers.
func (s *Server) Start(ctx context.Context) error {
	ctx, s.cancel = context.WithCancel(ctx)
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.Central.Listen(ctx)
	}()
	go s.JobEvents.Run(ctx)
	if s.opts.Workers {
		// The liveness lock is held before the first fetch, so a job this
		// process runs is never taken for an orphan while it lives.
		var err error
		if s.live, err = queue.StartLiveness(ctx, s.Pool, s.River.ID(), 5*time.Second, s.logger); err != nil {
			return fmt.Errorf("start workers: %w", err)
		}
		if err := s.River.Start(ctx); err != nil {
			return fmt.Errorf("start workers: %w", err)
		}
	}
	return nil
}

// Stop soft-stops River (running jobs get their soft-stop timeout), then
// ends the background loops.
func (s *Server) Stop(ctx context.Context) error {
	var err error
	if s.opts.Workers {
		if e := s.River.Stop(ctx); e != nil && !errors.Is(e, context.Canceled) {
			err = e
		}
		if s.live != nil {
			s.live.Stop() // after River: its running jobs are done or handed back
		}
	}
	if s.cancel != nil {
		s.cancel()
		<-s.done
	}
	if s.redis != nil {
		_ = s.redis.Close()
	}
	return err
}
