package jobs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	sse "github.com/tmaxmax/go-sse"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/provisioning/pgtest"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// sseEvent is one received event.
type sseEvent struct {
	ID   string
	Type string
	Data string
}

func (e sseEvent) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
		t.Fatalf("event %s data is not JSON: %v: %s", e.Type, err, e.Data)
	}
	return m
}

// openStream opens the SSE stream of a job on baseURL.
func openStream(t testing.TB, ctx context.Context, baseURL, key, jobID, lastEventID string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", baseURL+"/v1/jobs/"+jobID+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if lastEventID != "" {
		req.Header.Set("Last-Event-ID", lastEventID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return res
}

// readEvents reads events until done (included) or the stream ends; each
// event is also sent on live when it is not nil.
func readEvents(t testing.TB, res *http.Response, live chan<- sseEvent) []sseEvent {
	t.Helper()
	var out []sseEvent
	for ev, err := range sse.Read(res.Body, nil) {
		if err != nil {
			break
		}
		e := sseEvent{ID: ev.LastEventID, Type: ev.Type, Data: ev.Data}
		out = append(out, e)
		if live != nil {
			live <- e
		}
		if e.Type == jobs.EventDone {
			break
		}
	}
	return out
}

// streamAll reads a job's whole stream (bounded by 30 s).
func streamAll(t testing.TB, baseURL, key, jobID, lastEventID string) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return readEvents(t, openStream(t, ctx, baseURL, key, jobID, lastEventID), nil)
}

// ledger returns the net amount and the rows charged under ref.
func ledger(t testing.TB, p *apitest.Project, ref string) (net int64, rows int) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT COALESCE(sum(amount), 0), count(*) FROM credit_ledger WHERE ref = $1`, ref).Scan(&net, &rows)
	})
	if err != nil {
		t.Fatal(err)
	}
	return net, rows
}

// riverState is the state of the River job behind a Job.
func riverState(t testing.TB, env *apitest.Env, p *apitest.Project, jobID string) string {
	t.Helper()
	var state string
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT r.state FROM jobs j JOIN river.river_job r ON r.id = j.river_id WHERE j.id = $1`, jobID).Scan(&state)
	})
	if err != nil {
		t.Fatal(err)
	}
	return state
}

// chiWithAuth mounts api behind the authenticator, as the server does.
func chiWithAuth(env *apitest.Env, api *jobs.Service) http.Handler {
	r := httpapi.NewRouter()
	r.Use(httpapi.Base(env.Config.ErrorBase, slog.New(slog.DiscardHandler), 1<<20))
	r.Route("/v1", func(v1 chi.Router) {
		v1.Use(env.Server.Central.Identify, tenant.Authenticated)
		api.Routes(v1)
	})
	return r
}
