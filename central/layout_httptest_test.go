package central_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLayoutNoHTTPTest: no package of the server imports net/http/httptest.
// A request the server makes to itself goes through central/inproc, whose
// recorder is the server's own; httptest is for tests and the test kits
// (apitest, socialtest, stripetest, webhooktest...), whose package names
// end in "test" as TestLayout reads them.
func TestLayoutNoHTTPTest(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if pkg := fields[0]; !strings.HasSuffix(pkg, "test") && slices.Contains(fields[1:], "net/http/httptest") {
			t.Errorf("%s imports net/http/httptest outside its tests", pkg)
		}
	}
}
