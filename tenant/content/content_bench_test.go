package content_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/content"
)

// BenchmarkPublicBulk measures GET /v1/public/content/bulk with 50 keys
// through the whole server (rate limiter, project resolution, scoped
// transaction, fallback query, ETag) against a bare pgx handler running the
// same query on the same pool, side by side in one run. It reports each
// side's throughput and p99 and their throughput ratio (target >= 0.6).
func BenchmarkPublicBulk(b *testing.B) {
	env := apitest.New(b, apitest.WithEnv("PLINTH_PUBLIC_RATE", "100000000/100000000"))
	p := env.NewProject("scale")
	var updates []map[string]any
	var keys []string
	for i := 0; i < 50; i++ {
		k := fmt.Sprintf("section%02d.text", i)
		keys = append(keys, k)
		updates = append(updates, map[string]any{"key": k, "value": strings.Repeat("Words of the site. ", 5)})
		if i%2 == 0 { // half have a French value, half fall back to English
			updates = append(updates, map[string]any{"key": k, "value": strings.Repeat("Des mots du site. ", 5), "lang": "fr"})
		}
	}
	env.Do("PUT", "/v1/content", p.Key, map[string]any{"updates": updates}).Expect(b, 200)
	query := "keys=" + strings.Join(keys, ",") + "&lang=fr"
	plinthURL := env.URL + "/v1/public/content/bulk?" + query

	// The bare handler: the same query on the same pool, schema-qualified,
	// with no transaction, no middleware and no ETag.
	pool := env.Server.Pool
	schema := pgx.Identifier{p.Schema}.Sanitize()
	bareSQL := strings.Replace(content.BulkSQL, "FROM content_values", "FROM "+schema+".content_values", 1)
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ks := strings.Split(r.URL.Query().Get("keys"), ",")
		lang := r.URL.Query().Get("lang")
		rows, err := pool.Query(r.Context(), bareSQL, ks, []string{lang, "en"}, nil, nil)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		data := map[string]string{}
		for rows.Next() {
			var k, v, l string
			if err := rows.Scan(&k, &v, &l); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			data[k] = v
		}
		rows.Close()
		missing := []string{}
		for _, k := range ks {
			if _, ok := data[k]; !ok {
				missing = append(missing, k)
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(content.Bulk{Data: data, Lang: lang, Missing: missing})
	}))
	defer bare.Close()
	bareURL := bare.URL + "/bulk?" + query

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	get := func(url string, header http.Header) {
		req, _ := http.NewRequest("GET", url, nil)
		req.Header = header
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || n < 1000 {
			b.Fatalf("%s: %d (%d bytes)", url, res.StatusCode, n)
		}
	}
	ph := http.Header{"X-Service-Project-Key": {p.ID}}

	const workers = 8
	// measure sends n requests with the given concurrency and returns the
	// throughput and the latencies.
	measure := func(url string, h http.Header, n int) (float64, []time.Duration) {
		lat := make([]time.Duration, n)
		var next sync.Mutex
		i := 0
		var wg sync.WaitGroup
		start := time.Now()
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					next.Lock()
					j := i
					i++
					next.Unlock()
					if j >= n {
						return
					}
					t0 := time.Now()
					get(url, h)
					lat[j] = time.Since(t0)
				}
			}()
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds(), lat
	}
	// Warm both paths (connections, the project cache, plans).
	measure(plinthURL, ph, 200)
	measure(bareURL, nil, 200)

	const rounds = 10
	per := max(b.N/rounds, 50)
	var pLat, bLat []time.Duration
	var pTime, bTime float64
	b.ResetTimer()
	// Alternate short rounds so that load from other processes on a shared
	// machine falls on both sides alike.
	for round := 0; round < rounds; round++ {
		rps, lat := measure(plinthURL, ph, per)
		pTime += float64(per) / rps
		pLat = append(pLat, lat...)
		rps, lat = measure(bareURL, nil, per)
		bTime += float64(per) / rps
		bLat = append(bLat, lat...)
	}
	b.StopTimer()
	pRPS, bRPS := float64(len(pLat))/pTime, float64(len(bLat))/bTime
	b.ReportMetric(pRPS, "plinth_req/s")
	b.ReportMetric(bRPS, "bare_req/s")
	b.ReportMetric(pRPS/bRPS, "ratio")
	b.ReportMetric(p99(pLat), "plinth_p99_ms")
	b.ReportMetric(p99(bLat), "bare_p99_ms")
}

func p99(lat []time.Duration) float64 {
	s := slices.Clone(lat)
	slices.Sort(s)
	return float64(s[len(s)*99/100]) / float64(time.Millisecond)
}
