package central_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// lintDir holds the two OpenAPI linters the document must satisfy, pinned
// by its package.json and package-lock.json: Redocly CLI with its
// recommended ruleset, and Spectral with spectral:oas (.spectral.yaml).
// The few places where a rule and the contract disagree are excepted
// there, each with its reason: Spectral's overrides, Redocly's
// .redocly.lint-ignore.yaml (found in the directory redocly runs in).
const lintDir = "../testdata/openapi-lint"

// lintedDocument is openapi.json as the linters are given it, relative to
// lintDir: the exceptions name it so.
const lintedDocument = "../../central/openapi.json"

// TestOpenAPILinters: Redocly's recommended ruleset and Spectral's
// spectral:oas report no error and no warning on the document. Under
// CI=true a machine without node fails the test instead of skipping it.
func TestOpenAPILinters(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		apitest.Unavailable(t, "node is not installed (apt-get install nodejs npm)")
	}
	dir, err := filepath.Abs(lintDir)
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		// .ci/run installs them; without it, so does the test. No install
		// scripts: the only one (@scarf/scarf, a dependency of Redocly
		// CLI) reports the installation to its vendor.
		if _, err := exec.LookPath("npm"); err != nil {
			apitest.Unavailable(t, "npm is not installed (apt-get install npm)")
		}
		if out, err := command(t, dir, "npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts").CombinedOutput(); err != nil {
			apitest.Unavailable(t, "npm ci in %s: %v\n%s", lintDir, err, out)
		}
	}
	bin := filepath.Join(dir, "node_modules", ".bin")

	t.Run("redocly", func(t *testing.T) {
		t.Parallel()
		cmd := command(t, dir, filepath.Join(bin, "redocly"), "lint", lintedDocument, "--format=json")
		cmd.Env = append(cmd.Env, "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "NO_COLOR=1")
		out, err := cmd.Output()
		var report struct {
			Totals struct {
				Errors, Warnings, Ignored int
			}
			Problems []struct {
				RuleID   string `json:"ruleId"`
				Severity string
				Message  string
				Location []struct{ Pointer string }
			}
		}
		require.NoError(t, json.Unmarshal(out, &report), "redocly lint: %v\n%s%s", err, out, stderr(err))
		var problems []string
		for _, p := range report.Problems {
			where := ""
			if len(p.Location) > 0 {
				where = p.Location[0].Pointer
			}
			problems = append(problems, fmt.Sprintf("%s %s at %s: %s", p.Severity, p.RuleID, where, p.Message))
		}
		require.Zero(t, report.Totals.Errors+report.Totals.Warnings, "Redocly (recommended):\n%s", strings.Join(problems, "\n"))
		require.Empty(t, problems)
		ignore, err := os.ReadFile(filepath.Join(dir, ".redocly.lint-ignore.yaml"))
		require.NoError(t, err)
		require.Equal(t, strings.Count(string(ignore), "\n    - '#"), report.Totals.Ignored,
			"every exception of .redocly.lint-ignore.yaml matches a warning: one that no longer does is removed from the file")
	})

	t.Run("spectral", func(t *testing.T) {
		t.Parallel()
		cmd := command(t, dir, filepath.Join(bin, "spectral"), "lint", lintedDocument, "--ruleset", ".spectral.yaml", "--format", "json", "--quiet")
		cmd.Env = append(cmd.Env, "NO_COLOR=1")
		out, err := cmd.Output() // exit status 1 with errors: the report says which
		var results []struct {
			Code     string
			Message  string
			Path     []any
			Severity int // 0 error, 1 warning, 2 information, 3 hint
		}
		require.NoError(t, json.Unmarshal(out, &results), "spectral lint: %v\n%s%s", err, out, stderr(err))
		var problems []string
		for _, r := range results {
			line := fmt.Sprintf("%s at %v: %s", r.Code, r.Path, r.Message)
			if r.Severity > 1 {
				t.Log("information: " + line)
				continue
			}
			problems = append(problems, []string{"error", "warning"}[r.Severity]+" "+line)
		}
		require.Empty(t, problems, "Spectral (spectral:oas):\n%s", strings.Join(problems, "\n"))
	})
}

// stderr is what a command that failed wrote on its standard error.
func stderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
