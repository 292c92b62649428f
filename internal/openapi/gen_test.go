package openapi_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/plinth-dev/plinth/internal/openapi"
)

var update = flag.Bool("update", false, "rewrite openapi.json from Build")

// Generate renders Build as the committed openapi.json.
func generate(t *testing.T) []byte {
	t.Helper()
	b, err := json.MarshalIndent(openapi.Build(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestDocumentIsCurrent keeps the embedded openapi.json equal to Build's
// output; `go generate ./internal/openapi` rewrites it.
func TestDocumentIsCurrent(t *testing.T) {
	want := generate(t)
	if *update {
		if err := os.WriteFile("openapi.json", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(openapi.JSON, want) {
		t.Fatal("openapi.json is stale: run `go generate ./internal/openapi`")
	}
}
