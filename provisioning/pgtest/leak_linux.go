package pgtest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36

// watchClusters makes the test binary the subreaper of its descendants:
// a process whose parent exits is then reparented to it rather than to
// init. pg_ctl starts the postmaster as its own child and exits, so every
// PostgreSQL server the tests start (through pgtest, pgcluster or a plinth
// serve process of theirs) becomes a child of the test binary, and one
// left running when the tests end is found among its children (and only
// its own: a cluster another test binary runs at the same time is not).
// It reports whether it could.
func watchClusters() bool {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
	return errno == 0
}

// clustersLeft waits up to grace for the PostgreSQL processes among the
// binary's children to exit, and returns a description of each that did
// not stop cleanly: one still running then (it is asked to shut down,
// SIGINT being PostgreSQL's fast shutdown, and given grace to do so), or
// one that ended by a signal or an error status. A server stopped with
// pg_ctl exits 0; one whose data directory a test's cleanup removed while
// it ran aborts on its own a few seconds later.
func clustersLeft(grace time.Duration) []string {
	var out []string
	deadline := time.Now().Add(grace)
	for {
		live, ended := postgresChildren()
		out = append(out, ended...)
		if len(live) == 0 {
			return out
		}
		if time.Now().After(deadline) {
			for _, pid := range live {
				out = append(out, fmt.Sprintf("pid %d still runs: %s", pid, cmdline(pid)))
				_ = syscall.Kill(pid, syscall.SIGINT)
			}
			for stop := time.Now().Add(grace); time.Now().Before(stop); time.Sleep(100 * time.Millisecond) {
				if live, _ := postgresChildren(); len(live) == 0 {
					break
				}
			}
			return out
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// postgresChildren returns the running postgres processes whose parent
// is this process, reaps those that have exited, and describes those of
// them that did not exit cleanly.
func postgresChildren() (live []int, unclean []string) {
	me := os.Getpid()
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || end < open {
			continue
		}
		fields := bytes.Fields(b[end+1:])
		if len(fields) < 2 || string(b[open+1:end]) != "postgres" {
			continue
		}
		pid, _ := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
		ppid, _ := strconv.Atoi(string(fields[1]))
		if ppid != me {
			continue
		}
		if string(fields[0]) != "Z" {
			live = append(live, pid)
			continue
		}
		var ws syscall.WaitStatus
		if got, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil); err != nil || got != pid {
			continue
		}
		switch {
		case ws.Signaled():
			unclean = append(unclean, fmt.Sprintf("pid %d was not stopped: it ended by signal %v (its data directory removed while it ran?)", pid, ws.Signal()))
		case ws.ExitStatus() != 0:
			unclean = append(unclean, fmt.Sprintf("pid %d was not stopped: it exited with status %d", pid, ws.ExitStatus()))
		}
	}
	return live, unclean
}

// cmdline is a process's command line, its data directory included.
func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return "(exited)"
	}
	return string(bytes.TrimSpace(bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
}

// Crash kills the PostgreSQL server whose postmaster is pid with SIGKILL,
// as a crash would, and reaps, in the background, it and the backends it
// leaves (they exit on their own once their postmaster is gone): under
// the subreaper (Main) they become this process's children, and an
// unreaped postmaster would keep its pid in use, which stops a new server
// on its data directory from starting. The binary's leak check then does
// not count a death the test caused. wait waits for the reaping (up to
// 30 s).
func Crash(t testing.TB, pid int) (wait func()) {
	t.Helper()
	kids := childrenOf(pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill postmaster %d: %v", pid, err)
	}
	left := append([]int{pid}, kids...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for deadline := time.Now().Add(30 * time.Second); len(left) > 0 && time.Now().Before(deadline); {
			var still []int
			for _, p := range left {
				var ws syscall.WaitStatus
				got, err := syscall.Wait4(p, &ws, syscall.WNOHANG, nil)
				if got == p || (err != nil && syscall.Kill(p, 0) != nil) {
					continue // reaped, or gone and reaped elsewhere
				}
				still = append(still, p)
			}
			left = still
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() {
		t.Helper()
		<-done
		if len(left) > 0 {
			t.Fatalf("processes of the killed server %d did not end within 30 s: %v", pid, left)
		}
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		end := bytes.LastIndexByte(b, ')')
		open := bytes.IndexByte(b, '(')
		if open < 0 || end < open {
			continue
		}
		fields := bytes.Fields(b[end+1:])
		if len(fields) < 2 {
			continue
		}
		if ppid, _ := strconv.Atoi(string(fields[1])); ppid == pid {
			c, _ := strconv.Atoi(string(bytes.TrimSpace(b[:open])))
			out = append(out, c)
		}
	}
	return out
}
