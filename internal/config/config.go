// Package config reads the process configuration from the environment once.
package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MaxPrivateShards is the most private shards plinth serve starts
// (PLINTH_SHARDS, serve --shards).
const MaxPrivateShards = 16

// Config is every setting of docs/decisions.md section 1, with its default.
type Config struct {
	DatabaseURL    string
	Addr           string
	PublicURL      string
	Secret         string
	ErrorBase      string
	Dev            bool
	WebhookRetry   []time.Duration
	WebhookTimeout time.Duration
	KeyCacheTTL    time.Duration
	// SpareSchemas is how many project schemas are kept created ahead of
	// the projects that will claim them (PLINTH_SPARE_SCHEMAS, default 32).
	SpareSchemas int
	// PrivateShards is how many private clusters `plinth serve` starts
	// beside the central one, each added as shard shard1…shardN, when no
	// DATABASE_URL is set (PLINTH_SHARDS, or serve --shards; default 0).
	PrivateShards  int
	TrustedProxies []netip.Prefix
	PublicRPM      int
	PublicBurst    int
	// LoginRPM and LoginBurst limit each client IP on each of the
	// dashboard's login endpoints (PLINTH_LOGIN_RATE, default 10/20),
	// which run argon2id and are outside the API's limits.
	LoginRPM   int
	LoginBurst int
	// AdminRPM and AdminBurst limit each admin token on /admin/api
	// (PLINTH_ADMIN_RATE, default 120/60).
	AdminRPM, AdminBurst int
	// DashboardRPM and DashboardBurst limit each dashboard user on the
	// dashboard API (/central/api) and the pages over it
	// (PLINTH_DASHBOARD_RATE, default 120/60); DashboardIPRPM and
	// DashboardIPBurst each client IP there, signed in or not
	// (PLINTH_DASHBOARD_IP_RATE, default 600/300).
	DashboardRPM, DashboardBurst     int
	DashboardIPRPM, DashboardIPBurst int
	// MaxProjectsPerTenant caps the projects of one workspace, those
	// being deleted aside (PLINTH_MAX_PROJECTS_PER_TENANT, default 100;
	// 0: no cap).
	MaxProjectsPerTenant int
	// DeleteGrace is how long a deleted project's renamed schema is kept
	// before a job drops it (PLINTH_DELETE_GRACE, default 7 days).
	DeleteGrace time.Duration
	// MoveGrace is how long a moved project's source schema is kept
	// (renamed) before a job drops it (PLINTH_MOVE_GRACE, default 24 h);
	// MoveMaxPause the longest a move may hold its project's writes
	// (PLINTH_MOVE_MAX_PAUSE, default 5 s): a fence that would last longer
	// is lifted and the move fails, the project staying where it was.
	MoveGrace    time.Duration
	MoveMaxPause time.Duration
	// MoveCopyRows: a project whose tables hold at most this many rows
	// (and 64 MiB) is moved by a fenced copy instead of replication
	// (PLINTH_MOVE_COPY_ROWS, default 5000; 0: always replication).
	// MoveConcurrency is how many moves, a drain's included, one worker
	// process runs at once (PLINTH_MOVE_CONCURRENCY, default 4).
	MoveCopyRows    int64
	MoveConcurrency int
	// MoveCopyRate is how many bytes a second a move by replication copies
	// its project's rows at (PLINTH_MOVE_COPY_RATE, default 1048576, 1
	// MiB/s; 0: as fast as the servers go), so that the source's other
	// projects keep their latency while it copies.
	MoveCopyRate int64
	// DashboardPlans are the plans a workspace user may give a project
	// created from the dashboard (PLINTH_DASHBOARD_PLANS, default free);
	// the first is the default. Any other plan is the operator's to set.
	// The names are checked against the plan table by central.CheckConfig
	// (this package knows no plan).
	DashboardPlans   []string
	AIProvider       string
	OpenAIBaseURL    string
	OpenAIAPIKey     string
	AIModel          string
	ImageModel       string
	StripeSecretKey  string
	StripeWebhookKey string
	StripeAPIBase    string
	Storage          string
	RedisURL         string
	// LogFormat (json, text, or "" to choose by the terminal) and
	// LogLevel shape the process logger.
	LogFormat, LogLevel string
	// MetricsAddr moves /metrics to a listener of its own; MetricsToken
	// makes it require that bearer token.
	MetricsAddr, MetricsToken string

	// MediaURL is the base of the public media URLs the API hands out
	// (PLINTH_MEDIA_URL; default PublicURL): a separate, cookieless
	// origin that serves /v1/public/media/ keeps an uploaded file away
	// from the API's and the dashboard's origin.
	MediaURL string
	// Getenv is kept for settings read per platform (PLINTH_SOCIAL_*).
	Getenv func(string) string
}

// Var is one environment variable the server reads: its name, the
// default applied when it is unset or empty, and what it means. Vars is
// the one declaration of them: Load reads them, `plinth help` and the
// configuration reference of docs/operations.md list them.
type Var struct {
	Name, Default, Help string
}

// Vars lists every variable, in the order help shows them. A default of
// "" means unset; one in parentheses describes what happens instead.
var Vars = []Var{
	{"DATABASE_URL", "", "central database and the default shard (unset: a private cluster under ./.plinth/pg)"},
	{"PLINTH_ADDR", "127.0.0.1:8080", "listen address of the API"},
	{"PLINTH_PUBLIC_URL", "", "externally visible base URL, for the URLs the server hands out (unset: http://PLINTH_ADDR)"},
	{"PLINTH_MEDIA_URL", "", "base URL of the public media URLs the API hands out ({base}/v1/public/media/…); a separate, cookieless origin that reaches this server is recommended (unset: PLINTH_PUBLIC_URL)"},
	{"PLINTH_SECRET", "", "server secret: key-hash pepper, JWT signing, token encryption (unset: generated once, kept in the central schema)"},
	{"PLINTH_ERROR_BASE", "https://plinth.dev/errors", "namespace of the problem type URIs"},
	{"PLINTH_DEV", "", "1 allows http:// and loopback webhook URLs and image fetches"},
	{"PLINTH_LOG_FORMAT", "", "json or text (unset: json, or text when stderr is a terminal)"},
	{"PLINTH_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"PLINTH_METRICS_ADDR", "", "the operators' listener: /metrics and /debug/pprof/ on this address, open unless PLINTH_METRICS_TOKEN is set"},
	{"PLINTH_METRICS_TOKEN", "", "bearer token /metrics requires; the API listener serves /metrics only with it, and only without PLINTH_METRICS_ADDR (unset: no /metrics there)"},
	{"PLINTH_WEBHOOK_RETRY_DELAYS", "30s,2m,10m,1h,6h", "comma list of Go durations between webhook attempts"},
	{"PLINTH_WEBHOOK_TIMEOUT", "30s", "webhook receiver timeout"},
	{"PLINTH_KEY_CACHE_TTL", "30s", "how long a resolved key is cached (bounds the revocation delay)"},
	{"PLINTH_SPARE_SCHEMAS", "32", "project schemas kept created ahead of new projects, 0 to 100"},
	{"PLINTH_SHARDS", "0", "private shards plinth serve starts beside its private cluster (.plinth/pg-shard1…), added as shards shard1…shardN; 0 to 16, only without DATABASE_URL (serve --shards)"},
	{"PLINTH_TRUSTED_PROXIES", "127.0.0.0/8,::1/128", "CIDRs of the proxies whose X-Forwarded-For and X-Forwarded-Proto are honoured (from the direct peer only)"},
	{"PLINTH_PUBLIC_RATE", "120/240", "per-IP limit on /v1/public/*, RPM/BURST"},
	{"PLINTH_LOGIN_RATE", "10/20", "per-IP limit on each dashboard login endpoint, RPM/BURST"},
	{"PLINTH_ADMIN_RATE", "120/60", "per-token limit on the admin API (/admin/api), RPM/BURST"},
	{"PLINTH_DASHBOARD_RATE", "120/60", "per-user limit on the dashboard API (/central/api) and pages (one page counts once), RPM/BURST"},
	{"PLINTH_DASHBOARD_IP_RATE", "600/300", "per-IP limit on the dashboard API (/central/api) and pages, signed in or not, RPM/BURST"},
	{"PLINTH_MAX_PROJECTS_PER_TENANT", "100", "most projects one workspace may have, those being deleted aside (every way of creating one); 0: no cap"},
	{"PLINTH_DELETE_GRACE", "168h", "how long a deleted project's data is kept (schema renamed) before a job drops it"},
	{"PLINTH_MOVE_GRACE", "24h", "how long a moved project's source schema is kept (renamed) before a job drops it"},
	{"PLINTH_MOVE_MAX_PAUSE", "5s", "longest a project move may hold the project's writes; a longer fence is lifted and the move fails"},
	{"PLINTH_MOVE_COPY_RATE", "1048576", "bytes a second a move by replication copies its project's rows at, so the source's other projects keep their latency meanwhile; 0: unpaced"},
	{"PLINTH_MOVE_COPY_ROWS", "5000", "a project of at most this many rows (and 64 MiB) moves by a copy under its fence, which pauses it less than replication; 0: always replication"},
	{"PLINTH_MOVE_CONCURRENCY", "4", "how many project moves (a shard drain's included) one worker process runs at once"},
	{"PLINTH_DASHBOARD_PLANS", "free", "comma list of the plans dashboard users may choose for a new project, the first the default (others: plinth project plan)"},
	{"PLINTH_AI_PROVIDER", "offline", "offline (deterministic, built in) or openai (any OpenAI-compatible API)"},
	{"OPENAI_BASE_URL", "https://api.openai.com/v1", "API base of the openai provider"},
	{"OPENAI_API_KEY", "", "API key of the openai provider"},
	{"PLINTH_AI_MODEL", "gpt-4o-mini", "chat model"},
	{"PLINTH_IMAGE_MODEL", "gpt-image-1", "image model"},
	{"STRIPE_SECRET_KEY", "", "the platform's Stripe key (unset: payment endpoints answer 409 connect_not_ready)"},
	{"STRIPE_WEBHOOK_SECRET", "", "signing secret of the Connect webhook endpoint"},
	{"STRIPE_API_BASE", "", "points the Stripe client at stripe-mock or another base"},
	{"PLINTH_STORAGE", "file://./.plinth/media", "media storage: file://DIR or s3://bucket[/prefix]"},
	{"REDIS_URL", "", "share rate limits across instances (unset: in process)"},
	{"PLINTH_SOCIAL_<PLATFORM>_CLIENT_ID, _CLIENT_SECRET", "", "OAuth app per social platform (unset: the platform is off)"},
}

// Load parses the environment through getenv, applying the defaults of
// Vars.
func Load(getenv func(string) string) (Config, error) {
	get := func(name string) string {
		if v := getenv(name); v != "" {
			return v
		}
		for _, v := range Vars {
			if v.Name == name {
				return v.Default
			}
		}
		panic("config: undeclared variable " + name) // a programming error, caught by any test
	}
	c := Config{
		DatabaseURL:      get("DATABASE_URL"),
		Addr:             get("PLINTH_ADDR"),
		Secret:           get("PLINTH_SECRET"),
		ErrorBase:        strings.TrimRight(get("PLINTH_ERROR_BASE"), "/"),
		Dev:              get("PLINTH_DEV") == "1",
		LogFormat:        get("PLINTH_LOG_FORMAT"),
		LogLevel:         get("PLINTH_LOG_LEVEL"),
		MetricsAddr:      get("PLINTH_METRICS_ADDR"),
		MetricsToken:     get("PLINTH_METRICS_TOKEN"),
		AIProvider:       get("PLINTH_AI_PROVIDER"),
		OpenAIBaseURL:    get("OPENAI_BASE_URL"),
		OpenAIAPIKey:     get("OPENAI_API_KEY"),
		AIModel:          get("PLINTH_AI_MODEL"),
		ImageModel:       get("PLINTH_IMAGE_MODEL"),
		StripeSecretKey:  get("STRIPE_SECRET_KEY"),
		StripeWebhookKey: get("STRIPE_WEBHOOK_SECRET"),
		StripeAPIBase:    get("STRIPE_API_BASE"),
		Storage:          get("PLINTH_STORAGE"),
		RedisURL:         get("REDIS_URL"),
		Getenv:           getenv,
	}
	c.PublicURL = strings.TrimRight(or(get("PLINTH_PUBLIC_URL"), "http://"+c.Addr), "/")
	c.MediaURL = c.PublicURL
	if v := get("PLINTH_MEDIA_URL"); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return c, fmt.Errorf("PLINTH_MEDIA_URL: want an http(s) base URL such as https://media.example.com, got %q", v)
		}
		c.MediaURL = strings.TrimRight(v, "/")
	}
	var err error
	if c.WebhookRetry, err = durations(get("PLINTH_WEBHOOK_RETRY_DELAYS")); err != nil {
		return c, fmt.Errorf("PLINTH_WEBHOOK_RETRY_DELAYS: %w", err)
	}
	if c.WebhookTimeout, err = time.ParseDuration(get("PLINTH_WEBHOOK_TIMEOUT")); err != nil {
		return c, fmt.Errorf("PLINTH_WEBHOOK_TIMEOUT: %w", err)
	}
	if c.KeyCacheTTL, err = time.ParseDuration(get("PLINTH_KEY_CACHE_TTL")); err != nil {
		return c, fmt.Errorf("PLINTH_KEY_CACHE_TTL: %w", err)
	}
	if c.SpareSchemas, err = strconv.Atoi(get("PLINTH_SPARE_SCHEMAS")); err != nil || c.SpareSchemas < 0 || c.SpareSchemas > 100 {
		return c, fmt.Errorf("PLINTH_SPARE_SCHEMAS: want 0 to 100, got %q", getenv("PLINTH_SPARE_SCHEMAS"))
	}
	if c.PrivateShards, err = strconv.Atoi(get("PLINTH_SHARDS")); err != nil || c.PrivateShards < 0 || c.PrivateShards > MaxPrivateShards {
		return c, fmt.Errorf("PLINTH_SHARDS: want 0 to %d, got %q", MaxPrivateShards, getenv("PLINTH_SHARDS"))
	}
	for _, s := range strings.Split(get("PLINTH_TRUSTED_PROXIES"), ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return c, fmt.Errorf("PLINTH_TRUSTED_PROXIES: %w", err)
		}
		c.TrustedProxies = append(c.TrustedProxies, p)
	}
	if c.PublicRPM, c.PublicBurst, err = rate(get, "PLINTH_PUBLIC_RATE"); err != nil {
		return c, err
	}
	if c.LoginRPM, c.LoginBurst, err = rate(get, "PLINTH_LOGIN_RATE"); err != nil {
		return c, err
	}
	if c.AdminRPM, c.AdminBurst, err = rate(get, "PLINTH_ADMIN_RATE"); err != nil {
		return c, err
	}
	if c.DashboardRPM, c.DashboardBurst, err = rate(get, "PLINTH_DASHBOARD_RATE"); err != nil {
		return c, err
	}
	if c.DashboardIPRPM, c.DashboardIPBurst, err = rate(get, "PLINTH_DASHBOARD_IP_RATE"); err != nil {
		return c, err
	}
	if c.MaxProjectsPerTenant, err = strconv.Atoi(get("PLINTH_MAX_PROJECTS_PER_TENANT")); err != nil || c.MaxProjectsPerTenant < 0 {
		return c, fmt.Errorf("PLINTH_MAX_PROJECTS_PER_TENANT: want 0 (no cap) or a number of projects, got %q", getenv("PLINTH_MAX_PROJECTS_PER_TENANT"))
	}
	if c.DeleteGrace, err = time.ParseDuration(get("PLINTH_DELETE_GRACE")); err != nil || c.DeleteGrace < 0 {
		return c, fmt.Errorf("PLINTH_DELETE_GRACE: want a Go duration such as 168h, got %q", getenv("PLINTH_DELETE_GRACE"))
	}
	if c.MoveGrace, err = time.ParseDuration(get("PLINTH_MOVE_GRACE")); err != nil || c.MoveGrace < 0 {
		return c, fmt.Errorf("PLINTH_MOVE_GRACE: want a Go duration such as 24h, got %q", getenv("PLINTH_MOVE_GRACE"))
	}
	if c.MoveMaxPause, err = time.ParseDuration(get("PLINTH_MOVE_MAX_PAUSE")); err != nil || c.MoveMaxPause <= 0 {
		return c, fmt.Errorf("PLINTH_MOVE_MAX_PAUSE: want a positive Go duration such as 5s, got %q", getenv("PLINTH_MOVE_MAX_PAUSE"))
	}
	if c.MoveCopyRows, err = strconv.ParseInt(get("PLINTH_MOVE_COPY_ROWS"), 10, 64); err != nil || c.MoveCopyRows < 0 {
		return c, fmt.Errorf("PLINTH_MOVE_COPY_ROWS: want 0 (always replicate) or a number of rows, got %q", getenv("PLINTH_MOVE_COPY_ROWS"))
	}
	if c.MoveCopyRate, err = strconv.ParseInt(get("PLINTH_MOVE_COPY_RATE"), 10, 64); err != nil || c.MoveCopyRate < 0 {
		return c, fmt.Errorf("PLINTH_MOVE_COPY_RATE: want 0 (unpaced) or a number of bytes a second such as 1048576, got %q", getenv("PLINTH_MOVE_COPY_RATE"))
	}
	if c.MoveConcurrency, err = strconv.Atoi(get("PLINTH_MOVE_CONCURRENCY")); err != nil || c.MoveConcurrency < 1 || c.MoveConcurrency > 64 {
		return c, fmt.Errorf("PLINTH_MOVE_CONCURRENCY: want a number of moves from 1 to 64, got %q", getenv("PLINTH_MOVE_CONCURRENCY"))
	}
	for _, p := range strings.Split(get("PLINTH_DASHBOARD_PLANS"), ",") {
		if p = strings.TrimSpace(p); p == "" || slices.Contains(c.DashboardPlans, p) {
			continue
		}
		c.DashboardPlans = append(c.DashboardPlans, p)
	}
	if len(c.DashboardPlans) == 0 {
		return c, fmt.Errorf("PLINTH_DASHBOARD_PLANS: name at least one plan, got %q", getenv("PLINTH_DASHBOARD_PLANS"))
	}
	switch c.LogFormat {
	case "", "json", "text":
	default:
		return c, fmt.Errorf("PLINTH_LOG_FORMAT: want json or text, got %q", c.LogFormat)
	}
	return c, nil
}

// rate reads a limit written RPM/BURST, both at least 1.
func rate(get func(string) string, name string) (rpm, burst int, err error) {
	v := get(name)
	r, b, ok := strings.Cut(v, "/")
	rpm, err1 := strconv.Atoi(r)
	burst, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || rpm < 1 || burst < 1 {
		return 0, 0, fmt.Errorf("%s: want RPM/BURST, got %q", name, v)
	}
	return rpm, burst, nil
}

// String masks secrets, so a Config can be logged.
func (c Config) String() string {
	return fmt.Sprintf("addr=%s public_url=%s database=%s secret=%s ai=%s stripe=%t redis=%t dev=%t metrics_addr=%s metrics_token=%s",
		c.Addr, c.PublicURL, mask(c.DatabaseURL), mask(c.Secret), c.AIProvider, c.StripeSecretKey != "", c.RedisURL != "", c.Dev,
		or(c.MetricsAddr, "(api listener)"), mask(c.MetricsToken))
}

func mask(s string) string {
	if s == "" {
		return "(unset)"
	}
	return "(set)"
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func durations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, p := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}
