// Command layercheck fails when an import of the module's packages (their
// non-test files) goes against the layering of docs/architecture.md, as
// internal/layers states it: make lint runs it, without a database.
//
//	go run ./cmd/layercheck [-go go] [-C dir]
//
// It prints each import against the rule with the rule's reason and exits
// 1, or exits 0 printing nothing; 2 when go list fails.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/plinth-dev/plinth/internal/layers"
)

func main() {
	goCmd := flag.String("go", "go", "the go command that lists the packages")
	dir := flag.String("C", ".", "a directory in the module")
	flag.Parse()
	pkgs, err := layers.List(*goCmd, *dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "layercheck:", err)
		os.Exit(2)
	}
	bad := layers.Check(pkgs)
	for _, v := range bad {
		fmt.Fprintln(os.Stderr, v)
	}
	if len(bad) > 0 {
		fmt.Fprintf(os.Stderr, "layercheck: %d import(s) against the layering (internal/layers, docs/architecture.md)\n", len(bad))
		os.Exit(1)
	}
}
