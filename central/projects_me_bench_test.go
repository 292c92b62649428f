package central_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
)

// bareHandler is the baseline: net/http and pgx only, running the key
// lookup query of central.Resolve (uncached) on the same pool and writing
// the same Project JSON.
func bareHandler(pool *pgxpool.Pool, secret []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		var (
			keyID   string
			scopes  []string
			test    bool
			revoked *time.Time
		)
		p, err := central.ScanProject(pool.QueryRow(r.Context(), central.ResolveSQL, central.HashKey(secret, key)), &keyID, &scopes, &test, &revoked)
		if err != nil || revoked != nil {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(central.ToProjectJSON(p))
	})
}

// load sends n GET requests to url from clients goroutines over
// keep-alive connections and returns the wall time and every latency.
func load(client *http.Client, url, key string, n, clients int) (time.Duration, []time.Duration, error) {
	lat := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, clients)
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				req, _ := http.NewRequest("GET", url, nil)
				req.Header.Set("Authorization", "Bearer "+key)
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					errc <- err
					return
				}
				_, err = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				lat[i] = time.Since(t0)
				if err != nil || res.StatusCode != 200 {
					errc <- fmt.Errorf("status %d, %v", res.StatusCode, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return time.Since(start), lat, <-errc
}

// BenchmarkProjectsMe compares authenticated GET /v1/projects/me through
// the whole server with the bare handler, both on loopback HTTP with 16
// concurrent keep-alive clients and the same pool, alternating in rounds.
// "uncached" runs the server with PLINTH_KEY_CACHE_TTL=0, so each request
// runs Resolve's query, the same SELECT as the baseline: the ratio is the
// cost of the framework (router, request id, problem plumbing, scope
// middleware). "cached" is the server as deployed (30 s key cache).
func BenchmarkProjectsMe(b *testing.B) {
	const clients = 16
	ctx := context.Background()
	env := apitest.New(b)
	p := env.CreateProject(central.ProjectParams{Name: "Bench", Plan: "enterprise"})
	// No request limit in the way of the measurement.
	limit := 1 << 30
	if err := env.Server.Central.SetRateOverride(ctx, p.ID, &limit, &limit, nil); err != nil {
		b.Fatal(err)
	}
	uncachedCfg := env.Config
	uncachedCfg.KeyCacheTTL = 0
	uncached, err := central.NewServer(ctx, uncachedCfg, env.DB.Pool, slog.New(slog.DiscardHandler), central.Options{})
	if err != nil {
		b.Fatal(err)
	}
	servers := map[string]*httptest.Server{
		"cached":   env.HTTP,
		"uncached": httptest.NewServer(uncached.Handler),
		"bare":     httptest.NewServer(bareHandler(env.DB.Pool, env.Server.Central.Secret())),
	}
	defer servers["uncached"].Close()
	defer servers["bare"].Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxIdleConns: 4 * clients}}
	defer client.CloseIdleConnections()

	for _, name := range []string{"uncached", "cached"} {
		b.Run(name+"_vs_bare", func(b *testing.B) {
			var took = map[string]time.Duration{}
			lats := map[string][]time.Duration{}
			const rounds = 8
			per := max(b.N/rounds, clients)
			for r := 0; r < rounds; r++ {
				for _, side := range []string{name, "bare"} {
					d, lat, err := load(client, servers[side].URL+"/v1/projects/me", p.Key, per, clients)
					if err != nil {
						b.Fatalf("%s: %v", side, err)
					}
					took[side] += d
					lats[side] = append(lats[side], lat...)
				}
			}
			n := float64(rounds * per)
			plinthRPS, bareRPS := n/took[name].Seconds(), n/took["bare"].Seconds()
			b.ReportMetric(plinthRPS, "plinth_req/s")
			b.ReportMetric(bareRPS, "bare_req/s")
			b.ReportMetric(plinthRPS/bareRPS, "ratio")
			b.ReportMetric(ms(percentile(lats[name], 0.99)), "plinth_p99_ms")
			b.ReportMetric(ms(percentile(lats["bare"], 0.99)), "bare_p99_ms")
		})
	}
}
