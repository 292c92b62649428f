// Package layers states the layering of docs/architecture.md as a rule
// over the imports of the module's packages (their non-test files), so
// that the floors the folders show are the floors the imports keep.
// cmd/layercheck runs it in make lint, central's TestLayout in the tests.
//
// From the bottom up:
//
//   - internal/: parts with no business meaning; they import only
//     internal/, the standard library and third-party modules.
//   - tenant (the kernel): Scope, Project, Key, the Pillar contract; it
//     imports internal/ only, no service and no pillar.
//   - the services beside the kernel (Services: credits, drafts, idempotency,
//     outbox, ratelimit, schedule): what pillars and the control plane use on a
//     project's scope; they import the kernel, internal/ and one another,
//     and no pillar (a pillar's library, such as tenant/webhooks/signature,
//     is not a pillar).
//   - the pillars (Pillars): one part of the API each; they import the
//     kernel, the services, internal/ and other pillars. A pillar's
//     sub-package is a library of its contract (tenant/webhooks/signature,
//     which receivers import): it imports no pillar and no service.
//   - provisioning/: project schemas, archives, test databases; it may
//     use the kernel, not a service, a pillar or the control plane.
//   - central/: the control plane and composition root; it may import
//     anything. Nothing under tenant/ imports it: a pillar reaches the
//     control plane through tenant.ControlPlane.
//   - cmd/: mains; they call central, not a pillar (benchmark commands
//     read a pillar's exported SQL, to run the very statements it does).
//
// A test kit (apitest, pgtest, webhooktest, socialtest, stripetest,
// redistest...) is a package like any other and keeps the rule of the
// folder it sits in; only _test files may reach higher (a pillar's tests
// drive the whole server through central/apitest).
package layers

import (
	"bytes"
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// Module is the module's path.
const Module = "github.com/plinth-dev/plinth"

// Pillars are the packages under tenant/ that each serve one part of the
// API (the Pillar contract); central composes them.
var Pillars = []string{"blog", "booking", "commerce", "content", "forms", "jobs", "releases", "sites", "social", "usage", "webhooks"}

// Services are the packages under tenant/ that are no pillar: scope-aware
// services that pillars and the control plane use.
var Services = []string{"credits", "drafts", "idempotency", "outbox", "ratelimit", "schedule"}

// Package is one package and the packages its non-test files import.
type Package struct {
	Path    string
	Imports []string
}

// Violation is one import against the layering.
type Violation struct {
	Package string
	Import  string // empty when the package itself is out of place
	Reason  string
}

func (v Violation) String() string {
	if v.Import == "" {
		return v.Package + ": " + v.Reason
	}
	return v.Package + " imports " + v.Import + ": " + v.Reason
}

// floor is where a package of the module sits.
type floor int

const (
	other     floor = iota // migrations, docs
	internal               // internal/...
	kernel                 // tenant
	service                // tenant/<service>/...
	pillar                 // tenant/<pillar>
	pillarLib              // tenant/<pillar>/...
	unlisted               // tenant/<neither>/...
	provision              // provisioning/...
	control                // central/...
	command                // cmd/...
)

// floorOf returns the floor of rel (a path relative to the module).
func floorOf(rel string) floor {
	top, rest, _ := strings.Cut(rel, "/")
	switch top {
	case "internal":
		return internal
	case "provisioning":
		return provision
	case "central":
		return control
	case "cmd":
		return command
	case "tenant":
		if rest == "" {
			return kernel
		}
		name, sub, _ := strings.Cut(rest, "/")
		switch {
		case slices.Contains(Services, name):
			return service
		case slices.Contains(Pillars, name) && sub == "":
			return pillar
		case slices.Contains(Pillars, name):
			return pillarLib
		}
		return unlisted
	}
	return other
}

// noControl is the reason of an import of central/ from tenant/.
const noControl = "nothing under tenant/ imports the control plane (pillars reach it through tenant.ControlPlane)"

// rules says, for the floor of a package, why it may not import a
// package of floor f ("" when it may).
var rules = map[floor]func(pkg string, f floor) string{
	internal: func(_ string, f floor) string {
		if f != internal {
			return "internal/ imports only internal/, the standard library and third-party modules"
		}
		return ""
	},
	kernel: func(_ string, f floor) string {
		switch f {
		case control:
			return noControl
		case service, pillar, pillarLib, unlisted:
			return "the kernel knows neither the services nor the pillars"
		}
		return ""
	},
	service: func(_ string, f floor) string {
		switch f {
		case control:
			return noControl
		case pillar:
			return "a service beside the kernel imports no pillar"
		}
		return ""
	},
	pillar: func(_ string, f floor) string {
		if f == control {
			return noControl
		}
		return ""
	},
	pillarLib: func(_ string, f floor) string {
		switch f {
		case control:
			return noControl
		case pillar, service:
			return "a pillar's library stands alone: it imports no pillar and no service"
		}
		return ""
	},
	provision: func(_ string, f floor) string {
		switch f {
		case control, service, pillar, pillarLib:
			return "provisioning is below the control plane, the services and the pillars (it may use the kernel)"
		}
		return ""
	},
	command: func(pkg string, f floor) string {
		if f == pillar && !strings.HasPrefix(pkg, "cmd/bench") {
			return "main calls central, the composition root, not a pillar"
		}
		return ""
	},
}

// Check returns the imports of pkgs against the layering, in the order
// of pkgs, and every package under tenant/ that is neither a listed pillar
// nor a listed service. Imports from outside the module are not checked.
func Check(pkgs []Package) []Violation {
	var bad []Violation
	for _, p := range pkgs {
		rel, ok := relative(p.Path)
		if !ok {
			continue
		}
		f := floorOf(rel)
		if f == unlisted {
			bad = append(bad, Violation{Package: p.Path, Reason: "under tenant/ but neither a pillar nor a service: add it to layers.Pillars or layers.Services"})
			f = service // and hold it to the rule of the stricter of the two
		}
		rule := rules[f]
		if rule == nil {
			continue
		}
		for _, imp := range p.Imports {
			irel, ok := relative(imp)
			if !ok {
				continue
			}
			if reason := rule(rel, floorOf(irel)); reason != "" {
				bad = append(bad, Violation{Package: p.Path, Import: imp, Reason: reason})
			}
		}
	}
	return bad
}

// relative returns path relative to the module, and whether it is in it.
func relative(path string) (string, bool) {
	if path == Module {
		return "", true
	}
	rel, ok := strings.CutPrefix(path, Module+"/")
	return rel, ok
}

// List returns the module's packages and their non-test imports, as
// `go list` run with goCmd (go when empty) in dir reports them.
func List(goCmd, dir string) ([]Package, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.Command(goCmd, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, Module+"/...")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.Bytes())
	}
	var pkgs []Package
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		pkgs = append(pkgs, Package{Path: fields[0], Imports: fields[1:]})
	}
	return pkgs, nil
}
