package central_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/internal/layers"
)

// TestLayout keeps the layering of docs/architecture.md true, by the rule
// of internal/layers (which make lint runs too, through cmd/layercheck):
// central is the composition root, the only package that knows every
// pillar; the kernel (tenant) knows neither the services beside it nor the
// pillars; a service imports no pillar; nothing under tenant/ imports
// central; internal/ imports only internal/. Test kits (apitest, pgtest,
// webhooktest, socialtest...) are held to the rule of the folder they sit
// in; only _test files may reach higher.
func TestLayout(t *testing.T) {
	t.Parallel()
	pkgs, err := layers.List("go", ".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 40 {
		t.Fatalf("go list found %d packages: %v", len(pkgs), pkgs)
	}
	if bad := layers.Check(pkgs); len(bad) > 0 {
		var lines []string
		for _, v := range bad {
			lines = append(lines, v.String())
		}
		t.Errorf("imports against the layering:\n%s", strings.Join(lines, "\n"))
	}
	// Every listed pillar and service is a folder under tenant/.
	for _, name := range append(slices.Clone(layers.Pillars), layers.Services...) {
		if fi, err := os.Stat(filepath.Join("..", "tenant", name)); err != nil || !fi.IsDir() {
			t.Errorf("tenant/%s is listed in internal/layers but is not a folder: %v", name, err)
		}
	}

	entries, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	top := []string{"cmd", "central", "tenant", "provisioning", "migrations", "internal", "testdata", "docs", "sdk",
		"Makefile", "go.mod", "go.sum", "README.md"}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || name == "bin" {
			continue // .ci, .git, .plinth (the private cluster), build output
		}
		if !slices.Contains(top, name) {
			t.Errorf("%s at the top level: the layout is %v", name, top)
		}
	}
}
