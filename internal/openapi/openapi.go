// Package openapi holds the OpenAPI 3.1 description of the API, built from
// the Go description in build.go, committed as openapi.json and embedded in
// the binary. GET /v1/openapi.json serves it; the API tests validate every
// request and response they make against it (internal/apitest).
package openapi

import (
	_ "embed"
	"net/http"
)

// Version is the API version the document describes (info.version).
const Version = "1.0.1"

//go:generate go test -run TestDocumentIsCurrent . -update

// JSON is the document as served. openapi.json is generated from Build by
// `go generate ./internal/openapi`; a test fails while it is stale.
//
//go:embed openapi.json
var JSON []byte

// Handler serves the document. It needs no key; the middleware around it
// adds X-Request-Id and the rate-limit headers as on every response.
func Handler(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age=300")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(JSON)
}
