package central_test

import (
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/plinth-dev/plinth"

// TestLayout keeps the layering of docs/architecture.md true. central is
// the composition root, the only package that knows every pillar; the
// kernel (tenant) and the parts under internal/ know none; a pillar never
// reaches into the control plane but through tenant.ControlPlane. Tests
// and their helper packages (apitest, socialtest, webhooktest...) may use
// the full-stack harness, so only the imports of the other packages are
// checked.
func TestLayout(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	// A pillar's own package; its sub-packages (tenant/webhooks/signature,
	// which receivers import) are libraries of its contract, below it.
	pillar := regexp.MustCompile(`^` + regexp.QuoteMeta(module) + `/tenant/[a-z]+$`)
	sub := regexp.MustCompile(`^` + regexp.QuoteMeta(module) + `/tenant/[a-z]+/`)
	isCentral := func(p string) bool { return p == module+"/central" || strings.HasPrefix(p, module+"/central/") }
	var bad []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, imports := fields[0], fields[1:]
		if strings.HasSuffix(pkg, "test") {
			continue // a test helper package
		}
		for _, imp := range imports {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			switch {
			case strings.HasPrefix(pkg, module+"/internal/") && (isCentral(imp) || pillar.MatchString(imp)):
				bad = append(bad, pkg+" imports "+imp+": internal/ knows neither the control plane nor a pillar")
			case pkg == module+"/tenant" && (isCentral(imp) || pillar.MatchString(imp)):
				bad = append(bad, pkg+" imports "+imp+": the kernel knows no pillar")
			case sub.MatchString(pkg) && (isCentral(imp) || pillar.MatchString(imp)):
				bad = append(bad, pkg+" imports "+imp+": a pillar's library stands alone")
			case pillar.MatchString(pkg) && isCentral(imp):
				bad = append(bad, pkg+" imports "+imp+": a pillar reaches the control plane through tenant.ControlPlane")
			case strings.HasPrefix(pkg, module+"/cmd/bench") && pillar.MatchString(imp):
				// A benchmark command reads a pillar's exported SQL, so that
				// its bare baseline runs the very statements the pillar does.
			case strings.HasPrefix(pkg, module+"/cmd/") && pillar.MatchString(imp):
				bad = append(bad, pkg+" imports "+imp+": main calls central, the composition root")
			case pkg == module+"/provisioning" && (isCentral(imp) || pillar.MatchString(imp)):
				bad = append(bad, pkg+" imports "+imp+": provisioning is below the control plane")
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("imports against the layering:\n%s", strings.Join(bad, "\n"))
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
