package central_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/openapi"
)

// TestHealthUnavailable: with the database unreachable, /v1/health says
// so with 503 and Retry-After, and the rest of the shape stays: the API's
// version and the build the process was given.
func TestHealthUnavailable(t *testing.T) {
	t.Parallel()
	cfg, err := config.Load(func(k string) string {
		return map[string]string{"PLINTH_SECRET": "s"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	srv, err := central.NewServer(context.Background(), cfg, pool, slog.New(slog.DiscardHandler), central.Options{Build: "v1.2.3-health"})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	srv.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/health", nil))
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" || body["status"] != "unavailable" || body["version"] != openapi.Version || body["build"] != "v1.2.3-health" || body["uptime_s"] == nil {
		t.Fatalf("%d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if rec.Header().Get("X-Request-Id") == "" {
		t.Fatal("no X-Request-Id")
	}
}
