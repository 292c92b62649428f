package central_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/internal/layers"
	"github.com/plinth-dev/plinth/tenant"
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

// sqlStatement matches a string that starts (after blanks) with an SQL
// statement's first word and a blank.
var sqlStatement = regexp.MustCompile(`^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|ALTER|CREATE|DROP|TRUNCATE|LISTEN|UNLISTEN|NOTIFY|BEGIN|SET)\s`)

// pillars are the packages under tenant/ that implement tenant.Pillar;
// each declares its operations in openapi.go, which is how a new one is
// found should this list miss it.
var pillars = []string{"blog", "booking", "commerce", "content", "forms", "jobs", "releases", "sites", "social", "usage", "webhooks"}

// TestSQLInStores keeps the SQL of the control plane and of each pillar
// in their store files (store.go, store_*.go), as the pillar template
// has it: handlers and services call store functions, which own the
// statements and wrap their errors. A string literal of a non-test file
// elsewhere in central/ (its test kits aside) or in a pillar's package
// that starts like an SQL statement fails it. The kernel (tenant/) and
// provisioning/ hold SQL by nature, and are not checked.
func TestSQLInStores(t *testing.T) {
	t.Parallel()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != "." && (strings.HasSuffix(d.Name(), "test") || d.Name() == "testdata") {
			return filepath.SkipDir // a test kit (apitest), or test data
		}
		dirs = append(dirs, path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pillars {
		dirs = append(dirs, filepath.Join("..", "tenant", p))
	}
	entries, err := os.ReadDir(filepath.Join("..", "tenant"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, err := os.Stat(filepath.Join("..", "tenant", e.Name(), "openapi.go")); err == nil && !slices.Contains(pillars, e.Name()) {
			t.Errorf("tenant/%s declares operations (openapi.go) but is not in the list of pillars", e.Name())
		}
	}
	checked := 0
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 && strings.HasPrefix(dir, "..") {
			t.Errorf("%s has no Go files", dir)
		}
		for _, f := range files {
			base := filepath.Base(f)
			if strings.HasSuffix(base, "_test.go") || base == "store.go" || strings.HasPrefix(base, "store_") {
				continue
			}
			checked++
			for _, s := range sqlLiterals(t, f) {
				t.Errorf("%s: SQL outside the store files: %.60q", s.pos, s.text)
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d files checked: the walk missed the packages", checked)
	}
}

type literal struct {
	pos  token.Position
	text string
}

// sqlLiterals lists the string literals of the Go file path that start
// like an SQL statement.
func sqlLiterals(t *testing.T, path string) []literal {
	t.Helper()
	return literals(t, path, sqlStatement.MatchString)
}

// literals lists the string literals of the Go file path that match.
func literals(t *testing.T, path string, match func(string) bool) []literal {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var out []literal
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
		}
		if match(s) {
			out = append(out, literal{fset.Position(lit.Pos()), s})
		}
		return true
	})
	return out
}

// TestSQLLiteralsFound: the heuristic of TestSQLInStores finds the
// statements of a file that holds some (and it cannot pass by finding
// nothing anywhere).
func TestSQLLiteralsFound(t *testing.T) {
	t.Parallel()
	n := len(sqlLiterals(t, "store_keys.go"))
	if n < 10 {
		t.Fatalf("%d statements found in store_keys.go, want its 10 at least", n)
	}
}

// TestPlanNamesOnce: Go code names a plan by its constant
// (tenant.PlanFree, ...), written once in tenant/plan.go, never by a
// literal. Tests may use literals; so may the configuration's table of
// defaults, which is text for operators, a "go build" command line, and
// the field build of GET /v1/health (the server's build, not the plan).
func TestPlanNamesOnce(t *testing.T) {
	t.Parallel()
	allowed := map[string]string{
		filepath.Join("..", "tenant", "plan.go"):               "",
		filepath.Join("..", "internal", "config", "config.go"): "free",
		filepath.Join("..", "cmd", "benchscale", "main.go"):    "build",
		filepath.Join("..", "central", "openapi.go"):           "build",
		filepath.Join("..", "central", "server.go"):            "build",
	}
	found := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != ".." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" || name == "sdk") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		for _, l := range literals(t, path, func(s string) bool { return slices.Contains(tenant.PlanNames, s) }) {
			found++
			if ok, listed := allowed[path]; listed && (ok == "" || ok == l.text) {
				continue
			}
			t.Errorf("%s: the plan %q as a literal: use its constant in tenant/plan.go", l.pos, l.text)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found < len(tenant.PlanNames) {
		t.Fatalf("%d plan literals found, want at least tenant/plan.go's %d: the walk missed the code", found, len(tenant.PlanNames))
	}
}

// TestStoreErrorsWrapped: every store function (central's and each
// pillar's: a function of a store file that takes a context and returns
// an error) wraps its error with its name as it returns
// (docs/architecture.md, "Errors"): its first statement is
// defer httpapi.Wrap(&err, ...). A helper that runs the statement its
// caller passes in (a parameter named sql, query or ...SQL) is exempt:
// its caller, a store function, wraps.
func TestStoreErrorsWrapped(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("store*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pillars {
		more, err := filepath.Glob(filepath.Join("..", "tenant", p, "store*.go"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil || !storeFunc(fd) {
				continue
			}
			checked++
			if !wrapsFirst(fd) {
				t.Errorf("%s: %s returns its error unwrapped: begin it with defer httpapi.Wrap(&err, %q)",
					fset.Position(fd.Pos()), fd.Name.Name, fd.Name.Name+"(…)")
			}
		}
	}
	if checked < 200 {
		t.Fatalf("only %d store functions checked: the glob missed the store files", checked)
	}
}

// storeFunc reports whether fd takes a context first and returns an
// error last, and is not a helper given its statement.
func storeFunc(fd *ast.FuncDecl) bool {
	ps, rs := fd.Type.Params.List, fd.Type.Results
	if len(ps) == 0 || rs == nil {
		return false
	}
	if sel, ok := ps[0].Type.(*ast.SelectorExpr); !ok || sel.Sel.Name != "Context" {
		return false
	}
	if id, ok := rs.List[len(rs.List)-1].Type.(*ast.Ident); !ok || id.Name != "error" {
		return false
	}
	for _, p := range ps {
		for _, n := range p.Names {
			if n.Name == "sql" || n.Name == "query" || strings.HasSuffix(n.Name, "SQL") {
				return false
			}
		}
	}
	return true
}

// wrapsFirst reports whether fd's first statement defers httpapi.Wrap
// of its error result.
func wrapsFirst(fd *ast.FuncDecl) bool {
	if len(fd.Body.List) == 0 {
		return false
	}
	ds, ok := fd.Body.List[0].(*ast.DeferStmt)
	if !ok {
		return false
	}
	sel, ok := ds.Call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Wrap" || len(ds.Call.Args) < 2 {
		return false
	}
	if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "httpapi" {
		return false
	}
	u, ok := ds.Call.Args[0].(*ast.UnaryExpr)
	if !ok || u.Op != token.AND {
		return false
	}
	id, ok := u.X.(*ast.Ident)
	return ok && id.Name == "err"
}
