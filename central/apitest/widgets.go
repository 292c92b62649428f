package apitest

import (
	"context"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
)

// WidgetRequest is the body of the test route POST /v1/test/widgets.
type WidgetRequest struct {
	Name string `json:"name" required:"true"`
	// Op and Cost (hundredths) are what the write is charged; default
	// content_update, 1 credit.
	Op   *string `json:"op"`
	Cost *int64  `json:"cost"`
	// SleepMS holds the transaction open, to make requests overlap.
	SleepMS *int `json:"sleep_ms"`
	// Tag is passed to the hook.
	Tag *string `json:"tag"`
}

// WidgetHook runs inside the write's transaction, after the insert and
// before the charge; an error rolls the write back.
type WidgetHook func(ctx context.Context, tx pgx.Tx, req WidgetRequest) error

// WithWidgets mounts POST /v1/test/widgets (and, keyless, POST
// /v1/public/test/widgets), a paid write like a pillar's:
// one transaction inserts a row into the project's widgets table (see
// Project.EnableWidgets) and charges credits through credits.Charge, so
// tests exercise the real rate-limit, idempotency and credit paths.
func WithWidgets(hook WidgetHook) Option {
	return func(_ *config.Config, o *central.Options) {
		mount := func(r chi.Router) {
			r.Post("/test/widgets", tenant.Handle(func(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
				return createWidget(w, r, s, hook)
			}))
		}
		o.TestRoutes, o.TestPublicRoutes = mount, mount
	}
}

func createWidget(w http.ResponseWriter, r *http.Request, s *tenant.Scope, hook WidgetHook) error {
	var req WidgetRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	op, cost := "content_update", credits.Unit
	if req.Op != nil {
		op = *req.Op
	}
	if req.Cost != nil {
		cost = *req.Cost
	}
	ctx := r.Context()
	var id int64
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO widgets (name) VALUES ($1) RETURNING id`, req.Name).Scan(&id); err != nil {
			return err
		}
		if req.SleepMS != nil {
			if _, err := tx.Exec(ctx, `SELECT pg_sleep($1)`, float64(*req.SleepMS)/1000); err != nil {
				return err
			}
		}
		if hook != nil {
			if err := hook(ctx, tx, req); err != nil {
				return err
			}
		}
		return credits.Charge(ctx, tx, s, op, cost, "")
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/test/widgets/"+time.Now().Format("150405.000000"))
	return httpapi.JSON(w, http.StatusCreated, map[string]any{"id": id, "name": req.Name})
}

// PostWidget is a request to the test route POST /v1/test/widgets with the
// key, and the Idempotency-Key idemKey unless it is empty.
func PostWidget(key, idemKey string, body any) Request {
	h := map[string]string{}
	if idemKey != "" {
		h["Idempotency-Key"] = idemKey
	}
	return Request{Method: "POST", Path: "/v1/test/widgets", Key: key, Body: body, Header: h}
}

// EnableWidgets creates the widgets table of the test route in the
// project's schema.
func (p *Project) EnableWidgets() {
	p.env.T.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `CREATE TABLE widgets (id bigserial PRIMARY KEY, name text NOT NULL)`)
		return err
	})
	if err != nil {
		p.env.T.Fatal(err)
	}
}

// Count runs a count query in the project's schema.
func (p *Project) Count(query string, args ...any) int {
	p.env.T.Helper()
	var n int
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), query, args...).Scan(&n)
	})
	if err != nil {
		p.env.T.Fatal(err)
	}
	return n
}
