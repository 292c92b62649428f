package main

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
)

// startChild starts `plinth serve` from bin over env's database with the
// key cache TTL ttl; waitHealthy then waits for it to answer.
func startChild(t *testing.T, bin string, env *apitest.Env, ttl time.Duration) *bgServe {
	t.Helper()
	addr := freeAddr(t)
	c := &bgServe{base: "http://" + addr, logs: &syncBuffer{}}
	cmd := exec.Command(bin, "serve", "--no-migrate", "--no-workers")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+env.DB.URL,
		"PLINTH_SECRET="+env.Config.Secret,
		"PLINTH_ADDR="+addr,
		"PLINTH_KEY_CACHE_TTL="+ttl.String(),
		"PLINTH_SPARE_SCHEMAS=0", // no schema building beside the test
	)
	cmd.Stdout, cmd.Stderr = c.logs, c.logs
	c.process = startProcess(t, cmd)
	t.Cleanup(func() { c.signalWait(os.Kill, 10*time.Second) })
	return c
}

func (c *bgServe) waitHealthy(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, _, err := get(c.base+"/v1/health", ""); err == nil && st == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("plinth serve at %s never became healthy:\n%s", c.base, c.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRevocationAcrossProcesses revokes keys through one instance while
// other `plinth serve` processes on the same database hold them in their
// caches. The assertions do not depend on how fast the machine is:
//
//   - a process whose cache TTL is an hour ("long") answers 401 for a key
//     revoked through the API within seconds: only the LISTEN/NOTIFY
//     invalidation explains it;
//   - a key revoked behind the API's back (no notification) still answers
//     200 on "long" afterwards: it is cached;
//   - on a process with a short TTL ("short") that key answers 401 to any
//     request sent more than the TTL after it was cached, and to none
//     answered before the TTL could have run out.
//
// The process then stops cleanly on SIGTERM.
func TestRevocationAcrossProcesses(t *testing.T) {
	t.Parallel()
	const longTTL, shortTTL = time.Hour, 2 * time.Second
	bin := plinthBin(t)
	env := apitest.New(t)
	p := env.NewProject("build")
	// The polls below must never meet the rate limit.
	unlimited := 1_000_000
	if err := env.Server.Central.SetRateOverride(context.Background(), p.ID, &unlimited, &unlimited, nil); err != nil {
		t.Fatal(err)
	}
	viaAPI := p.NewKey(false, "project:read")
	behindBack := p.NewKey(false, "project:read")

	long := startChild(t, bin, env, longTTL)
	short := startChild(t, bin, env, shortTTL)
	long.waitHealthy(t)
	short.waitHealthy(t)

	status := func(base, key string) int {
		t.Helper()
		st, body, err := get(base+"/v1/projects/me", key)
		if err != nil {
			t.Fatal(err)
		}
		if st != 200 && st != 401 {
			t.Fatalf("status %d: %s", st, body)
		}
		return st
	}
	// Revoked through the first instance's API: both instances hold the
	// key in their caches from the requests just before.
	var keyID string
	for _, k := range env.Do("GET", "/v1/projects/me/api-keys", p.Key, nil).Expect(t, 200).JSON(t)["data"].([]any) {
		if m := k.(map[string]any); m["masked"] == "pln_live_…"+viaAPI[len(viaAPI)-4:] {
			keyID = m["id"].(string)
		}
	}
	if status(env.URL, viaAPI) != 200 || status(long.base, viaAPI) != 200 {
		t.Fatal("the key must work before revocation")
	}
	env.Do("DELETE", "/v1/api-keys/"+keyID, p.Key, nil).Expect(t, 204)
	revoked := time.Now()
	env.Do("GET", "/v1/projects/me", viaAPI, nil).Problem(t, 401, "unauthorized")
	// "long" caches the key for an hour: a 401 now can only come from the
	// notification.
	for status(long.base, viaAPI) != 401 {
		if time.Since(revoked) > 30*time.Second {
			t.Fatalf("still 200 on the other process %v after revocation: the notification did not arrive", time.Since(revoked))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("API revocation reached the other process in %v (TTL %v)", time.Since(revoked), longTTL)

	// Revoked in the database with no notification: both processes cache
	// the key first.
	if status(long.base, behindBack) != 200 {
		t.Fatal("the key must work before revocation")
	}
	warming := time.Now() // "short" caches the key no earlier than this
	if status(short.base, behindBack) != 200 {
		t.Fatal("the key must work before revocation")
	}
	cached := time.Now() // and no later than this
	hash := central.HashKey(env.Server.Central.Secret(), behindBack)
	if _, err := env.DB.Pool.Exec(context.Background(), `UPDATE central.api_keys SET revoked_at = now() WHERE hash = $1`, hash); err != nil {
		t.Fatal(err)
	}
	// "long" keeps serving its cached entry: its TTL is an hour away.
	if status(long.base, behindBack) != 200 {
		t.Fatal("a revocation with no notification ended at once: the process did not cache the key")
	}
	// "short" serves it until its TTL ends, and not after.
	for {
		sent := time.Now()
		st := status(short.base, behindBack)
		answered := time.Now()
		if st == 401 {
			if answered.Before(warming.Add(shortTTL)) {
				t.Fatalf("401 %v after the key was cached, before the TTL (%v) ran out: the cache entry was not used", answered.Sub(warming), shortTTL)
			}
			break
		}
		if d := sent.Sub(cached); d > shortTTL+100*time.Millisecond {
			t.Fatalf("still 200 for a request sent %v after the key was cached (TTL %v)", d, shortTTL)
		}
		time.Sleep(10 * time.Millisecond)
	}
	env.Do("GET", "/v1/projects/me", behindBack, nil).Problem(t, 401, "unauthorized")

	// SIGTERM: graceful shutdown, exit status 0.
	long.stopWithin(t, 20*time.Second)
}
