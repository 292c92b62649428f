package commerce

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/tenant"
)

// CheckoutSession is the Checkout session response.
type CheckoutSession struct {
	OrderID          int64     `json:"order_id"`
	PaymentSessionID string    `json:"payment_session_id"`
	CheckoutURL      string    `json:"checkout_url"`
	ExpiresAt        time.Time `json:"expires_at"`
}

// checkoutInput is the body of POST /checkout-sessions.
type checkoutInput struct {
	Items      []orderItemInput `json:"items" required:"true"`
	Customer   *customerInput   `json:"customer"`
	SuccessURL string           `json:"success_url" required:"true"`
	CancelURL  string           `json:"cancel_url" required:"true"`
}

// errNotReady is the 409 of a checkout before the project's account can
// take charges (docs/decisions.md section 2 settles it as 409).
func errNotReady(a payments.Account) error {
	if a.ID == "" {
		return httpapi.Conflict(httpapi.CodeConnectNotReady,
			"the project has no payment account yet: onboard it with POST /v1/payments/connect/onboard")
	}
	return httpapi.Conflict(httpapi.CodeConnectNotReady,
		"the project's payment account cannot take charges yet: finish onboarding (GET /v1/payments/connect shows its status)")
}

// createCheckout creates a pending order holding its tracked stock, then a
// hosted checkout session for it on the project's connected account.
//
// The reservation commits before the processor is called, so concurrent
// checkouts of one product wait on each other only for one UPDATE, never
// for a network call. A release job is scheduled in the same transaction:
// if the session is neither paid nor expired by its processor events (or
// never got created because the process stopped), the job settles the
// order and frees the stock. A failed processor call frees it at once.
func (s *Service) createCheckout(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var in checkoutInput
	var v httpapi.Validator
	cust, err := decodeOrder(r, &in, &v)
	if err != nil {
		return err
	}
	v.Check(validURL(in.SuccessURL), "success_url", "must be an absolute http(s) URL")
	v.Check(validURL(in.CancelURL), "cancel_url", "must be an absolute http(s) URL")
	if err := v.Err(); err != nil {
		return err
	}
	if !s.pay.Enabled() {
		return payments.ErrNotConfigured
	}
	if s.queue == nil {
		return errors.New("commerce: no River client to schedule the reservation's release")
	}
	ctx := r.Context()
	expires := s.now().Add(CheckoutTTL).Truncate(time.Second)
	oa, err := tenant.TxV(ctx, sc, func(tx pgx.Tx) (orderAccount, error) {
		return s.reserveCheckout(ctx, tx, sc, in.Items, cust, expires)
	})
	if err != nil {
		return err
	}
	o, account := oa.order, oa.account.ID

	items := make([]payments.LineItem, len(o.lines))
	for i, l := range o.lines {
		items[i] = payments.LineItem{Name: l.Name, UnitPrice: l.UnitPrice, Quantity: l.Quantity}
	}
	sess, err := s.pay.CreateCheckout(ctx, payments.CheckoutParams{
		Account: account, IdempotencyKey: r.Header.Get("Idempotency-Key"), ProjectID: sc.Project.ID, OrderID: o.ID,
		Currency: o.Currency, Items: items, CustomerEmail: cust.Email,
		SuccessURL: in.SuccessURL, CancelURL: in.CancelURL, ExpiresAt: expires,
	})
	if err != nil {
		// The session does not exist: the order never did for the caller.
		if uerr := s.abandon(context.WithoutCancel(ctx), sc, o.ID); uerr != nil {
			s.logger.ErrorContext(ctx, "releasing a failed checkout", "project", sc.Project.ID, "order", o.ID, "err", uerr)
		}
		return err
	}

	o, err = tenant.TxV(ctx, sc, func(tx pgx.Tx) (*orderRow, error) { return s.attachSession(ctx, tx, sc, o.ID, sess) })
	if err != nil {
		return err
	}
	if cancelledUnpaid(o) { // cancelled while the session was being made
		if err := s.pay.ExpireCheckout(context.WithoutCancel(ctx), account, sess.ID); err != nil && !errors.Is(err, payments.ErrSessionClosed) {
			s.logger.ErrorContext(ctx, "expiring the session of a cancelled order", "project", sc.Project.ID, "order", o.ID, "err", err)
		}
		return httpapi.Conflict(httpapi.CodeConflict, "the order was cancelled while its checkout was being created")
	}
	return httpapi.JSON(w, 201, CheckoutSession{OrderID: o.ID, PaymentSessionID: sess.ID, CheckoutURL: sess.URL, ExpiresAt: sess.ExpiresAt.UTC()})
}

// reserveCheckout checks that the project's account can take charges,
// prices the lines, reserves their stock, stores the pending order and
// schedules its release job; it returns the order and the account.
func (s *Service) reserveCheckout(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, items []orderItemInput, cust Customer,
	expires time.Time,
) (orderAccount, error) {
	a, err := loadAccount(ctx, tx)
	if err != nil {
		return orderAccount{}, err
	}
	if a.ID == "" || !a.ChargesEnabled {
		return orderAccount{}, errNotReady(a)
	}
	lines, cur, sub, err := resolveLines(ctx, tx, items, true)
	if err != nil {
		return orderAccount{}, err
	}
	if err := reserve(ctx, tx, lines); err != nil {
		return orderAccount{}, err
	}
	o, err := insertOrder(ctx, tx, &orderRow{Order: Order{Status: StatusPending, PaymentStatus: PaymentUnpaid, Subtotal: sub,
		Currency: cur, Customer: cust}, lines: lines, source: "checkout", reserved: true, expiresAt: &expires})
	if err != nil {
		return orderAccount{}, err
	}
	_, err = s.queue.InsertTx(ctx, tx, ReleaseArgs{ProjectID: sc.Project.ID, OrderID: o.ID},
		&river.InsertOpts{ScheduledAt: expires.Add(releaseGrace)})
	return orderAccount{order: o, account: a}, err
}

// cancelledUnpaid reports whether o was cancelled before it was paid.
func cancelledUnpaid(o *orderRow) bool {
	return o.Status == StatusCancelled && o.PaymentStatus == PaymentUnpaid
}

// attachSession records checkout session sess on order id and emits
// order.created; an order cancelled meanwhile (cancelledUnpaid) is
// returned unchanged.
func (s *Service) attachSession(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, id int64, sess payments.Session) (*orderRow, error) {
	o, err := lockOrder(ctx, tx, id)
	if err != nil || cancelledUnpaid(o) {
		return o, err
	}
	if o.PaymentSessionID == nil {
		o.PaymentSessionID = &sess.ID
		if o, err = setOrder(ctx, tx, o); err != nil {
			return nil, err
		}
	}
	if err := setOrderExpiry(ctx, tx, o.ID, sess.ExpiresAt); err != nil {
		return nil, err
	}
	return o, s.emit(ctx, tx, sc, TopicOrderCreated, o.Order)
}

// abandon removes a checkout order whose session could not be created,
// releasing its stock.
func (s *Service) abandon(ctx context.Context, sc *tenant.Scope, orderID int64) error {
	return sc.Tx(ctx, func(tx pgx.Tx) error {
		o, err := lockOrder(ctx, tx, orderID)
		if err != nil {
			return err
		}
		if o.PaymentSessionID != nil || o.Status != StatusPending {
			return nil // the processor's events got to it: keep it
		}
		if o.reserved {
			if err := release(ctx, tx, o.lines); err != nil {
				return err
			}
		}
		return deleteOrder(ctx, tx, orderID)
	})
}
