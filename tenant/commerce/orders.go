package commerce

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/tenant"
)

// Order states and payment states (docs/decisions.md section 5).
const (
	StatusPending    = "pending"
	StatusPaid       = "paid"
	StatusProcessing = "processing"
	StatusDelivered  = "delivered"
	StatusCancelled  = "cancelled"

	PaymentUnpaid            = "unpaid"
	PaymentPaid              = "paid"
	PaymentPartiallyRefunded = "partially_refunded"
	PaymentRefunded          = "refunded"
)

// Item is one line of an order.
type Item struct {
	ProductID int64  `json:"product_id"`
	VariantID *int64 `json:"variant_id"`
	Name      string `json:"name"`
	SKU       string `json:"sku"`
	Quantity  int64  `json:"quantity"`
	UnitPrice int64  `json:"unit_price"`
	Total     int64  `json:"total"`
}

// line is an item as stored: it also tells whether it holds tracked stock.
type line struct {
	Item
	Tracked bool `json:"tracked"`
}

// Customer is the buyer of an order.
type Customer struct {
	Name  string `json:"name"`
	Email string `json:"email"`
}

// Order is the Order resource.
type Order struct {
	ID               int64     `json:"id"`
	Number           string    `json:"number"`
	Status           string    `json:"status"`
	PaymentStatus    string    `json:"payment_status"`
	Items            []Item    `json:"items"`
	Subtotal         int64     `json:"subtotal"`
	Total            int64     `json:"total"`
	RefundedAmount   int64     `json:"refunded_amount"`
	Currency         string    `json:"currency"`
	Customer         Customer  `json:"customer"`
	PaymentSessionID *string   `json:"payment_session_id"`
	CreatedAt        time.Time `json:"created_at"`
	UpdatedAt        time.Time `json:"updated_at"`
}

// orderRow is an order with the state only the server sees.
type orderRow struct {
	Order
	lines          []line
	source         string
	reserved       bool
	intentID       *string
	refunds        map[string]int64 // refund id → amount
	chargeRefunded int64
	expiresAt      *time.Time
}

// Number formats the display number of an order id.
func Number(id int64) string { return fmt.Sprintf("ORD-%06d", id) }

// orderItemInput is a requested line: a product, optionally one of its
// variants, and a quantity.
type orderItemInput struct {
	ProductID *int64 `json:"product_id"`
	VariantID *int64 `json:"variant_id"`
	Quantity  *int64 `json:"quantity"`
}

type customerInput struct {
	Name  *string `json:"name"`
	Email *string `json:"email"`
}

// checkItems validates the shape of requested lines: a missing product_id
// or quantity is a 400 naming it, a bad value a 422.
func checkItems(items []orderItemInput, v *httpapi.Validator) error {
	if len(items) == 0 || len(items) > MaxLines {
		v.Check(false, "items", linesMsg)
		return nil
	}
	for i, it := range items {
		f := "items[" + strconv.Itoa(i) + "]."
		if it.ProductID == nil {
			return httpapi.BadRequest(fmt.Sprintf("missing required field %q", f+"product_id"))
		}
		if it.Quantity == nil {
			return httpapi.BadRequest(fmt.Sprintf("missing required field %q", f+"quantity"))
		}
		v.Check(*it.ProductID > 0, f+"product_id", "must be a product id")
		v.Check(*it.Quantity >= 1 && *it.Quantity <= MaxQuantity, f+"quantity", quantityMsg)
		if it.VariantID != nil {
			v.Check(*it.VariantID > 0, f+"variant_id", "must be a variant id")
		}
	}
	return nil
}

// orderBody is the body of a new order: a checkout or a manual order.
type orderBody interface {
	order() ([]orderItemInput, *customerInput)
}

func (in *manualOrderInput) order() ([]orderItemInput, *customerInput) { return in.Items, in.Customer }
func (in *checkoutInput) order() ([]orderItemInput, *customerInput)    { return in.Items, in.Customer }

// decodeOrder reads the body of a new order into in, validates its lines
// and its customer, and returns the customer, trimmed; field errors are
// left in v.
func decodeOrder(r *http.Request, in orderBody, v *httpapi.Validator) (Customer, error) {
	if err := httpapi.Decode(r, in); err != nil {
		return Customer{}, err
	}
	items, c := in.order()
	if err := checkItems(items, v); err != nil {
		return Customer{}, err
	}
	return c.check(v), nil
}

func (c *customerInput) check(v *httpapi.Validator) Customer {
	var out Customer
	if c == nil {
		return out
	}
	if c.Name != nil {
		out.Name = strings.TrimSpace(*c.Name)
		v.Check(utf8.RuneCountInString(out.Name) <= 255, "customer.name", "must be at most 255 characters")
	}
	if c.Email != nil {
		out.Email = strings.TrimSpace(*c.Email)
		v.Check(out.Email == "" || httpapi.ValidEmail(out.Email), "customer.email", "must be an email address")
	}
	return out
}

// resolveLines prices requested lines from the catalogue. With
// forSale, products must be active and variants active (a checkout);
// a manual order may sell any product that is not archived.
func resolveLines(ctx context.Context, tx pgx.Tx, items []orderItemInput, forSale bool) ([]line, string, int64, error) {
	var v httpapi.Validator
	lines := make([]line, 0, len(items))
	currency := ""
	var subtotal int64
	for i, it := range items {
		f := "items[" + strconv.Itoa(i) + "]."
		p, err := getSaleProduct(ctx, tx, *it.ProductID)
		if errors.Is(err, httpapi.ErrNotFound) {
			v.Check(false, f+"product_id", "no such product")
			continue
		}
		if err != nil {
			return nil, "", 0, err
		}
		if forSale && p.status != "active" || p.status == "archived" {
			v.Check(false, f+"product_id", "the product is not for sale (status "+p.status+")")
			continue
		}
		name, sku, price := p.name, p.sku, p.price
		if it.VariantID != nil {
			pv, err := getSaleVariant(ctx, tx, *it.ProductID, *it.VariantID)
			if errors.Is(err, httpapi.ErrNotFound) {
				v.Check(false, f+"variant_id", "no such variant of this product")
				continue
			}
			if err != nil {
				return nil, "", 0, err
			}
			if forSale && !pv.active {
				v.Check(false, f+"variant_id", "the variant is not for sale")
				continue
			}
			name, price = name+" - "+pv.name, pv.price
			if pv.sku != "" {
				sku = pv.sku
			}
		}
		if currency == "" {
			currency = p.currency
		} else if p.currency != currency {
			v.Check(false, f+"product_id", "all items must be in one currency ("+currency+")")
			continue
		}
		// Checked, not trusted: a price stored before MaxAmount was
		// enforced could wrap the product around to a negative total.
		total, ok := mulAmount(price, *it.Quantity)
		if !ok || total > MaxAmount {
			v.Check(false, f+"quantity", fmt.Sprintf("brings the line's total above %d (unit price %d)", MaxAmount, price))
			continue
		}
		if subtotal, ok = addAmount(subtotal, total); !ok {
			subtotal = math.MaxInt64 // reported below, as above MaxAmount
		}
		lines = append(lines, line{Item: Item{ProductID: *it.ProductID, VariantID: it.VariantID, Name: name, SKU: sku,
			Quantity: *it.Quantity, UnitPrice: price, Total: total}, Tracked: p.tracked})
	}
	v.Check(subtotal <= MaxAmount, "items", totalMsg)
	return lines, currency, subtotal, v.Err()
}

func (s *Service) listOrders(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var v httpapi.Validator
	var status, payment *string
	if st := r.URL.Query().Get("status"); st != "" {
		v.Check(orderStatuses[st], "status", "must be one of pending, paid, processing, delivered, cancelled")
		status = &st
	}
	if ps := r.URL.Query().Get("payment_status"); ps != "" {
		v.Check(paymentStatuses[ps], "payment_status", "must be one of unpaid, paid, partially_refunded, refunded")
		payment = &ps
	}
	if err := v.Err(); err != nil {
		return err
	}
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(after int64, limit int) ([]Order, error) {
		return listOrders(r.Context(), sc.Reader(), after, status, payment, limit)
	}, func(o Order) string { return httpapi.IDText(o.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, list)
}

var (
	orderStatuses   = map[string]bool{StatusPending: true, StatusPaid: true, StatusProcessing: true, StatusDelivered: true, StatusCancelled: true}
	paymentStatuses = map[string]bool{PaymentUnpaid: true, PaymentPaid: true, PaymentPartiallyRefunded: true, PaymentRefunded: true}
)

func (s *Service) getOrder(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	oid, err := httpapi.PathID(r, "id", errNoResource)
	if err != nil {
		return err
	}
	o, err := getOrder(r.Context(), sc.Reader(), oid)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, o.Order)
}

// manualOrderInput is the body of POST /orders: an order taken outside
// checkout. payment_status "paid" records it as paid at once (stock sold);
// "unpaid" (the default) leaves it pending with its stock reserved.
type manualOrderInput struct {
	Items         []orderItemInput `json:"items" required:"true"`
	Customer      *customerInput   `json:"customer"`
	PaymentStatus *string          `json:"payment_status"`
}

func (s *Service) createManualOrder(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var in manualOrderInput
	var v httpapi.Validator
	cust, err := decodeOrder(r, &in, &v)
	if err != nil {
		return err
	}
	paid := false
	if in.PaymentStatus != nil {
		v.Check(*in.PaymentStatus == PaymentUnpaid || *in.PaymentStatus == PaymentPaid, "payment_status", "must be unpaid or paid")
		paid = *in.PaymentStatus == PaymentPaid
	}
	if err := v.Err(); err != nil {
		return err
	}
	o, err := tenant.TxV(r.Context(), sc, func(tx pgx.Tx) (*orderRow, error) {
		return s.manualOrder(r.Context(), tx, sc, in.Items, cust, paid)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, o.Order)
}

// manualOrder stores an order taken outside checkout, paid (its stock
// sold) or pending (its stock reserved), and emits its events.
func (s *Service) manualOrder(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, items []orderItemInput, cust Customer, paid bool) (*orderRow, error) {
	lines, cur, sub, err := resolveLines(ctx, tx, items, false)
	if err != nil {
		return nil, err
	}
	o := &orderRow{Order: Order{Status: StatusPending, PaymentStatus: PaymentUnpaid, Subtotal: sub, Currency: cur, Customer: cust},
		lines: lines, source: "manual", reserved: !paid}
	if paid {
		o.Status, o.PaymentStatus = StatusPaid, PaymentPaid
		err = take(ctx, tx, lines)
	} else {
		err = reserve(ctx, tx, lines)
	}
	if err != nil {
		return nil, err
	}
	if o, err = insertOrder(ctx, tx, o); err != nil {
		return nil, err
	}
	if err := s.emit(ctx, tx, sc, TopicOrderCreated, o.Order); err != nil {
		return nil, err
	}
	if paid {
		return o, s.emit(ctx, tx, sc, TopicOrderPaid, o.Order)
	}
	return o, nil
}

// refused is the 409 of a transition the order's state does not allow.
func refused(o *orderRow, action string) error {
	return httpapi.Conflict(httpapi.CodeConflict, fmt.Sprintf("order %s is %s (payment %s): it cannot be %s", o.Number, o.Status, o.PaymentStatus, action))
}

// orderChange moves an order, locked, to its next state and returns it as
// stored.
type orderChange func(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, o *orderRow) (*orderRow, error)

// changeOrder locks order oid in a transaction of the project, applies
// change and answers the order as it leaves it.
func changeOrder(w http.ResponseWriter, r *http.Request, sc *tenant.Scope, oid int64, change orderChange) error {
	ctx := r.Context()
	o, err := tenant.TxV(ctx, sc, func(tx pgx.Tx) (*orderRow, error) {
		locked, err := lockOrder(ctx, tx, oid)
		if err != nil {
			return nil, err
		}
		return change(ctx, tx, sc, locked)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, o.Order)
}

// fulfillOrder marks a paid order delivered.
func (s *Service) fulfillOrder(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	oid, err := httpapi.PathID(r, "id", errNoResource)
	if err != nil {
		return err
	}
	return changeOrder(w, r, sc, oid, s.fulfill)
}

// fulfill moves o (locked) from paid or processing to delivered.
func (s *Service) fulfill(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, o *orderRow) (*orderRow, error) {
	if o.Status != StatusPaid && o.Status != StatusProcessing {
		return nil, refused(o, "fulfilled; only a paid order can be fulfilled")
	}
	o.Status = StatusDelivered
	o, err := setOrder(ctx, tx, o)
	if err != nil {
		return nil, err
	}
	return o, s.emit(ctx, tx, sc, TopicOrderFulfilled, o.Order)
}

// cancelOrder cancels a pending, paid or processing order. A pending
// checkout's session is expired at the processor first, so it can no
// longer be paid; one the buyer already completed cannot be cancelled.
func (s *Service) cancelOrder(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	oid, err := httpapi.PathID(r, "id", errNoResource)
	if err != nil {
		return err
	}
	ctx := r.Context()
	oa, err := tenant.TxV(ctx, sc, func(tx pgx.Tx) (orderAccount, error) { return getOrderAccount(ctx, tx, oid) })
	if err != nil {
		return err
	}
	o := oa.order
	if o.Status == StatusDelivered || o.Status == StatusCancelled {
		return refused(o, "cancelled")
	}
	if o.Status == StatusPending && o.PaymentSessionID != nil {
		if err := s.closeSession(ctx, oa.account.ID, *o.PaymentSessionID); err != nil {
			return err
		}
	}
	return changeOrder(w, r, sc, oid, s.cancel)
}

// closeSession expires an open checkout session. A session already
// expired is fine; one completed by the buyer is a 409.
func (s *Service) closeSession(ctx context.Context, account, session string) error {
	err := s.pay.ExpireCheckout(ctx, account, session)
	if err == nil {
		return nil
	}
	if !errors.Is(err, payments.ErrSessionClosed) {
		return err
	}
	st, gerr := s.pay.GetCheckout(ctx, account, session)
	if gerr != nil {
		return gerr
	}
	if st.Status == "complete" {
		return httpapi.Conflict(httpapi.CodeConflict, "the buyer has completed this checkout: the order becomes paid; refund it then")
	}
	return nil
}

// cancel moves o (locked) to cancelled: a held reservation is released,
// the units of a paid order go back to stock.
func (s *Service) cancel(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, o *orderRow) (*orderRow, error) {
	switch {
	case o.Status == StatusDelivered || o.Status == StatusCancelled:
		return nil, refused(o, "cancelled")
	case o.reserved:
		if err := release(ctx, tx, o.lines); err != nil {
			return nil, err
		}
	case o.Status == StatusPaid || o.Status == StatusProcessing:
		if err := restock(ctx, tx, o.lines); err != nil {
			return nil, err
		}
	}
	o.Status, o.reserved = StatusCancelled, false
	o, err := setOrder(ctx, tx, o)
	if err != nil {
		return nil, err
	}
	return o, s.emit(ctx, tx, sc, TopicOrderCancelled, o.Order)
}

// markPaid records the payment of o (locked): a pending order becomes paid
// and its reservation sold. A payment that arrives for an order cancelled
// meanwhile is recorded (payment_status paid, to be refunded) without
// touching stock. Repeated payments change nothing.
func (s *Service) markPaid(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, o *orderRow, session, intent string) error {
	if o.PaymentStatus != PaymentUnpaid {
		return nil
	}
	if o.reserved {
		if err := consume(ctx, tx, o.lines); err != nil {
			return err
		}
		o.reserved = false
	}
	if o.Status == StatusPending {
		o.Status = StatusPaid
	} else {
		s.logger.WarnContext(ctx, "payment received for an order no longer pending", "project", sc.Project.ID, "order", o.ID, "status", o.Status)
	}
	o.PaymentStatus = PaymentPaid
	if intent != "" {
		o.intentID = &intent
	}
	if session != "" && o.PaymentSessionID == nil {
		o.PaymentSessionID = &session
	}
	o, err := setOrder(ctx, tx, o)
	if err != nil {
		return err
	}
	return s.emit(ctx, tx, sc, TopicOrderPaid, o.Order)
}

// settleRefunds recomputes the refunded amount of o (locked) from the
// refunds known one by one and the processor's running total, with the
// payment status it implies, stores o when that or (dirty) its refunds
// changed, and emits order.refunded when the amount grew.
func (s *Service) settleRefunds(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, o *orderRow, dirty bool) (*orderRow, error) {
	refunded := min(o.Total, max(sumRefunds(o.refunds), o.chargeRefunded, 0))
	status := o.PaymentStatus
	if status != PaymentUnpaid {
		switch {
		case refunded > 0 && refunded >= o.Total:
			status = PaymentRefunded
		case refunded > 0:
			status = PaymentPartiallyRefunded
		default:
			status = PaymentPaid
		}
	}
	grew := refunded > o.RefundedAmount
	if !dirty && refunded == o.RefundedAmount && status == o.PaymentStatus {
		return o, nil
	}
	o.RefundedAmount, o.PaymentStatus = refunded, status
	o, err := setOrder(ctx, tx, o)
	if err != nil || !grew {
		return o, err
	}
	return o, s.emit(ctx, tx, sc, TopicOrderRefunded, o.Order)
}

// refundInput is the body of a refund; without amount the rest of the
// payment is refunded.
type refundInput struct {
	Amount *int64 `json:"amount"`
}

// refundOrder refunds all or part of a paid order: through the processor
// on the connected account for a checkout payment, as a record for a
// manual order paid outside it.
func (s *Service) refundOrder(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	oid, err := httpapi.PathID(r, "id", errNoResource)
	if err != nil {
		return err
	}
	var in refundInput
	if r.ContentLength != 0 {
		if err := httpapi.Decode(r, &in); err != nil {
			return err
		}
	}
	if in.Amount != nil && (*in.Amount < 1 || *in.Amount > MaxAmount) {
		return httpapi.Invalid("amount", fmt.Sprintf("must be an integer from 1 to %d in the currency's minor unit", MaxAmount))
	}
	return changeOrder(w, r, sc, oid, func(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, o *orderRow) (*orderRow, error) {
		if o.PaymentStatus != PaymentPaid && o.PaymentStatus != PaymentPartiallyRefunded {
			return nil, refused(o, "refunded; only a paid, not fully refunded order can be")
		}
		rest := o.Total - o.RefundedAmount
		amount := rest
		if in.Amount != nil {
			amount = *in.Amount
		}
		if amount > rest {
			return nil, httpapi.Invalid("amount", fmt.Sprintf("must be at most %d, the amount not yet refunded", rest))
		}
		refundID := ""
		switch {
		case o.intentID != nil:
			a, err := loadAccount(ctx, tx)
			if err != nil {
				return nil, err
			}
			ref, err := s.pay.CreateRefund(ctx, a.ID, *o.intentID, amount, r.Header.Get("Idempotency-Key"))
			if err != nil {
				return nil, err
			}
			if ref.Status == "failed" || ref.Status == "canceled" {
				return nil, httpapi.Fail(httpapi.ErrUpstream, "the payment processor did not complete the refund ("+ref.Status+")")
			}
			refundID = ref.ID
		case o.source == "manual":
			refundID = id.New("rfd_")
		default:
			return nil, httpapi.Conflict(httpapi.CodeConflict, "the processor's payment of this order is not known yet; retry when it is")
		}
		if _, known := o.refunds[refundID]; !known {
			o.refunds[refundID] = amount
		}
		return s.settleRefunds(ctx, tx, sc, o, true)
	})
}
