package apitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Unavailable stops a test whose tools are missing (node, npm, a pinned
// client's modules): a failure under CI=true, where .ci/run installs
// them, else a skip.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format, args...)
}

// MCPClient is the absolute path of testdata/mcp-client, whose node
// programs drive an MCP server with the official TypeScript SDK; root is
// the repository's path from the test's package ("../.."). A machine
// without node or the client's modules stops the test (Unavailable).
func MCPClient(t testing.TB, root string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join(root, "testdata", "mcp-client"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		Unavailable(t, "node is not installed (apt-get install nodejs)")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk", "package.json")); err != nil {
		Unavailable(t, "the client's modules are not installed: npm ci --prefix testdata/mcp-client")
	}
	return dir
}
