package idempotency_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
)

// TestScopeCheckedFirst: idempotency runs after the route's scope check.
// A read-only key sending the Idempotency-Key a "*" key created a gallery
// with gets its 403, not the stored 201; a 403 is never stored, so the
// "*" key sending it afterwards runs its own request.
func TestScopeCheckedFirst(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	reader := p.NewKey(false, "content:read")
	gallery := func(key, idem, name string) *apitest.Resp {
		return env.Send(apitest.Request{Method: "POST", Path: "/v1/galleries", Key: key, Body: map[string]any{"name": name},
			Header: map[string]string{"Idempotency-Key": idem}})
	}

	first := gallery(p.Key, "g-1", "Team").Expect(t, 201)
	if r := gallery(reader, "g-1", "Team"); r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("a read-only key got the stored answer: %d %s", r.Status, r.Body)
	} else {
		r.Problem(t, 403, "forbidden")
	}
	again := gallery(p.Key, "g-1", "Team").Expect(t, 201)
	if again.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(again.Body, first.Body) {
		t.Fatalf("the creating key must still get its replay: %v %s", again.Header, again.Body)
	}

	// The other way round: the 403 is not kept for the "*" key.
	gallery(reader, "g-2", "Crew").Problem(t, 403, "forbidden")
	if r := gallery(reader, "g-2", "Crew"); r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a 403 was stored and replayed")
	} else {
		r.Problem(t, 403, "forbidden")
	}
	if r := gallery(p.Key, "g-2", "Crew"); r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("the \"*\" key got %d (replayed %q), want its own 201: %s", r.Status, r.Header.Get("Idempotent-Replayed"), r.Body)
	}
	gallery(p.Key, "g-2", "Crew").Expect(t, 201)

	// Nothing the step could answer comes before the 403: neither a bad
	// Idempotency-Key nor a key's own entry reused on a route it may not
	// call (a 409 idempotency_conflict otherwise).
	gallery(reader, strings.Repeat("x", 256), "Crew").Problem(t, 403, "forbidden")
	writer := p.NewKey(false, "galleries:write")
	gallery(writer, "g-3", "Band").Expect(t, 201)
	env.Send(apitest.Request{Method: "POST", Path: "/v1/images", Key: writer, Body: map[string]any{"key": "logo"},
		Header: map[string]string{"Idempotency-Key": "g-3"}}).Problem(t, 403, "forbidden")

	if n := p.Count(`SELECT count(*) FROM galleries`); n != 3 {
		t.Fatalf("%d galleries, want 3", n)
	}
	if n := p.Count(`SELECT count(*) FROM idempotency_keys WHERE status = 403`); n != 0 {
		t.Fatalf("%d stored 403s", n)
	}
}

// TestEntriesPerAPIKey: another key sending the same Idempotency-Key (and
// the same request) runs its own request, and each key replays its own.
func TestEntriesPerAPIKey(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	other := p.NewKey(false, "*")
	body := map[string]any{"name": "w"}

	mine := post(env, p.Key, "shared", body).Expect(t, 201)
	theirs := post(env, other, "shared", body).Expect(t, 201)
	if theirs.Header.Get("Idempotent-Replayed") != "" || bytes.Equal(theirs.Body, mine.Body) {
		t.Fatalf("another key's request was answered with the first key's entry: %v %s", theirs.Header, theirs.Body)
	}
	for _, c := range []struct {
		key  string
		want []byte
	}{{p.Key, mine.Body}, {other, theirs.Body}} {
		r := post(env, c.key, "shared", body).Expect(t, 201)
		if r.Header.Get("Idempotent-Replayed") != "true" || !bytes.Equal(r.Body, c.want) {
			t.Fatalf("a key must replay its own entry: %s, want %s", r.Body, c.want)
		}
	}
	// another request under the same Idempotency-Key is judged per key too
	post(env, other, "shared", map[string]any{"name": "x"}).Problem(t, 409, "idempotency_conflict")
	if n := p.Count(`SELECT count(*) FROM widgets`); n != 2 {
		t.Fatalf("%d widgets, want 2", n)
	}
}

// TestRefusalsAreNotStored: a 401, 403 or 429 from the handler releases
// the key, and the retry runs.
func TestRefusalsAreNotStored(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status int
		code   string
		err    error
	}{
		{401, "unauthorized", httpapi.Unauthorized("the key was revoked")},
		{403, "forbidden", httpapi.Forbidden("widgets:write")},
		{429, "rate_limited", httpapi.RateLimited(1, "AI cost ceiling")},
	} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			t.Parallel()
			var refuse atomic.Bool
			refuse.Store(true)
			env, p := setup(t, func(ctx context.Context, tx pgx.Tx, req apitest.WidgetRequest) error {
				if refuse.Swap(false) {
					return c.err
				}
				return nil
			})
			body := map[string]any{"name": "w"}
			post(env, p.Key, "k", body).Problem(t, c.status, c.code)
			r := post(env, p.Key, "k", body)
			if r.Status != 201 || r.Header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("after a %d the key must run again: %d %s", c.status, r.Status, r.Body)
			}
			if n := p.Count(`SELECT count(*) FROM widgets`); n != 1 {
				t.Fatalf("%d widgets, want 1", n)
			}
		})
	}
}

// TestUnauthenticatedNotReserved: a request refused for its credentials
// never reaches the step, so the key is free for the valid key.
func TestUnauthenticatedNotReserved(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	body := map[string]any{"name": "w"}
	post(env, "pln_live_"+strings.Repeat("0", len(p.Key)-len("pln_live_")), "k", body).Problem(t, 401, "unauthorized")
	if r := post(env, p.Key, "k", body).Expect(t, 201); r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("a 401 was replayed")
	}
	if n := p.Count(`SELECT count(*) FROM idempotency_keys`); n != 1 {
		t.Fatalf("%d entries, want 1", n)
	}
}
