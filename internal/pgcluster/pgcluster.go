// Package pgcluster runs a private PostgreSQL cluster from the server
// binaries on the machine (initdb, pg_ctl), as the postgres user when the
// process runs as root. It serves `plinth serve` with no DATABASE_URL and
// the test harness.
package pgcluster

import (
	"bytes"
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

// AutovacuumNaptime is the private cluster's autovacuum_naptime: the
// setting operators of shards with thousands of mostly idle schemas
// should use too (docs/operations.md, "Autovacuum on shards with many
// schemas"), in whole minutes.
const AutovacuumNaptime = 10 * time.Minute

// ReplicationSettings are the server options every cluster runs with
// (postgres -c): what a shard needs for the logical replication of a
// project's move, with room for several moves at once (PLINTH_MOVE_CONCURRENCY
// is 4) as source and as target: each holds a slot and a WAL sender on
// its source and an apply worker on its target (it copies the rows
// itself; table-sync workers serve subscriptions that copy their own).
const ReplicationSettings = "-c wal_level=logical -c max_replication_slots=32 -c max_wal_senders=32 " +
	"-c max_worker_processes=32 -c max_logical_replication_workers=24 -c max_sync_workers_per_subscription=4"

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
	// MaxConnections is the server's max_connections; 0 means 300.
	MaxConnections int
	// Settings are more server settings, each name=value, given after
	// the defaults so they win (a test's server with wal_level=replica).
	// Start reads them, so a Restart applies a change.
	Settings []string
	bin      string
	users    *os.File // held while attached (Attach)
	cred     *syscall.Credential
	uid      int
	gid      int
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

// ErrUnreachable is returned by New, as root, when the postgres user
// cannot search a directory above the cluster's: the cluster cannot run
// there unless that directory's permissions change, which New never does
// on its own.
var ErrUnreachable = errors.New("the postgres user cannot reach the cluster's directory")

// New prepares a cluster in dir (created if absent). As root the cluster
// runs as the postgres user, which then owns dir; the directories New
// creates above dir are searchable by it (mode 0711), and one that
// exists and is not makes New fail with ErrUnreachable naming it.
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
		existing := filepath.Dir(abs)
		for {
			if _, err := os.Stat(existing); err == nil || existing == "/" {
				break
			}
			existing = filepath.Dir(existing)
		}
		if err := searchable(existing, uid, gid); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(abs, 0o711); err != nil {
		return nil, err
	}
	if err := os.Chmod(abs, 0o700); err != nil {
		return nil, err
	}
	if c.cred != nil {
		if err := os.Chown(abs, c.uid, c.gid); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// searchable checks that the user uid (group gid) may search dir and each
// directory above it, by their mode bits.
func searchable(dir string, uid, gid int) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		perm := fi.Mode().Perm()
		bit := os.FileMode(0o001)
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			switch {
			case int(st.Uid) == uid:
				bit = 0o100
			case int(st.Gid) == gid:
				bit = 0o010
			}
		}
		if perm&bit == 0 {
			return fmt.Errorf("%w: %s (mode %04o) is not searchable by user postgres", ErrUnreachable, d, perm)
		}
		if d == "/" || d == filepath.Dir(d) {
			return nil
		}
	}
}

// PostgresHome makes a new directory for a cluster under the postgres
// user's home, which that user can always reach, and returns it. name
// starts its base name.
func PostgresHome(name string) (string, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return "", err
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	parent := filepath.Join(u.HomeDir, "plinth")
	if err := os.MkdirAll(parent, 0o711); err != nil {
		return "", err
	}
	if err := os.Chown(parent, uid, gid); err != nil {
		return "", err
	}
	return os.MkdirTemp(parent, name+"-")
}

// Attach starts the cluster unless it runs and registers this process
// (each call, in fact) as one of its users until Detach. Users hold a
// shared lock on users.lock in Dir; starting and stopping take the
// exclusive start.lock, so a process never stops a cluster another one
// uses, nor starts one another is stopping. It returns whether this call
// started the server.
func (c *Cluster) Attach(ctx context.Context) (started bool, err error) {
	start, err := lockFile(ctx, filepath.Join(c.Dir, "start.lock"), syscall.LOCK_EX)
	if err != nil {
		return false, err
	}
	defer start.Close() // closing the file releases the lock
	users, err := lockFile(ctx, filepath.Join(c.Dir, "users.lock"), syscall.LOCK_SH)
	if err != nil {
		return false, err
	}
	if started, err = c.Start(ctx); err != nil {
		users.Close()
		return false, err
	}
	c.users = users
	return started, nil
}

// Detach ends what Attach began and stops the server when no other
// process is attached. It returns whether it stopped it.
func (c *Cluster) Detach() (stopped bool, err error) {
	if c.users == nil {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	start, err := lockFile(ctx, filepath.Join(c.Dir, "start.lock"), syscall.LOCK_EX)
	if err != nil {
		c.users.Close()
		c.users = nil
		return false, err
	}
	defer start.Close()
	// Under start.lock nobody attaches, so the exclusive lock is granted
	// only when this process is the last user left.
	last := syscall.Flock(int(c.users.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
	c.users.Close()
	c.users = nil
	if !last {
		return false, nil
	}
	return true, c.Stop()
}

// Revive starts the server again, on its port, when this process is
// attached to it and it no longer runs (its postmaster died, or was
// stopped behind Plinth's back). It returns whether it started it. Like
// Attach it holds start.lock, so of several processes sharing the cluster
// one restarts it and the others find it running. A postmaster killed
// outright leaves backends that hold its shared memory for a moment, and
// the start fails until they are gone: the caller tries again.
func (c *Cluster) Revive(ctx context.Context) (started bool, err error) {
	if c.users == nil {
		return false, nil
	}
	if _, ok := c.runningPort(); ok {
		return false, nil
	}
	start, err := lockFile(ctx, filepath.Join(c.Dir, "start.lock"), syscall.LOCK_EX)
	if err != nil {
		return false, err
	}
	defer start.Close()
	if c.users == nil {
		return false, nil
	}
	return c.Start(ctx)
}

// lockFile opens (creating) path and takes the flock how on it, waiting
// for it until ctx ends.
func lockFile(ctx context.Context, path string, how int) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for %s, held by another plinth process: %w", path, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
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
	// autovacuum_naptime: every round, an autovacuum worker reads all of
	// pg_class and the statistics of each table, a cost that grows with
	// the relations of every project schema (about a million at 10,000
	// projects) whether or not any is used. At PostgreSQL's default of a
	// minute that round alone was most of what an idle shard cost
	// (docs/performance.md, issue 18); every 10 minutes it is a tenth
	// (about 5.6 s of one core per round at 10,000 projects), and a busy
	// table waits at most 10 minutes longer for its vacuum.
	maxConns := c.MaxConnections
	if maxConns == 0 {
		maxConns = 300
	}
	// wal_level=logical: moving a project to another shard replicates its
	// tables with logical replication (a shard must run it, AddShard
	// checks), so every cluster this package runs (plinth serve's, the
	// tests') can be a shard and a source of a move. Each move holds a
	// replication slot and a WAL sender for its subscription.
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c max_connections=%d -c shared_buffers=128MB -c autovacuum_naptime=%dmin %s",
		c.Port, c.Dir, maxConns, int(AutovacuumNaptime.Minutes()), ReplicationSettings)
	if !c.Durable {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	for _, set := range c.Settings {
		opts += " -c " + set
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
	if pid <= 0 || port <= 0 || !alive(pid) {
		return 0, false
	}
	return port, true
}

// alive reports whether process pid runs: it exists, and it is not a
// zombie (a postmaster that died and that its parent, which pg_ctl's exit
// made init or a subreaper, has not reaped yet still answers kill 0).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc: kill 0 is all there is
	}
	end := bytes.LastIndexByte(b, ')')
	return end < 0 || end+2 >= len(b) || b[end+2] != 'Z'
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
