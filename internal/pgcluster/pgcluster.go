// Package pgcluster runs a private PostgreSQL cluster from the server
// binaries on the machine (initdb, pg_ctl), as the postgres user when the
// process runs as root. It serves `plinth serve` with no DATABASE_URL and
// the test harness.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cluster is a running (or runnable) cluster in Dir, listening on a unix
// socket in Dir and on 127.0.0.1:Port.
type Cluster struct {
	Dir  string
	Port int
	// Durable keeps PostgreSQL's crash safety (fsync, full-page writes,
	// synchronous commit), for the cluster `plinth serve` keeps data in.
	// Without it the cluster trades them for speed: test clusters, whose
	// data is thrown away.
	Durable bool
	bin     string
	cred    *syscall.Credential
	uid     int
	gid     int
}

// FindBin returns the directory holding initdb and pg_ctl: PATH first,
// then /usr/lib/postgresql/*/bin, newest version first.
func FindBin() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return filepath.Dir(real), nil
			}
			return filepath.Dir(p), nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", errors.New("no PostgreSQL server binaries found (initdb, pg_ctl): install postgresql")
}

func version(dir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(dir)))
	return n
}

// New prepares a cluster in dir (created if absent). As root the cluster
// runs as the postgres user, which then owns dir.
func New(dir string) (*Cluster, error) {
	bin, err := FindBin()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: abs, bin: bin, uid: -1, gid: -1}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("running as root needs a postgres user to run the cluster: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.uid, c.gid = uid, gid
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, err
	}
	if c.cred != nil {
		// The postgres user must be able to reach the directory.
		for d := filepath.Dir(abs); d != "/" && d != "."; d = filepath.Dir(d) {
			if fi, err := os.Stat(d); err == nil && fi.Mode().Perm()&0o001 == 0 {
				if err := os.Chmod(d, fi.Mode().Perm()|0o001); err != nil {
					return nil, err
				}
			}
		}
		if err := os.Chown(abs, c.uid, c.gid); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func (c *Cluster) dataDir() string { return filepath.Join(c.Dir, "data") }

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.Dir
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Start initialises the cluster when it is new, then starts it unless it is
// already running. It returns whether this call started the server.
func (c *Cluster) Start(ctx context.Context) (started bool, err error) {
	if _, err := os.Stat(filepath.Join(c.dataDir(), "PG_VERSION")); err != nil {
		args := []string{"-D", c.dataDir(), "-U", "postgres", "--auth=trust", "-E", "UTF8"}
		if !c.Durable {
			args = append(args, "--no-sync")
		}
		if err := c.run(ctx, "initdb", args...); err != nil {
			return false, err
		}
	}
	if port, ok := c.runningPort(); ok {
		c.Port = port
		return false, nil
	}
	if c.Port == 0 {
		if c.Port, err = freePort(); err != nil {
			return false, err
		}
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=300 -c shared_buffers=128MB", c.Port, c.Dir)
	if !c.Durable {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	if err := c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-o", opts, "-l", filepath.Join(c.Dir, "log"), "-w", "-t", "60", "start"); err != nil {
		return false, err
	}
	return true, nil
}

// runningPort reads postmaster.pid of a live server.
func (c *Cluster) runningPort() (int, bool) {
	b, err := os.ReadFile(filepath.Join(c.dataDir(), "postmaster.pid"))
	if err != nil {
		return 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, false
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	port, _ := strconv.Atoi(strings.TrimSpace(lines[3]))
	if pid <= 0 || port <= 0 || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	return port, true
}

// Stop shuts the server down (fast mode).
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return c.run(ctx, "pg_ctl", "-D", c.dataDir(), "-m", "fast", "-w", "stop")
}

// Restart stops and starts the server on the same port (for fault tests).
func (c *Cluster) Restart(ctx context.Context) error {
	if err := c.Stop(); err != nil {
		return err
	}
	_, err := c.Start(ctx)
	return err
}

// URL is the connection URL of database db over TCP on loopback.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
