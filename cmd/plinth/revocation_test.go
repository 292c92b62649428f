package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/apitest"
)

// buildPlinth compiles this command into a temporary directory.
func buildPlinth(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "plinth")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// TestRevocationAcrossProcesses revokes keys through one instance while a
// second `plinth serve` process on the same database holds them in its
// cache: a key revoked through the API answers 401 at once on the first
// instance and, through LISTEN/NOTIFY, on the second before its cache entry
// could have expired; a key revoked behind the API's back (no notification) still
// ends within the TTL. The process then stops cleanly on SIGTERM.
func TestRevocationAcrossProcesses(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second
	bin := buildPlinth(t)
	env := apitest.New(t)
	p := env.NewProject("build")
	viaAPI := p.NewKey(false, "project:read")
	behindBack := p.NewKey(false, "project:read")

	addr := freeAddr(t)
	var logs syncBuffer
	cmd := exec.Command(bin, "serve", "--no-migrate", "--no-workers")
	cmd.Env = append(os.Environ(),
		"DATABASE_URL="+env.DB.URL,
		"PLINTH_SECRET="+env.Config.Secret,
		"PLINTH_ADDR="+addr,
		"PLINTH_KEY_CACHE_TTL="+ttl.String(),
	)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
		}
	})
	second := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		if st, _, err := get(second+"/v1/health", ""); err == nil && st == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("second process never became healthy:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

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
	if status(env.URL, viaAPI) != 200 {
		t.Fatal("the key must work before revocation")
	}
	// The second process caches the key during this request, so without a
	// notification it would answer 200 until warmed+TTL at the earliest.
	warmed := time.Now()
	if status(second, viaAPI) != 200 {
		t.Fatal("the key must work before revocation")
	}
	env.Do("DELETE", "/v1/api-keys/"+keyID, p.Key, nil).Expect(t, 204)
	revoked := time.Now()
	env.Do("GET", "/v1/projects/me", viaAPI, nil).Problem(t, 401, "unauthorized")
	for status(second, viaAPI) != 401 {
		if time.Since(warmed) >= ttl {
			t.Fatalf("still 200 on the second process %v after revocation: the notification did not arrive", time.Since(revoked))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("API revocation reached the second process in %v (TTL %v)", time.Since(revoked), ttl)

	// Revoked in the database with no notification: the second process
	// keeps serving its cached entry, but no longer than the TTL.
	before := time.Now()
	if status(second, behindBack) != 200 {
		t.Fatal("the key must work before revocation")
	}
	cached := time.Now()
	hash := central.HashKey(env.Server.Central.Secret(), behindBack)
	if _, err := env.DB.Pool.Exec(context.Background(), `UPDATE central.api_keys SET revoked_at = now() WHERE hash = $1`, hash); err != nil {
		t.Fatal(err)
	}
	if time.Since(before) < ttl-500*time.Millisecond && status(second, behindBack) != 200 {
		t.Fatal("a revocation with no notification ended at once: the second process did not cache the key")
	}
	for status(second, behindBack) != 401 {
		if d := time.Since(cached); d > ttl+500*time.Millisecond {
			t.Fatalf("still 200 %v after the key was cached (TTL %v)", d, ttl)
		}
		time.Sleep(10 * time.Millisecond)
	}
	env.Do("GET", "/v1/projects/me", behindBack, nil).Problem(t, 401, "unauthorized")

	// SIGTERM: graceful shutdown, exit status 0.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, logs.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no exit within 20 s of SIGTERM")
	}
}
