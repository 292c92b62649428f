package central_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/internal/layers"
)

// TestLayoutNoHTTPTest: no package of the server imports net/http/httptest.
// A request the server makes to itself goes through central/inproc, whose
// recorder is the server's own; httptest is for tests and the test kits
// (apitest, socialtest, stripetest, webhooktest...), whose package names
// end in "test" as TestLayout reads them.
func TestLayoutNoHTTPTest(t *testing.T) {
	t.Parallel()
	pkgs, err := layers.List("go", ".")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		if !strings.HasSuffix(p.Path, "test") && slices.Contains(p.Imports, "net/http/httptest") {
			t.Errorf("%s imports net/http/httptest outside its tests", p.Path)
		}
	}
}
