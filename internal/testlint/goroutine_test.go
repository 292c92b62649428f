package testlint

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// fatalNames are the testing methods that end the calling goroutine: from
// any goroutine but the test's they do not stop the test, and a test whose
// goroutine calls one may pass or hang instead of failing.
var fatalNames = map[string]bool{"Fatal": true, "Fatalf": true, "FailNow": true, "Skip": true, "Skipf": true, "SkipNow": true}

// TestNoFatalOffTestGoroutine: no goroutine started by a test, a
// benchmark or a test helper package (go func, errgroup's or a WaitGroup's
// Go) calls t.Fatal and its kind, testify's require, or a helper of the
// module that does, however deep (apitest's Env.Do and Send, Resp.Expect,
// JSON and Problem...).
// Goroutines use the non-fatal variants (Env.TrySend, Resp.CheckProblem,
// t.Error) and leave the fatal checks to the test goroutine.
//
// The check is syntactic: a call x.M(args) is taken for any method M of
// the file's own package or of a module package one of the package's
// files imports that has as many parameters, and is flagged when one of
// them is fatal.
func TestNoFatalOffTestGoroutine(t *testing.T) {
	root, module := moduleRoot(t)
	ix := index(t, root, module)
	var found []string
	for _, f := range ix.files {
		if !f.testing && !strings.HasSuffix(f.path, "_test.go") {
			continue
		}
		for _, g := range goroutines(f.ast) {
			pos := ix.fset.Position(g.Pos())
			if rel, err := filepath.Rel(root, pos.Filename); err == nil {
				pos.Filename = rel
			}
			for _, why := range ix.fatalIn(f, g) {
				found = append(found, fmt.Sprintf("%s: goroutine calls %s", pos, why))
			}
		}
	}
	sort.Strings(found)
	for _, s := range found {
		t.Error(s)
	}
}

type file struct {
	path    string
	dir     string
	ast     *ast.File
	imports map[string]string // local name → directory, module packages only
	require string            // local name of testify's require, if imported
	testing bool              // a test file, or a helper importing testing
}

type fn struct {
	decl   *ast.FuncDecl
	file   *file
	params int
	varia  bool
}

type indexed struct {
	fset    *token.FileSet
	files   []*file
	funcs   map[string][]*fn           // dir + "." + name
	methods map[string][]*fn           // dir + "#" + name
	pkgDirs map[string]map[string]bool // dir → module packages its files import
	memo    map[*ast.FuncDecl]string
	// seen are the functions the search from the function asked about
	// (fatalFunc's outermost call) has visited.
	seen map[*ast.FuncDecl]bool
}

func moduleRoot(t *testing.T) (root, module string) {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return dir, strings.TrimSpace(m)
				}
			}
			t.Fatal("go.mod names no module")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func index(t *testing.T, root, module string) *indexed {
	t.Helper()
	ix := &indexed{fset: token.NewFileSet(), funcs: map[string][]*fn{}, methods: map[string][]*fn{}, pkgDirs: map[string]map[string]bool{},
		memo: map[*ast.FuncDecl]string{}, seen: map[*ast.FuncDecl]bool{}}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != root && err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		a, err := parser.ParseFile(ix.fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		f := &file{path: path, dir: filepath.Dir(path), ast: a, imports: map[string]string{}}
		for _, im := range a.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p[strings.LastIndex(p, "/")+1:]
			if im.Name != nil {
				name = im.Name.Name
			}
			switch {
			case p == "testing":
				f.testing = true
			case p == "github.com/stretchr/testify/require":
				f.require = name
			case p == module || strings.HasPrefix(p, module+"/"):
				f.imports[name] = filepath.Join(root, filepath.FromSlash(strings.TrimPrefix(p, module)))
			}
		}
		ix.files = append(ix.files, f)
		if ix.pkgDirs[f.dir] == nil {
			ix.pkgDirs[f.dir] = map[string]bool{}
		}
		for _, dir := range f.imports {
			ix.pkgDirs[f.dir][dir] = true
		}
		for _, decl := range a.Decls {
			d, ok := decl.(*ast.FuncDecl)
			if !ok || d.Body == nil {
				continue
			}
			x := &fn{decl: d, file: f}
			for _, p := range d.Type.Params.List {
				n := max(len(p.Names), 1)
				x.params += n
				if _, ok := p.Type.(*ast.Ellipsis); ok {
					x.varia = true
				}
			}
			if d.Recv != nil {
				ix.methods[f.dir+"#"+d.Name.Name] = append(ix.methods[f.dir+"#"+d.Name.Name], x)
			} else {
				ix.funcs[f.dir+"."+d.Name.Name] = append(ix.funcs[f.dir+"."+d.Name.Name], x)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ix
}

// goroutines returns the code of a file that runs on goroutines it starts.
func goroutines(a *ast.File) []ast.Node {
	var out []ast.Node
	ast.Inspect(a, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			if lit, ok := n.Call.Fun.(*ast.FuncLit); ok {
				out = append(out, lit.Body)
			} else {
				out = append(out, n.Call)
			}
		case *ast.CallExpr:
			// errgroup.Group.Go, sync.WaitGroup.Go
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Go" && len(n.Args) == 1 {
				if lit, ok := n.Args[0].(*ast.FuncLit); ok {
					out = append(out, lit.Body)
				}
			}
		}
		return true
	})
	return out
}

// fatalIn lists the calls in node (code of f) that are fatal, each with
// the chain that makes it so.
func (ix *indexed) fatalIn(f *file, node ast.Node) []string {
	var out []string
	ast.Inspect(node, func(n ast.Node) bool {
		if g, ok := n.(*ast.GoStmt); ok && g != node {
			return false // another goroutine: checked on its own
		}
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if why := ix.fatalCall(f, call); why != "" {
			out = append(out, why)
		}
		return true
	})
	return out
}

// fatalCall says why call is fatal, or "".
func (ix *indexed) fatalCall(f *file, call *ast.CallExpr) string {
	src := render(ix.fset, call.Fun)
	var cands []*fn
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		cands = ix.funcs[f.dir+"."+fun.Name]
	case *ast.SelectorExpr:
		if fatalNames[fun.Sel.Name] {
			return src
		}
		if x, ok := fun.X.(*ast.Ident); ok {
			if x.Name == f.require && f.require != "" {
				return src
			}
			if dir, ok := f.imports[x.Name]; ok {
				cands = ix.funcs[dir+"."+fun.Sel.Name]
				break
			}
			if x.Name == "t" || x.Name == "b" || x.Name == "tb" {
				return "" // testing's own non-fatal methods
			}
		}
		// a value's type may come from a package another file of the
		// package imports
		cands = ix.methods[f.dir+"#"+fun.Sel.Name]
		for dir := range ix.pkgDirs[f.dir] {
			cands = append(cands, ix.methods[dir+"#"+fun.Sel.Name]...)
		}
	}
	for _, c := range cands {
		if n := len(call.Args); n != c.params && !(c.varia && n >= c.params-1) {
			continue
		}
		if why := ix.fatalFunc(c); why != "" {
			return src + " → " + why
		}
	}
	return ""
}

// fatalFunc says why the function is fatal (it calls a fatal function on
// the goroutine that calls it), or "".
//
// It is a search of the functions reachable from c, each visited once: a
// function met again (a cycle, or a second path to it) adds nothing the
// first visit does not find. When the search finds no fatal call, no
// function it visited reaches one, and all are remembered as not fatal;
// when it does, only those whose own search found one are (one visited
// without a fatal call may yet reach c), so a later search visits the
// others again. Deciding each function apart, paths through cycles of
// common method names (Close, Scan, Next) grew exponentially.
func (ix *indexed) fatalFunc(c *fn) string {
	if why, ok := ix.memo[c.decl]; ok {
		return why
	}
	if ix.seen[c.decl] {
		return ""
	}
	root := len(ix.seen) == 0
	ix.seen[c.decl] = true
	why := ""
	if ws := ix.fatalIn(c.file, c.decl.Body); len(ws) > 0 {
		why = ws[0]
		ix.memo[c.decl] = why
	}
	if root {
		if why == "" {
			for d := range ix.seen {
				ix.memo[d] = ""
			}
		}
		clear(ix.seen)
	}
	return why
}

func render(fset *token.FileSet, n ast.Node) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, fset, n)
	return b.String()
}
