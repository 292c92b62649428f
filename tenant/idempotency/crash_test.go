package idempotency_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/idempotency"
)

// exec runs statements in the project's schema.
func exec(t *testing.T, p *apitest.Project, sql string) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), sql)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestResponseLostAfterCommit is the crash between the effect's commit and
// the storing of its response: the store fails (a trigger refuses it, as
// a process dying at that moment would never make it), the lease then
// lapses with no process renewing it, and the retry must not run the
// effect again. The mark the effect's transaction wrote tells it the
// request ran.
func TestResponseLostAfterCommit(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	body := map[string]any{"name": "w"}
	exec(t, p, `CREATE FUNCTION lose_response() RETURNS trigger LANGUAGE plpgsql AS
		$$ BEGIN RAISE EXCEPTION 'the process died before storing the response'; END $$;
		CREATE TRIGGER lose_response BEFORE UPDATE ON idempotency_keys FOR EACH ROW
		WHEN (NEW.status IS NOT NULL) EXECUTE FUNCTION lose_response()`)

	post(env, p.Key, "crash", body).Expect(t, 201)
	if n := p.Count(`SELECT count(*) FROM idempotency_keys WHERE key = 'crash' AND status IS NULL AND committed`); n != 1 {
		t.Fatal("the effect's transaction did not mark the reservation committed")
	}
	// while the lease runs the request may still store its answer
	post(env, p.Key, "crash", body).Problem(t, 409, "conflict")

	// the process is gone: nothing renews the lease, which lapses
	exec(t, p, `DROP TRIGGER lose_response ON idempotency_keys;
		UPDATE idempotency_keys SET locked_until = now() - interval '1 second' WHERE key = 'crash'`)
	for range 2 {
		r := post(env, p.Key, "crash", body)
		if pr := r.Problem(t, 409, "idempotency_conflict"); !strings.Contains(pr["detail"].(string), "response was lost") {
			t.Fatalf("detail: %v", pr["detail"])
		}
	}
	if p.Count(`SELECT count(*) FROM widgets`) != 1 || p.Count(charges) != 1 {
		t.Fatal("the retry ran the committed effect again")
	}
	// another request under the key is still a plain mismatch
	post(env, p.Key, "crash", map[string]any{"name": "v"}).Problem(t, 409, "idempotency_conflict")
}

// serveWith runs requests through the middleware around a tenant route,
// in the project's scope (a keyless one: entries under PublicKeyID).
func serveWith(env *apitest.Env, p *apitest.Project, h tenant.HandlerFunc) func(path, key string) *apitest.Resp {
	logger := slog.New(slog.DiscardHandler)
	m := &idempotency.Middleware{Logger: logger, Lease: 30 * time.Second, Queue: env.Server.River}
	handler := httpapi.Base("https://errors.test", logger, 1<<20)(m.Handler(tenant.Handle(h)))
	return func(path, key string) *apitest.Resp {
		req := httptest.NewRequest("POST", path, strings.NewReader(`{}`))
		req.Header.Set("Idempotency-Key", key)
		req = req.WithContext(tenant.WithScope(req.Context(), p.Scope))
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, req)
		return &apitest.Resp{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
	}
}

// TestFailureAfterCommit: a request that crashes (panics) after one of its
// transactions committed is not run again by a retry; one whose
// transaction only read is. A request that answers 5xx after a commit has
// accounted for it (here it undoes it, as checkout abandons its order when
// the processor fails), and the contract lets its retry run.
func TestFailureAfterCommit(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	runs := map[string]*atomic.Int32{"/v1/panic": {}, "/v1/read": {}, "/v1/undo": {}}
	serve := serveWith(env, p, func(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
		ctx, path := r.Context(), r.URL.Path
		n := runs[path].Add(1)
		err := s.Tx(ctx, func(tx pgx.Tx) error {
			if path == "/v1/read" {
				return tx.QueryRow(ctx, `SELECT count(*) FROM widgets`).Scan(new(int))
			}
			_, err := tx.Exec(ctx, `INSERT INTO widgets (name) VALUES ($1)`, path)
			return err
		})
		switch {
		case err != nil:
			return err
		case path == "/v1/undo" && n == 1:
			if err := s.Tx(ctx, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, `DELETE FROM widgets WHERE name = $1`, path)
				return err
			}); err != nil {
				return err
			}
			return httpapi.Fail(httpapi.ErrUpstream, "the processor failed")
		case path == "/v1/undo":
			return httpapi.JSON(w, 201, map[string]string{"ok": "yes"})
		}
		panic("crashed after the commit")
	})
	widgets := func(path string) int { return p.Count(`SELECT count(*) FROM widgets WHERE name = $1`, path) }

	serve("/v1/panic", "k").Problem(t, 500, "internal_error")
	serve("/v1/panic", "k").Problem(t, 409, "idempotency_conflict")
	if n := runs["/v1/panic"].Load(); n != 1 || widgets("/v1/panic") != 1 {
		t.Fatalf("ran %d times, %d widgets; want once", n, widgets("/v1/panic"))
	}

	serve("/v1/read", "r").Problem(t, 500, "internal_error")
	serve("/v1/read", "r").Problem(t, 500, "internal_error")
	if n := runs["/v1/read"].Load(); n != 2 {
		t.Fatalf("a request that only read must run again: %d runs", n)
	}

	serve("/v1/undo", "u").Problem(t, 502, "upstream_unavailable")
	if r := serve("/v1/undo", "u").Expect(t, 201); r.Header.Get("Idempotent-Replayed") != "" {
		t.Fatal("the retry of a 5xx must run")
	}
	if n := runs["/v1/undo"].Load(); n != 2 || widgets("/v1/undo") != 1 {
		t.Fatalf("ran %d times, %d widgets; want the retry's one", n, widgets("/v1/undo"))
	}
}

// TestTakenOverRollsBack: a request whose reservation was taken over (its
// lease lapsed, say the process stalled, and a retry took the key) must
// not commit its effect: the retry runs it.
func TestTakenOverRollsBack(t *testing.T) {
	t.Parallel()
	env, p := setup(t, nil)
	serve := serveWith(env, p, func(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
		ctx := r.Context()
		err := s.Tx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO widgets (name) VALUES ('w')`); err != nil {
				return err
			}
			// the retry takes the key over, on its own connection
			_, err := s.Pool().Exec(ctx, `UPDATE `+pgx.Identifier{s.Project.Schema, "idempotency_keys"}.Sanitize()+
				` SET owner = gen_random_uuid() WHERE key = 'stalled'`)
			return err
		})
		if err != nil {
			return err
		}
		return httpapi.JSON(w, 201, map[string]string{"ok": "yes"})
	})
	r := serve("/v1/stalled", "stalled")
	r.Problem(t, 409, "conflict")
	if r.Header.Get("Retry-After") != "1" {
		t.Fatalf("want Retry-After: 1: %v", r.Header)
	}
	if n := p.Count(`SELECT count(*) FROM widgets`); n != 0 {
		t.Fatalf("the stalled request committed its effect: %d widgets", n)
	}
}
