package commerce

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/stripe/stripe-go/v76"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/tenant"
)

// The processor's webhook: POST /v1/payments/webhook, no key. The
// Stripe-Signature header is verified under STRIPE_WEBHOOK_SECRET (400 when
// it does not verify). The event names the connected account, which the
// central payment_accounts table maps to its project; an event without one
// is placed by the project_id metadata every checkout carries, and when
// both exist they must agree. Each event is applied once per project: its
// id is recorded in the same transaction as its effects, so a repeated
// delivery changes nothing and a failed one (5xx, retried by the
// processor) left nothing behind.

type eventHandler func(s *Service, ctx context.Context, tx pgx.Tx, sc *tenant.Scope, ev stripe.Event) error

var eventHandlers = map[stripe.EventType]eventHandler{
	"checkout.session.completed":               (*Service).onSessionCompleted,
	"checkout.session.async_payment_succeeded": (*Service).onSessionCompleted,
	"checkout.session.expired":                 (*Service).onSessionEnded,
	"checkout.session.async_payment_failed":    (*Service).onSessionEnded,
	"charge.refunded":                          (*Service).onChargeRefunded,
	"refund.created":                           (*Service).onRefund,
	"refund.updated":                           (*Service).onRefund,
	"charge.refund.updated":                    (*Service).onRefund,
	"account.updated":                          (*Service).onAccountUpdated,
}

// webhookAck is the body answered to the processor.
type webhookAck struct {
	Received  bool   `json:"received"`
	Duplicate bool   `json:"duplicate,omitempty"`
	Ignored   string `json:"ignored,omitempty"`
}

func (s *Service) processorWebhook(w http.ResponseWriter, r *http.Request) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, httpapi.MaxJSONBody+1))
	if err != nil {
		return httpapi.BadRequest("the body could not be read")
	}
	if len(body) > httpapi.MaxJSONBody {
		return httpapi.NewError(http.StatusRequestEntityTooLarge, httpapi.CodeBadRequest, "the body is larger than 1 MiB")
	}
	ev, err := s.pay.VerifyEvent(body, r.Header.Get("Stripe-Signature"))
	if err != nil {
		return err
	}
	ctx := r.Context()
	handle, ok := eventHandlers[ev.Type]
	if !ok {
		return httpapi.JSON(w, 200, webhookAck{Received: true, Ignored: "event type not used"})
	}
	sc, why, err := s.eventProject(ctx, ev)
	if err != nil {
		return err
	}
	if sc == nil {
		s.logger.InfoContext(ctx, "processor event ignored", "event", ev.ID, "type", ev.Type, "account", ev.Account, "why", why)
		return httpapi.JSON(w, 200, webhookAck{Received: true, Ignored: why})
	}
	fresh, err := tenant.TxV(ctx, sc, func(tx pgx.Tx) (bool, error) {
		fresh, err := recordEvent(ctx, tx, ev.ID, string(ev.Type))
		if err != nil || !fresh {
			return false, err
		}
		return true, handle(s, ctx, tx, sc, ev)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, webhookAck{Received: true, Duplicate: !fresh})
}

// eventProject finds the project an event belongs to, or nil with the
// reason it is not ours.
func (s *Service) eventProject(ctx context.Context, ev stripe.Event) (*tenant.Scope, string, error) {
	var obj struct {
		Metadata map[string]string `json:"metadata"`
	}
	_ = json.Unmarshal(ev.Data.Raw, &obj)
	meta := obj.Metadata["project_id"]
	pid := ""
	if ev.Account != "" {
		var err error
		pid, err = s.plane.ProjectForAccount(ctx, ev.Account)
		if errors.Is(err, httpapi.ErrNotFound) {
			return nil, "unknown connected account", nil
		}
		if err != nil {
			return nil, "", err
		}
		if meta != "" && meta != pid {
			return nil, "metadata project_id does not match the account's project", nil
		}
	} else {
		pid = meta
	}
	if pid == "" {
		return nil, "the event names no connected account and no project", nil
	}
	sc, err := s.plane.ScopeFor(ctx, pid)
	if errors.Is(err, httpapi.ErrNotFound) {
		return nil, "unknown project", nil
	}
	if err != nil {
		return nil, "", err
	}
	return sc, "", nil
}

// expandable reads an id that the processor sends either as a string or
// as the expanded object.
type expandable string

// UnmarshalJSON reads the id of either form.
func (e *expandable) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*e = expandable(s)
		return nil
	}
	var o struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return err
	}
	*e = expandable(o.ID)
	return nil
}

type sessionObject struct {
	ID                string            `json:"id"`
	PaymentStatus     string            `json:"payment_status"`
	PaymentIntent     expandable        `json:"payment_intent"`
	ClientReferenceID string            `json:"client_reference_id"`
	Metadata          map[string]string `json:"metadata"`
}

func decodeObject(ev stripe.Event, v any) error {
	if err := json.Unmarshal(ev.Data.Raw, v); err != nil {
		return httpapi.BadRequest("the event's object is not readable: " + err.Error())
	}
	return nil
}

// metaOrderID is the order id a checkout's metadata (or its client
// reference) carries, 0 if none.
func metaOrderID(meta map[string]string, ref string) int64 {
	for _, s := range []string{meta["order_id"], ref} {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// sessionOrder decodes the checkout session of ev into obj and locks its
// order, nil when the project has none (a session this service did not
// create).
func (s *Service) sessionOrder(ctx context.Context, tx pgx.Tx, ev stripe.Event, obj *sessionObject) (*orderRow, error) {
	if err := decodeObject(ev, obj); err != nil {
		return nil, err
	}
	var o *orderRow
	var err error
	if id := metaOrderID(obj.Metadata, obj.ClientReferenceID); id > 0 {
		o, err = lockOrder(ctx, tx, id)
	} else {
		o, err = lockSessionOrder(ctx, tx, obj.ID)
	}
	if errors.Is(err, httpapi.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if o.source != "checkout" || o.PaymentSessionID != nil && *o.PaymentSessionID != obj.ID {
		s.logger.WarnContext(ctx, "processor session does not match its order", "order", o.ID, "session", obj.ID)
		return nil, nil
	}
	return o, nil
}

// onSessionCompleted marks the order paid when the payment is settled; a
// payment that settles later (async) only records its payment intent.
func (s *Service) onSessionCompleted(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, ev stripe.Event) error {
	var obj sessionObject
	o, err := s.sessionOrder(ctx, tx, ev, &obj)
	if err != nil || o == nil {
		return err
	}
	if obj.PaymentStatus == "paid" || obj.PaymentStatus == "no_payment_required" {
		return s.markPaid(ctx, tx, sc, o, obj.ID, string(obj.PaymentIntent))
	}
	if obj.PaymentIntent != "" && o.intentID == nil {
		pi := string(obj.PaymentIntent)
		o.intentID = &pi
		if o.PaymentSessionID == nil {
			o.PaymentSessionID = &obj.ID
		}
		_, err = setOrder(ctx, tx, o)
	}
	return err
}

// onSessionEnded cancels a pending order whose session expired or whose
// delayed payment failed, and frees its stock.
func (s *Service) onSessionEnded(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, ev stripe.Event) error {
	var obj sessionObject
	o, err := s.sessionOrder(ctx, tx, ev, &obj)
	if err != nil || o == nil {
		return err
	}
	if o.Status != StatusPending || o.PaymentStatus != PaymentUnpaid {
		return nil
	}
	_, err = s.cancel(ctx, tx, sc, o)
	return err
}

// paymentRef names the payment a charge or a refund belongs to.
type paymentRef struct {
	PaymentIntent expandable        `json:"payment_intent"`
	Metadata      map[string]string `json:"metadata"`
}

func (p *paymentRef) ref() *paymentRef { return p }

// paymentObjectOrder decodes the object of ev (a charge or a refund) into
// obj and locks the order its payment paid; nil when none.
func paymentObjectOrder(ctx context.Context, tx pgx.Tx, ev stripe.Event, obj interface{ ref() *paymentRef }) (*orderRow, error) {
	if err := decodeObject(ev, obj); err != nil {
		return nil, err
	}
	p := obj.ref()
	return paymentOrder(ctx, tx, string(p.PaymentIntent), p.Metadata)
}

// paymentOrder locks the order paid by a payment intent, else the one its
// metadata names; nil when none.
func paymentOrder(ctx context.Context, tx pgx.Tx, intent string, meta map[string]string) (*orderRow, error) {
	o, err := lockIntentOrder(ctx, tx, intent)
	if errors.Is(err, httpapi.ErrNotFound) {
		if id := metaOrderID(meta, ""); id > 0 {
			o, err = lockOrder(ctx, tx, id)
			if err == nil && o.intentID != nil && *o.intentID != intent {
				return nil, nil
			}
		}
	}
	if errors.Is(err, httpapi.ErrNotFound) {
		return nil, nil
	}
	return o, err
}

type chargeObject struct {
	ID string `json:"id"`
	paymentRef
	AmountRefunded int64 `json:"amount_refunded"`
}

// onChargeRefunded takes the processor's running refunded total of the
// charge, which also covers refunds made outside this API.
func (s *Service) onChargeRefunded(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, ev stripe.Event) error {
	var obj chargeObject
	o, err := paymentObjectOrder(ctx, tx, ev, &obj)
	if err != nil || o == nil {
		return err
	}
	grew := obj.AmountRefunded > o.chargeRefunded
	if grew {
		o.chargeRefunded = obj.AmountRefunded
	}
	_, err = s.settleRefunds(ctx, tx, sc, o, grew)
	return err
}

type refundObject struct {
	ID     string `json:"id"`
	Amount int64  `json:"amount"`
	Status string `json:"status"`
	paymentRef
}

// onRefund records a refund by its id: counted while pending or
// succeeded, dropped when it failed or was cancelled.
func (s *Service) onRefund(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, ev stripe.Event) error {
	var obj refundObject
	o, err := paymentObjectOrder(ctx, tx, ev, &obj)
	if err != nil || o == nil || obj.ID == "" {
		return err
	}
	old, known := o.refunds[obj.ID]
	switch obj.Status {
	case "succeeded", "pending":
		if obj.Amount > 0 {
			o.refunds[obj.ID] = obj.Amount
		}
	case "failed", "canceled":
		delete(o.refunds, obj.ID)
	}
	now, still := o.refunds[obj.ID]
	_, err = s.settleRefunds(ctx, tx, sc, o, known != still || old != now)
	return err
}

// onAccountUpdated stores the connected account's new status and emits
// connect.account_updated when it changed.
func (s *Service) onAccountUpdated(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, ev stripe.Event) error {
	var obj struct {
		ID               string `json:"id"`
		ChargesEnabled   bool   `json:"charges_enabled"`
		PayoutsEnabled   bool   `json:"payouts_enabled"`
		DetailsSubmitted bool   `json:"details_submitted"`
	}
	if err := decodeObject(ev, &obj); err != nil {
		return err
	}
	if obj.ID == "" {
		obj.ID = ev.Account
	}
	return s.storeAccount(ctx, tx, sc, payments.Account{ID: obj.ID, ChargesEnabled: obj.ChargesEnabled,
		PayoutsEnabled: obj.PayoutsEnabled, DetailsSubmitted: obj.DetailsSubmitted})
}
