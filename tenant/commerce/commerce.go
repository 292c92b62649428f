// Package commerce is the commerce pillar: product categories (a tree),
// products and their variants, orders with their state machine, hosted
// checkout on the project's connected payment account, the account's
// onboarding, and the processor's signed webhook that moves orders along.
//
// Orders exist before payment. A checkout reserves tracked stock with one
// conditional UPDATE per line (reserved may never exceed stock_quantity, a
// table check), so concurrent checkouts never oversell; payment consumes
// the reservation and expiry or cancellation releases it. Every state
// change emits its event inside the transaction that makes it.
package commerce

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
)

// Event topics of the pillar.
const (
	TopicOrderCreated   = "order.created"
	TopicOrderPaid      = "order.paid"
	TopicOrderFulfilled = "order.fulfilled"
	TopicOrderCancelled = "order.cancelled"
	TopicOrderRefunded  = "order.refunded"
	TopicConnectUpdated = "connect.account_updated"
)

// CheckoutTTL is how long a checkout session stays payable, and so how
// long its stock stays reserved (the processor allows 30 min to 24 h).
const CheckoutTTL = time.Hour

// releaseGrace is how long after a session's expiry its order is checked
// by the release job, should the processor's expiry event not arrive.
const releaseGrace = 15 * time.Minute

// Deps is what the pillar is built with.
type Deps struct {
	Plane    tenant.ControlPlane
	Payments *payments.Client
	// Queue schedules the release job of each checkout.
	Queue *queue.Client
	// Events receives the order and connect events.
	Events tenant.Emitter
	Logger *slog.Logger
}

// Service is the commerce pillar: its routes, and the release job.
type Service struct {
	plane  tenant.ControlPlane
	pay    *payments.Client
	events tenant.Emitter
	logger *slog.Logger
	queue  *queue.Client
	now    func() time.Time
}

// New builds the pillar.
func New(d Deps) *Service {
	l := d.Logger
	if l == nil {
		l = slog.Default()
	}
	return &Service{plane: d.Plane, pay: d.Payments, queue: d.Queue, events: d.Events, logger: l, now: time.Now}
}

// Routes mounts the authenticated routes: commerce:read for GET,
// commerce:write for other methods, commerce:admin for manual orders,
// refunds and onboarding (docs/decisions.md section 3).
func (s *Service) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("commerce"))
		r.Get("/product-categories", tenant.Handle(s.listCategories))
		r.Post("/product-categories", tenant.Handle(s.createCategory))
		r.Get("/product-categories/{id}", tenant.Handle(getByID(getCategory)))
		r.Patch("/product-categories/{id}", tenant.Handle(s.updateCategory))
		r.Delete("/product-categories/{id}", tenant.Handle(deleteByID(deleteCategory)))

		r.Get("/products", tenant.Handle(s.listProducts))
		r.Post("/products", tenant.Handle(s.createProduct))
		r.Get("/products/{id}", tenant.Handle(s.getProduct))
		r.Patch("/products/{id}", tenant.Handle(s.updateProduct))
		r.Delete("/products/{id}", tenant.Handle(deleteByID(deleteProduct)))
		r.Get("/products/{id}/variants", tenant.Handle(s.listVariants))
		r.Post("/products/{id}/variants", tenant.Handle(s.createVariant))
		r.Get("/products/{id}/variants/{variant_id}", tenant.Handle(s.getVariant))
		r.Patch("/products/{id}/variants/{variant_id}", tenant.Handle(s.updateVariant))
		r.Delete("/products/{id}/variants/{variant_id}", tenant.Handle(s.deleteVariant))

		r.Get("/orders", tenant.Handle(s.listOrders))
		r.Get("/orders/{id}", tenant.Handle(s.getOrder))
		r.Post("/orders/{id}/fulfill", tenant.Handle(s.fulfillOrder))
		r.Post("/orders/{id}/cancel", tenant.Handle(s.cancelOrder))

		r.Post("/checkout-sessions", tenant.Handle(s.createCheckout))
		r.Get("/payments/connect", tenant.Handle(s.getConnect))
	})
	r.Group(func(r chi.Router) {
		r.Use(tenant.RequireScope("commerce:admin"))
		r.Post("/orders", tenant.Handle(s.createManualOrder))
		r.Post("/orders/{id}/refund", tenant.Handle(s.refundOrder))
		r.Post("/payments/connect/onboard", tenant.Handle(s.onboard))
	})
}

// PublicRoutes mounts the keyless reads under /v1/public: active products
// and active categories.
func (s *Service) PublicRoutes(r chi.Router) {
	r.Get("/products", tenant.Handle(s.publicListProducts))
	r.Get("/products/{id_or_slug}", tenant.Handle(s.publicGetProduct))
	r.Get("/product-categories", tenant.Handle(s.publicListCategories))
}

// KeylessRoutes mounts the processor's webhook, which needs no key: its
// signature authenticates it.
func (s *Service) KeylessRoutes(r chi.Router) {
	r.Post("/payments/webhook", httpapi.H(s.processorWebhook))
}

// Workers adds the release worker, which settles orders whose checkout
// expired without a processor event.
func (s *Service) Workers(w *river.Workers) { river.AddWorker(w, &releaseWorker{s: s}) }

func (s *Service) emit(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, topic string, data any) error {
	if s.events == nil {
		return nil
	}
	return s.events.Emit(ctx, tx, sc, topic, data)
}

// getByID serves GET of one row by the id of its path, read by get.
func getByID[T any](get func(ctx context.Context, tx tenant.Querier, id int64) (T, error)) tenant.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
		id, err := httpapi.PathID(r, "id", errNoResource)
		if err != nil {
			return err
		}
		v, err := get(r.Context(), sc.Reader(), id)
		if err != nil {
			return err
		}
		return httpapi.JSON(w, 200, v)
	}
}

// deleteByID serves DELETE of one row by the id of its path, removed by
// del: 204, or del's not-found failure.
func deleteByID(del func(ctx context.Context, tx pgx.Tx, id int64) error) tenant.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
		id, err := httpapi.PathID(r, "id", errNoResource)
		if err != nil {
			return err
		}
		if err := sc.Tx(r.Context(), func(tx pgx.Tx) error { return del(r.Context(), tx, id) }); err != nil {
			return err
		}
		return httpapi.NoContent(w)
	}
}

// input is a request body that validates itself, for a create or a PATCH.
type input interface {
	validate(create bool) error
}

// decodeInput reads the body of r into in and validates it.
func decodeInput(r *http.Request, in input, create bool) error {
	if err := httpapi.Decode(r, in); err != nil {
		return err
	}
	return in.validate(create)
}

// checkName trims a name in place and checks its length.
func checkName(v *httpapi.Validator, field string, name *string) {
	*name = strings.TrimSpace(*name)
	v.Check(*name != "" && utf8.RuneCountInString(*name) <= 255, field, "must be 1 to 255 characters")
}

// Nullable is an optional JSON field that can also be set to null: Set
// tells whether it was present, Value is nil for null.
type Nullable[T any] struct {
	Set   bool
	Value *T
}

// UnmarshalJSON records presence and the value.
func (n *Nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(bytes.TrimSpace(b)) == "null" {
		n.Value = nil
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	n.Value = &v
	return nil
}

// validSortOrder reports whether n fits the sort_order column (a 32-bit
// integer): a value beyond it is a 422, not a failed insert.
func validSortOrder(n int) bool { return n >= math.MinInt32 && n <= math.MaxInt32 }

const sortOrderMsg = "must be an integer from -2147483648 to 2147483647"

// validURL reports whether s is an absolute http(s) URL.
func validURL(s string) bool {
	if len(s) > 2048 {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}
