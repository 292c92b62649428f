// Command testdb runs a command against one throwaway PostgreSQL cluster
// (`make test-go` runs `go test` under it): it starts a cluster from the
// machine's initdb/pg_ctl, sets TEST_DATABASE_URL for the command, waits
// for it, stops the cluster and exits with the command's status.
//
// Every test binary then shares one server instead of starting its own
// (provisioning/pgtest builds the migrated template once, under an advisory
// lock, and gives each test a database cloned from it). Packages whose
// tests restart PostgreSQL (pgtest.MainPrivate) still get a private
// cluster. When TEST_DATABASE_URL is already set, testdb only runs the
// command.
//
//	go run ./cmd/testdb go test -race ./...
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/plinth-dev/plinth/internal/pgcluster"
)

func main() {
	code, err := run(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "testdb:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// maxConnections is the shared cluster's limit: two test binaries run at
// once (go test -p), each with its test databases' pools and the servers
// some of them start.
const maxConnections = 1000

func run(args []string) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("usage: testdb command [args...]")
	}
	if os.Getenv("TEST_DATABASE_URL") != "" {
		return command(args, os.Environ())
	}
	dir, err := os.MkdirTemp("", "plinth-pgtest-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	c, err := pgcluster.New(dir)
	if err != nil {
		return 1, err
	}
	c.MaxConnections = maxConnections
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	_, err = c.Start(ctx)
	cancel()
	if err != nil {
		return 1, fmt.Errorf("start the test cluster: %w", err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "testdb: stop the test cluster:", err)
		}
	}()
	return command(args, append(os.Environ(), "TEST_DATABASE_URL="+c.URL("postgres")))
}

// command runs args with env, passing on SIGINT and SIGTERM so the
// cluster is stopped after the command ends however it is stopped.
func command(args, env []string) (int, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	if err := cmd.Start(); err != nil {
		return 1, err
	}
	go func() {
		for s := range sig {
			_ = cmd.Process.Signal(s)
		}
	}()
	err := cmd.Wait()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}
