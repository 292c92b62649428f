// Package loadgen is the HTTP load generator of the benchmark commands
// (cmd/benchscale, cmd/benchhttp): keep-alive clients sending requests
// back to back for a fixed time, as wrk does, with latency percentiles.
package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Result is one round: completed requests per second and latency
// percentiles.
type Result struct {
	Requests int // answered with 200
	Rate     float64
	P50, P99 time.Duration
}

// Run sends, from conns concurrent clients, the requests next builds (seq
// counts them from 1) for d, and measures each. Any answer but 200, or a
// transport error, fails the round: a benchmark of errors measures
// nothing.
func Run(ctx context.Context, client *http.Client, conns int, d time.Duration, next func(seq int64) *http.Request) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	per := make([][]time.Duration, conns)
	var failed, seq atomic.Int64
	var firstErr atomic.Value
	start := time.Now()
	var wg sync.WaitGroup
	for c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req := next(seq.Add(1)).WithContext(ctx)
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != http.StatusOK {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, res.Status)
					continue
				}
				per[c] = append(per[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n := failed.Load(); n > 0 {
		return Result{}, fmt.Errorf("%d failed requests, first: %v", n, firstErr.Load())
	}
	all := slices.Concat(per...)
	if len(all) == 0 {
		return Result{}, errors.New("no request completed")
	}
	slices.Sort(all)
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(float64(len(all))*p))] }
	return Result{Requests: len(all), Rate: float64(len(all)) / elapsed.Seconds(), P50: pct(0.5), P99: pct(0.99)}, nil
}

// Call sends one JSON request (body marshalled when not nil, a bearer
// token when not empty) and decodes a 2xx answer into out when not nil;
// any other status is an error carrying the answer.
func Call(ctx context.Context, client *http.Client, method, url, bearer string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}
