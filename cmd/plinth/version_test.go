package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/plinth-dev/plinth/internal/openapi"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
)

// TestVersionFlag: plinth --version prints what plinth version prints,
// in the process (the build information's version) and in a binary
// built with -X main.version, which both print.
func TestVersionFlag(t *testing.T) {
	t.Parallel()
	want := "plinth " + buildVersion() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, errs, err := cli(t, nil, args...)
		if err != nil || out != want || errs != "" {
			t.Fatalf("plinth %s: %v, stdout %q (want %q), stderr %q", args[0], err, out, want, errs)
		}
	}
	dir := t.TempDir()
	for _, arg := range []string{"version", "--version"} {
		if r := runBin(t, dir, nil, arg); r.code != 0 || r.stdout != "plinth "+testVersion+"\n" || r.stderr != "" {
			t.Fatalf("plinth %s (built with %s): exit %d, stdout %q, stderr %q", arg, testVersion, r.code, r.stdout, r.stderr)
		}
	}
	empty(t, dir, "plinth version and --version")
}

// health is the body of GET /v1/health.
type health struct {
	Status  string `json:"status"`
	Version string `json:"version"`
	Build   string `json:"build"`
}

// getHealth reads GET /v1/health of base.
func getHealth(t *testing.T, base string) health {
	t.Helper()
	st, body, err := get(base+"/v1/health", "")
	var h health
	if err != nil || st != 200 || json.Unmarshal(body, &h) != nil {
		t.Fatalf("GET /v1/health: %d %s %v", st, body, err)
	}
	return h
}

// TestHealthReportsBuild: a server started by plinth serve reports in
// GET /v1/health the build plinth version prints (build), beside the
// API's version (version): in the process, and in a binary built with
// -X main.version.
func TestHealthReportsBuild(t *testing.T) {
	t.Parallel()
	db := pgtest.New(t)
	env := map[string]string{"DATABASE_URL": db.URL, "PLINTH_SECRET": "version-test-secret", "PLINTH_ADDR": freeAddr(t),
		"PLINTH_SPARE_SCHEMAS": "0", "PLINTH_STORAGE": "file://" + t.TempDir()}

	srv := startServe(t, env)
	if h := getHealth(t, srv.base); h.Build != buildVersion() || h.Version != openapi.Version || h.Status != "ok" {
		t.Fatalf("in-process serve: /v1/health %+v, want build %q and version %q", h, buildVersion(), openapi.Version)
	}
	srv.stop(t)

	env["PLINTH_ADDR"] = freeAddr(t)
	bin := startBin(t, t.TempDir(), env, "serve", "--no-migrate")
	bin.ready(t, 120*time.Second)
	if h := getHealth(t, bin.base); h.Build != testVersion || h.Version != openapi.Version {
		t.Fatalf("plinth built with %s: /v1/health %+v, want that build and version %q", testVersion, h, openapi.Version)
	}
	bin.stop(t)
}

// TestHelpWidth: plinth --help and plinth serve --help fit the width
// COLUMNS gives (but for a word longer than the line), and use more than
// 80 columns when it is wider.
func TestHelpWidth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// widest runs plinth args with COLUMNS=columns and returns its widest
	// line, requiring every line of more than one word to fit.
	widest := func(columns int, args ...string) int {
		t.Helper()
		r := runBin(t, dir, map[string]string{"COLUMNS": strconv.Itoa(columns)}, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "sage: plinth") {
			t.Fatalf("COLUMNS=%d plinth %s: exit %d\n%s%s", columns, strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
		w := 0
		for line := range strings.Lines(r.stdout) {
			line = strings.TrimRight(line, "\n")
			n := utf8.RuneCountInString(line)
			if n > columns && len(strings.Fields(line)) > 1 {
				t.Errorf("COLUMNS=%d plinth %s: a line of %d columns:\n%s", columns, strings.Join(args, " "), n, line)
			}
			w = max(w, n)
		}
		return w
	}
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}} {
		widest(60, args...)
		if w := widest(120, args...); w <= 80 || w > maxHelpWidth {
			t.Errorf("COLUMNS=120 plinth %s: the widest line has %d columns, want 81 to %d", strings.Join(args, " "), w, maxHelpWidth)
		}
	}
	empty(t, dir, "plinth --help")
}
