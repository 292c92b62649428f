// Package metrics holds a process's Prometheus metrics: one private
// registry per server (tests build many servers in one process, and the
// global default registry would mix them), the instruments the parts of
// the server report to, and the collectors read at scrape time.
//
// No metric has a project label: with thousands of projects it would make
// thousands of series per metric. Per-project figures are the usage API's.
package metrics

import (
	"context"
	"crypto/subtle"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Namespace prefixes every metric of the server.
const Namespace = "plinth"

// Metrics is the registry of one server and its instruments. A nil
// *Metrics records nothing, so parts built without one (tests of a
// package alone) need no checks.
type Metrics struct {
	Registry *prometheus.Registry

	requests    *prometheus.CounterVec
	latency     *prometheus.HistogramVec
	jobs        *prometheus.CounterVec
	jobDuration *prometheus.HistogramVec
	webhooks    *prometheus.CounterVec
	webhookTime *prometheus.HistogramVec
	credits     *prometheus.CounterVec
	rateLimited *prometheus.CounterVec
	pools       *poolCollector
}

// New returns a registry with the process and Go runtime collectors and
// the server's instruments.
func New() *Metrics {
	reg := prometheus.NewRegistry()
	m := &Metrics{
		Registry: reg,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "http_requests_total",
			Help: "HTTP requests answered, by route pattern (never the raw path), method and status."}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "http_request_duration_seconds",
			Help:    "Time to answer an HTTP request, by route pattern and method.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"route", "method"}),
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "jobs_total",
			Help: "River jobs worked by this process, by job kind and outcome (completed, failed, cancelled, snoozed)."}, []string{"kind", "outcome"}),
		jobDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "job_duration_seconds",
			Help:    "Time a River job's worker ran, by job kind.",
			Buckets: []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300}}, []string{"kind"}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "webhook_attempts_total",
			Help: "Webhook delivery attempts, by outcome (success, or the failure reason)."}, []string{"outcome"}),
		webhookTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "webhook_attempt_duration_seconds",
			Help:    "Time a webhook receiver took to answer an attempt, by outcome.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30}}, []string{"outcome"}),
		credits: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "credits_charged_total",
			Help: "Credits debited, by operation (a charge whose transaction rolled back counts too)."}, []string{"op"}),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rate_limit_rejections_total",
			Help: "Requests refused with 429 by a rate limit, by limit (project, ip, public, login)."}, []string{"limit"}),
		pools: &poolCollector{pools: map[string]*pgxpool.Pool{}},
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.latency, m.jobs, m.jobDuration, m.webhooks, m.webhookTime, m.credits, m.rateLimited, m.pools)
	return m
}

// Handler serves the registry in the Prometheus text (or negotiated)
// format, behind Protect(token).
func (m *Metrics) Handler(token string) http.Handler {
	return Protect(token, promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}))
}

// Protect answers only a request bearing token (none needed when it is
// empty); the comparison takes the same time wherever the tokens differ.
func Protect(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "a bearer token (PLINTH_METRICS_TOKEN) is required", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// Request records one answered HTTP request. route is the router's
// pattern, empty when no route matched.
func (m *Metrics) Request(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(d.Seconds())
}

// Job records a job worked to outcome after running d.
func (m *Metrics) Job(kind, outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.jobs.WithLabelValues(kind, outcome).Inc()
	m.jobDuration.WithLabelValues(kind).Observe(d.Seconds())
}

// WebhookAttempt records one delivery attempt.
func (m *Metrics) WebhookAttempt(outcome string, d time.Duration) {
	if m == nil {
		return
	}
	m.webhooks.WithLabelValues(outcome).Inc()
	m.webhookTime.WithLabelValues(outcome).Observe(d.Seconds())
}

// CreditsCharged records a debit of hundredths of a credit for op.
func (m *Metrics) CreditsCharged(op string, hundredths int64) {
	if m == nil {
		return
	}
	m.credits.WithLabelValues(op).Add(float64(hundredths) / 100)
}

// RateLimited records a request a limit refused.
func (m *Metrics) RateLimited(limit string) {
	if m == nil {
		return
	}
	m.rateLimited.WithLabelValues(limit).Inc()
}

// Up registers the gauge name, 1 when check succeeds at a scrape (within
// 2 s) and 0 when it fails: the database's reachability, which tells an
// operator why the figures read from it (Gauges) are missing from a
// scrape while the process's own series are still there.
func (m *Metrics) Up(name, help string, check func(ctx context.Context) error) {
	m.Registry.MustRegister(upCollector{desc: prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", name), help, nil, nil), check: check})
}

type upCollector struct {
	desc  *prometheus.Desc
	check func(ctx context.Context) error
}

func (c upCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c upCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	up := 1.0
	if err := c.check(ctx); err != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, up)
}

// Gauges registers a collector that runs read at every scrape (bounded by
// a timeout) and reports what it returns as gauges of name with labels:
// figures the database holds, such as queue depth or the project count.
// A failed read reports nothing for the scrape rather than a stale value,
// and the scrape still succeeds: during a database outage Prometheus
// keeps every series of the process (requests, pools, Go runtime), and
// an Up gauge says why the others are gone.
func (m *Metrics) Gauges(name, help string, labels []string, read func(ctx context.Context) ([]Sample, error)) {
	m.GaugeSet([]Gauge{{Name: name, Help: help, Labels: labels}}, func(ctx context.Context) ([][]Sample, error) {
		s, err := read(ctx)
		return [][]Sample{s}, err
	})
}

// Gauge names one gauge of a GaugeSet.
type Gauge struct {
	Name, Help string
	Labels     []string
}

// GaugeSet is Gauges for several gauges one read answers together (the
// shards' figures come from one probe of each server): read returns the
// samples of gauges[i] at [i].
func (m *Metrics) GaugeSet(gauges []Gauge, read func(ctx context.Context) ([][]Sample, error)) {
	c := &queryCollector{read: read}
	for _, g := range gauges {
		c.descs = append(c.descs, prometheus.NewDesc(prometheus.BuildFQName(Namespace, "", g.Name), g.Help, g.Labels, nil))
	}
	m.Registry.MustRegister(c)
}

// Sample is one value of a Gauges collector, with its label values.
type Sample struct {
	Labels []string
	Value  float64
}

type queryCollector struct {
	descs []*prometheus.Desc
	read  func(ctx context.Context) ([][]Sample, error)
}

func (c *queryCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *queryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	samples, err := c.read(ctx)
	if err != nil {
		// Not an invalid metric: promhttp would answer the whole scrape
		// 500, and Prometheus would lose every series of the process.
		return
	}
	if len(samples) != len(c.descs) { // a mistake of the code, not of the database: loud
		err = fmt.Errorf("metrics: %d lists of samples for %d gauges", len(samples), len(c.descs))
		for _, d := range c.descs {
			ch <- prometheus.NewInvalidMetric(d, err)
		}
		return
	}
	for i, d := range c.descs {
		for _, s := range samples[i] {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, s.Value, s.Labels...)
		}
	}
}

// WatchPool reports the statistics of pool (pgxpool's Stat) under
// plinth_db_pool_*, labelled with the pool's name: the central pool, and
// each shard's as the server starts its work there. Watching another
// pool under a name replaces the one watched before.
func (m *Metrics) WatchPool(name string, pool *pgxpool.Pool) {
	m.pools.mu.Lock()
	defer m.pools.mu.Unlock()
	m.pools.pools[name] = pool
}

// poolCollector reports the watched pools; one collector for them all,
// as a registry takes one collector per metric name.
type poolCollector struct {
	mu    sync.Mutex
	pools map[string]*pgxpool.Pool
}

type poolStat struct {
	name, help string
	typ        prometheus.ValueType
	value      func(*pgxpool.Stat) float64
}

var poolStats = []poolStat{
	{"acquired_conns", "Connections in use.", prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.AcquiredConns()) }},
	{"idle_conns", "Idle connections.", prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.IdleConns()) }},
	{"constructing_conns", "Connections being opened.", prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.ConstructingConns()) }},
	{"total_conns", "Open connections.", prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.TotalConns()) }},
	{"max_conns", "The pool's connection limit.", prometheus.GaugeValue, func(s *pgxpool.Stat) float64 { return float64(s.MaxConns()) }},
	{"acquires_total", "Connections acquired from the pool.", prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.AcquireCount()) }},
	{"empty_acquires_total", "Acquires that waited for a connection because none was idle.", prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.EmptyAcquireCount()) }},
	{"canceled_acquires_total", "Acquires canceled before a connection came.", prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.CanceledAcquireCount()) }},
	{"acquire_seconds_total", "Time spent acquiring connections.", prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return s.AcquireDuration().Seconds() }},
	{"empty_acquire_wait_seconds_total", "Time spent waiting for a connection when none was idle.", prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return s.EmptyAcquireWaitTime().Seconds() }},
	{"new_conns_total", "Connections opened.", prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.NewConnsCount()) }},
	{"max_lifetime_closed_total", "Connections closed for their age.", prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.MaxLifetimeDestroyCount()) }},
	{"max_idle_closed_total", "Connections closed for idleness.", prometheus.CounterValue, func(s *pgxpool.Stat) float64 { return float64(s.MaxIdleDestroyCount()) }},
}

func poolDesc(p poolStat) *prometheus.Desc {
	return prometheus.NewDesc(prometheus.BuildFQName(Namespace, "db_pool", p.name), p.help, []string{"pool"}, nil)
}

var poolDescs = func() []*prometheus.Desc {
	out := make([]*prometheus.Desc, len(poolStats))
	for i, p := range poolStats {
		out[i] = poolDesc(p)
	}
	return out
}()

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range poolDescs {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	pools := maps.Clone(c.pools)
	c.mu.Unlock()
	for name, pool := range pools {
		s := pool.Stat()
		for i, p := range poolStats {
			ch <- prometheus.MustNewConstMetric(poolDescs[i], p.typ, p.value(s), name)
		}
	}
}
