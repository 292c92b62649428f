package inproc_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/central/inproc"
	"github.com/plinth-dev/plinth/internal/ratelimit"
	"github.com/plinth-dev/plinth/tenant"
	projectlimit "github.com/plinth-dev/plinth/tenant/ratelimit"
)

type valueKey struct{}

// seen is what a sub-request looked like to the handler.
type seen struct {
	header     http.Header
	remoteAddr string
	body       string
	scope      *tenant.Scope
	value      any
	err        error
}

// parentRequest is a request as it reaches a route of the router: with
// chi's routing state, a value of some middleware and client headers.
func parentRequest(t *testing.T) *http.Request {
	t.Helper()
	r, err := http.NewRequest("POST", "/dashboard/projects/p1", nil)
	if err != nil {
		t.Fatal(err)
	}
	r.RemoteAddr = "203.0.113.7:5555"
	r.Header.Set("User-Agent", "browser/1")
	r.Header.Set("Cookie", "plinth_dashboard=secret")
	r.Header.Set("Authorization", "Bearer parent-token")
	rctx := chi.NewRouteContext()
	rctx.URLParams.Add("id", "p1")
	ctx := context.WithValue(context.WithValue(r.Context(), chi.RouteCtxKey, rctx), valueKey{}, "parent's")
	return r.WithContext(ctx)
}

// router answers GET /v1/echo with what it saw, routing afresh.
func router(got *seen) http.Handler {
	r := chi.NewRouter()
	r.Post("/v1/echo", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		*got = seen{header: r.Header.Clone(), remoteAddr: r.RemoteAddr, body: string(b), scope: tenant.FromContext(r.Context()),
			value: r.Context().Value(valueKey{}), err: r.Context().Err()}
		w.Header().Set("X-Echo", "1")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	return r
}

// TestDo: a sub-request is routed afresh, carries the allowed headers of
// its parent and its own, the parent's address and values, and its
// answer is kept whole.
func TestDo(t *testing.T) {
	t.Parallel()
	var got seen
	c := &inproc.Caller{Handler: router(&got), Headers: []string{"user-agent", "X-Forwarded-For"}}
	res, err := c.Do(inproc.Of(parentRequest(t)), inproc.Request{Method: "POST", Target: "/v1/echo",
		Body: strings.NewReader(`{"a":1}`), Header: http.Header{"Content-Type": {"application/json"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != 201 || res.Header.Get("X-Echo") != "1" || res.Body.String() != `{"ok":true}` {
		t.Fatalf("answer %d %v %q", res.Status, res.Header, res.Body.String())
	}
	if got.body != `{"a":1}` || got.remoteAddr != "203.0.113.7:5555" || got.value != "parent's" {
		t.Fatalf("sub-request %+v", got)
	}
	want := http.Header{"User-Agent": {"browser/1"}, "Content-Type": {"application/json"}}
	if len(got.header) != len(want) || got.header.Get("User-Agent") != "browser/1" || got.header.Get("Content-Type") != "application/json" {
		t.Fatalf("headers %v, want %v: the parent's Cookie and Authorization are not on the list", got.header, want)
	}
}

// TestScopeHandedOver: a sub-request with the parent's scope acts with
// it; one carrying Authorization beside a scope is refused before it
// runs, since the identify step would replace the scope.
func TestScopeHandedOver(t *testing.T) {
	t.Parallel()
	sc, err := tenant.NewScope(nil, &tenant.Project{ID: "prj_1", Schema: "project_1"}, &tenant.Key{ID: "key_1"})
	if err != nil {
		t.Fatal(err)
	}
	var got seen
	c := &inproc.Caller{Handler: router(&got), Headers: []string{"Authorization"}}
	p := inproc.Of(parentRequest(t))
	p.Scope, p.Header = sc, http.Header{}
	if _, err := c.Do(p, inproc.Request{Method: "POST", Target: "/v1/echo"}); err != nil {
		t.Fatal(err)
	}
	if got.scope != sc {
		t.Fatalf("scope %v, want the parent's", got.scope)
	}

	got = seen{}
	p = inproc.Of(parentRequest(t)) // its Authorization is on the caller's list
	p.Scope = sc
	if _, err := c.Do(p, inproc.Request{Method: "POST", Target: "/v1/echo"}); !errors.Is(err, inproc.ErrAuthorizationWithScope) {
		t.Fatalf("err %v", err)
	}
	if got.header != nil {
		t.Fatal("the refused sub-request ran")
	}
}

// TestChargeHandedOver: the limiter charges a sub-request (and shows its
// headers) unless its parent was charged.
func TestChargeHandedOver(t *testing.T) {
	t.Parallel()
	var got seen
	guard := &projectlimit.Guard{Store: ratelimit.NewMemory(nil), Anonymous: ratelimit.Limit{RPM: 60, Burst: 60}, Clock: time.Now}
	c := &inproc.Caller{Handler: guard.Handler(router(&got))}
	for _, charged := range []bool{false, true} {
		p := inproc.Of(parentRequest(t))
		p.Charged = charged
		res, err := c.Do(p, inproc.Request{Method: "POST", Target: "/v1/echo"})
		if err != nil {
			t.Fatal(err)
		}
		if shown := res.Header.Get("X-RateLimit-Limit") != ""; res.Status != 201 || shown == charged {
			t.Errorf("parent charged %v: %d, the limiter's headers shown %v", charged, res.Status, shown)
		}
	}
}

// TestDetach: a detached sub-request keeps none of its parent's values
// and ends when its parent does.
func TestDetach(t *testing.T) {
	t.Parallel()
	var got seen
	c := &inproc.Caller{Handler: router(&got), Detach: true}
	parent := parentRequest(t)
	ctx, cancel := context.WithCancel(parent.Context())
	p := inproc.Of(parent.WithContext(ctx))
	if _, err := c.Do(p, inproc.Request{Method: "POST", Target: "/v1/echo"}); err != nil {
		t.Fatal(err)
	}
	if got.value != nil || got.err != nil {
		t.Fatalf("value %v, err %v", got.value, got.err)
	}
	cancel()
	if _, err := c.Do(p, inproc.Request{Method: "POST", Target: "/v1/echo"}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got.err, context.Canceled) {
		t.Fatalf("after the parent ended: %v", got.err)
	}
}
