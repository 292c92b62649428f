package apitest

import (
	"net/http"
	"testing"

	"github.com/plinth-dev/plinth/central"
)

// BenchmarkContractCheck is the cost Send adds per exchange: a read (the
// response is checked) and a create (request and response).
func BenchmarkContractCheck(b *testing.B) {
	c, err := DefaultContract()
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"}, "X-Ratelimit-Limit": {"600"},
		"X-Ratelimit-Remaining": {"599"}, "X-Ratelimit-Reset": {"1763800000"}}
	auth := http.Header{"Authorization": {"Bearer pln_live_00000000000000000000000000000000"}, "Content-Type": {"application/json"}}
	get := Exchange{Method: "GET", Path: "/v1/projects/me", ReqHeader: auth, Status: 200, RespHeader: h, Routed: true,
		RespBody: []byte(`{"id":"prj_000000000000000000000000","name":"P","slug":"p","industry":"","default_language":"en","target_languages":["fr"],"timezone":"UTC","plan":"build","allowed_origins":[],"site_url":null,"created_at":"2026-01-01T00:00:00Z"}`)}
	post := Exchange{Method: "POST", Path: "/v1/projects/me/api-keys", ReqHeader: auth, Status: 201, RespHeader: h, Routed: true,
		ReqBody:  []byte(`{"name":"x","scopes":["content:read"]}`),
		RespBody: []byte(`{"id":"key_000000000000000000000000","name":"x","prefix":"pln_live_","masked":"pln_live_…abcd","secret":"pln_live_00000000000000000000000000000000","scopes":["content:read"],"last_used_at":null,"created_at":"2026-01-01T00:00:00Z"}`)}
	for _, ex := range []struct {
		name string
		ex   Exchange
	}{{"read", get}, {"create", post}} {
		if msgs := c.Check(ex.ex); len(msgs) > 0 {
			b.Fatal(msgs)
		}
		b.Run(ex.name, func(b *testing.B) {
			for b.Loop() {
				c.Check(ex.ex)
			}
		})
	}
}

// BenchmarkNewContract is the one-time cost per test process.
func BenchmarkNewContract(b *testing.B) {
	for b.Loop() {
		if _, err := NewContract(central.OpenAPIJSON); err != nil {
			b.Fatal(err)
		}
	}
}
