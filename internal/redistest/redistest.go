// Package redistest starts a throwaway redis-server (Debian's package) for
// tests. Under CI=true a test that cannot get one fails; elsewhere it is
// skipped.
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Start runs redis-server on a free loopback port for the test and returns
// its redis:// URL. The server is stopped when the test ends.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		fail(t, fmt.Errorf("redis-server not found (apt-get install redis-server): %w", err))
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		port, err := freePort()
		if err != nil {
			fail(t, err)
		}
		cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--dir", t.TempDir(), "--daemonize", "no", "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			fail(t, err)
		}
		url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
		if lastErr = wait(url, cmd); lastErr == nil {
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			})
			return url
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
	fail(t, lastErr)
	return ""
}

func wait(url string, cmd *exec.Cmd) error {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return err
	}
	c := redis.NewClient(opt)
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if cmd.ProcessState != nil || time.Now().After(deadline) {
			return fmt.Errorf("redis-server did not answer: %w", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func fail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("redis-server is required: %v", err)
	}
	t.Skipf("redis-server unavailable: %v", err)
}
