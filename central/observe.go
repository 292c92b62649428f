package central

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"regexp"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/plinth-dev/plinth/central/inproc"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/metrics"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
	"github.com/plinth-dev/plinth/tenant/jobs"
	"github.com/plinth-dev/plinth/tenant/outbox"
)

// What an operator sees of a process: one access-log line and the HTTP
// metrics per request, the /metrics registry, and the orchestrators'
// probes /livez and /readyz. The probes and /metrics are not part of the
// API (nor of its OpenAPI document): they sit beside the /v1 router,
// outside its rate limits.

// accessRecord is filled while a request passes through the router: the
// project and key are known only once the key is resolved, deeper than
// the middleware that logs the request.
type accessRecord struct {
	projectID, keyID string
}

type accessKey struct{}

// observe is the outermost middleware: it logs one line per request
// (never the key or the body) and records the request's metrics, by
// route pattern so that a path naming a resource adds no series.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &accessRecord{}
		ctx := context.WithValue(r.Context(), accessKey{}, rec)
		ctx = tenant.WithPrefetch(credits.WithObserver(ctx, s.Metrics.CreditsCharged), s.prefetch)
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r.WithContext(ctx))
		took := time.Since(start)
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK // nothing written: net/http answers 200
		}
		route := ""
		if rc := chi.RouteContext(ctx); rc != nil {
			route = rc.RoutePattern()
		}
		s.Metrics.Request(route, r.Method, status, took)
		attrs := []slog.Attr{
			slog.String("request_id", w.Header().Get("X-Request-Id")),
			slog.String("method", r.Method),
			slog.String("route", route),
			slog.Int("status", status),
			slog.Int("bytes", ww.BytesWritten()),
			slog.Float64("duration_ms", float64(took.Microseconds())/1000),
			slog.String("project_id", rec.projectID),
			slog.String("key_id", rec.keyID),
		}
		if tool := inproc.LabelOf(ctx); tool != "" {
			attrs = append(attrs, slog.String("tool", tool))
		}
		s.logger.LogAttrs(ctx, slog.LevelInfo, "request", attrs...)
	})
}

// noteScope copies the request's project and key, once resolved, into
// its access record.
func noteScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rec, ok := r.Context().Value(accessKey{}).(*accessRecord); ok {
			if sc := tenant.FromContext(r.Context()); sc != nil {
				rec.projectID = sc.Project.ID
				if sc.Key != nil {
					rec.keyID = sc.Key.ID
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// opsRoutes mounts the probes and, on the API listener, /metrics only
// behind PLINTH_METRICS_TOKEN and only when the operators have no
// listener of their own (PLINTH_METRICS_ADDR). The metrics show business
// figures (projects, credits charged, requests by route): the API's
// listener faces the world, so without a token there is no /metrics on
// it at all (404), as if it did not exist.
func (s *Server) opsRoutes(r chi.Router) {
	r.Get("/livez", s.livez)
	r.Get("/readyz", s.readyz)
	if s.Config.MetricsAddr == "" && s.Config.MetricsToken != "" {
		r.Method(http.MethodGet, "/metrics", s.Metrics.Handler(s.Config.MetricsToken))
	}
}

// OpsHandler is what the operators' listener (PLINTH_METRICS_ADDR)
// serves: /metrics, and Go's profiles under /debug/pprof/ (CPU, heap,
// goroutines, trace), open unless PLINTH_METRICS_TOKEN is set, then
// both behind it: that listener is on a network only operators reach.
// The API's listener never serves the profiles.
func (s *Server) OpsHandler() http.Handler {
	tok := s.Config.MetricsToken
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.Metrics.Handler(tok))
	mux.Handle("/debug/pprof/", metrics.Protect(tok, http.HandlerFunc(pprof.Index)))
	mux.Handle("/debug/pprof/cmdline", metrics.Protect(tok, http.HandlerFunc(pprof.Cmdline)))
	mux.Handle("/debug/pprof/profile", metrics.Protect(tok, http.HandlerFunc(pprof.Profile)))
	mux.Handle("/debug/pprof/symbol", metrics.Protect(tok, http.HandlerFunc(pprof.Symbol)))
	mux.Handle("/debug/pprof/trace", metrics.Protect(tok, http.HandlerFunc(pprof.Trace)))
	return mux
}

// livez answers 200 while the process can answer at all: an orchestrator
// restarts a process whose livez fails, so it checks nothing outside it.
func (s *Server) livez(w http.ResponseWriter, _ *http.Request) {
	_ = httpapi.JSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// readyz answers 200 when the process can do its work: the database
// answers, every project schema is at the migrations this binary embeds
// (run `plinth migrate` before starting new instances), and, in a
// process that runs them, the workers run. Otherwise 503 naming the
// failing checks, so traffic goes to other instances meanwhile.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{}
	ready := true
	fail := func(name, why string) { checks[name], ready = why, false }
	if err := s.Pool.Ping(ctx); err != nil {
		fail("database", "unreachable: "+err.Error())
		fail("migrations", "unknown: the database is unreachable")
	} else {
		checks["database"] = "ok"
		if behind, err := s.schemasBehind(ctx); err != nil {
			fail("migrations", "unknown: "+err.Error())
		} else if behind > 0 {
			fail("migrations", "project schemas behind this binary's migrations (run plinth migrate): "+strconv.FormatInt(behind, 10))
		} else {
			checks["migrations"] = "ok"
		}
		s.readyShards(ctx, checks, fail)
	}
	switch {
	case !s.opts.Workers:
		checks["workers"] = "not run by this process"
	case s.working.Load():
		checks["workers"] = "ok"
	default:
		fail("workers", "not running")
	}
	status, code := "ok", http.StatusOK
	if !ready {
		status, code = "unavailable", http.StatusServiceUnavailable
		w.Header().Set("Retry-After", "5")
	}
	_ = httpapi.JSON(w, code, map[string]any{"status": status, "checks": checks})
}

// readyShards adds a check per shard other than "default" (the
// database check is its) and not retired: its projects are served from
// it, so a shard that does not answer makes the process not ready,
// naming it.
func (s *Server) readyShards(ctx context.Context, checks map[string]string, fail func(name, why string)) {
	shards, err := s.Central.ListShards(ctx, true)
	if err != nil {
		fail("shards", "unknown: "+err.Error())
		return
	}
	for _, sh := range shards {
		if sh.Name == ShardDefault || sh.State == ShardRetired {
			continue
		}
		if sh.Reachable {
			checks["shard:"+sh.Name] = "ok"
		} else {
			fail("shard:"+sh.Name, "unreachable: "+sh.Error)
		}
	}
}

// schemasBehind counts the project schemas not at the embedded migrations.
func (s *Server) schemasBehind(ctx context.Context) (int64, error) {
	latest, count, err := provisioning.TenantVersion()
	if err != nil {
		return 0, err
	}
	return countSchemasBehind(ctx, s.Pool, latest, count)
}

// registerMetrics adds the collectors read at scrape time: the pool's
// statistics (each shard's pool joins as its work starts: startShard),
// the depth of River's queues, the shards' figures and the project count.
func (s *Server) registerMetrics(queues []string) {
	m := s.Metrics
	m.WatchPool("central", s.Pool)
	m.Up("database_up", "1 when the central database answered the scrape's ping (within 2 s), else 0; the figures read from it are missing from a scrape while it is 0.",
		s.Pool.Ping)
	states := []string{"available", "scheduled", "retryable", "running"}
	m.Gauges("river_jobs", "River jobs waiting or running, by queue and state (available, scheduled, retryable, running).",
		[]string{"queue", "state"}, func(ctx context.Context) ([]metrics.Sample, error) {
			counts, err := countRiverJobs(ctx, s.Pool)
			if err != nil {
				return nil, err
			}
			// Every configured queue shows every state, zero included, so
			// a dashboard's series exist before the first job.
			count := map[[2]string]int64{}
			for _, q := range queues {
				for _, st := range states {
					count[[2]string{q, st}] = 0
				}
			}
			for _, c := range counts {
				count[[2]string{c.queue, c.state}] = c.n
			}
			out := make([]metrics.Sample, 0, len(count))
			for k, n := range count {
				out = append(out, metrics.Sample{Labels: []string{k[0], k[1]}, Value: float64(n)})
			}
			return out, nil
		})
	// Per shard not retired, from one probe of each server a scrape.
	m.GaugeSet([]metrics.Gauge{
		{Name: "shard_reachable", Help: "1 when the shard's server answered the scrape's probe (within 3 s), else 0.", Labels: []string{"shard"}},
		{Name: "shard_projects", Help: "Projects placed on the shard.", Labels: []string{"shard"}},
		{Name: "shard_capacity", Help: "Projects the shard is meant to hold (plinth shard add --capacity).", Labels: []string{"shard"}},
	}, func(ctx context.Context) ([][]metrics.Sample, error) {
		shards, err := s.Central.ListShards(ctx, true)
		if err != nil {
			return nil, err
		}
		out := make([][]metrics.Sample, 3)
		for _, sh := range shards {
			if sh.State == ShardRetired {
				continue
			}
			reach := 0.0
			if sh.Reachable {
				reach = 1
			}
			l := []string{sh.Name}
			out[0] = append(out[0], metrics.Sample{Labels: l, Value: reach})
			out[1] = append(out[1], metrics.Sample{Labels: l, Value: float64(sh.Projects)})
			out[2] = append(out[2], metrics.Sample{Labels: l, Value: float64(sh.Capacity)})
		}
		return out, nil
	})
	m.Gauges("projects", "Projects on this deployment.", nil, func(ctx context.Context) ([]metrics.Sample, error) {
		n, err := countProjects(ctx, s.Pool)
		if err != nil {
			return nil, err
		}
		return []metrics.Sample{{Value: float64(n)}}, nil
	})
}

// jobMiddleware gives every job the context a request has: credit charges
// made by jobs reach the metrics too, and their transactions read the
// webhook endpoints as they begin.
func (s *Server) jobMiddleware() rivertype.Middleware {
	return river.WorkerMiddlewareFunc(func(ctx context.Context, _ *rivertype.JobRow, doInner func(context.Context) error) error {
		return doInner(tenant.WithPrefetch(credits.WithObserver(ctx, s.Metrics.CreditsCharged), s.prefetch))
	})
}

// jobOutcomes turns River's job events into the job metrics until ctx
// ends, and tells the delivery queue's waker of written snoozes.
func (s *Server) jobOutcomes(ctx context.Context, events <-chan *river.Event, pool *pgxpool.Pool) {
	outcomes := map[river.EventKind]string{river.EventKindJobCompleted: "completed", river.EventKindJobFailed: "failed",
		river.EventKindJobCancelled: "cancelled", river.EventKindJobSnoozed: "snoozed"}
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-events:
			if !ok {
				return
			}
			var took time.Duration
			if e.JobStats != nil {
				took = e.JobStats.RunDuration
			}
			if e.Job != nil {
				s.Metrics.Job(jobKind(e.Job), outcomes[e.Kind], took)
				if e.Kind == river.EventKindJobSnoozed && e.Job.Queue == outbox.Queue {
					s.wakers.For(pool).Written(e.Job.ScheduledAt) // the snooze is written now: wake it if already due
				}
			}
		}
	}
}

// jobKind is the label of a job in the job metrics: its River kind, or
// for the API's jobs (River kind plinth.job, whatever they do) the job's
// type (blog_post.generate, image.generate...). Types are the server's
// own names, a few dozen at most, so they make few series.
func jobKind(j *rivertype.JobRow) string {
	if j.Kind != (jobs.Args{}).Kind() {
		return j.Kind
	}
	var a struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(j.EncodedArgs, &a) != nil || !jobTypeName.MatchString(a.Type) {
		return j.Kind
	}
	return a.Type
}

// jobTypeName is the shape of a job type.
var jobTypeName = regexp.MustCompile(`^[a-z][a-z0-9_.]{0,63}$`)
