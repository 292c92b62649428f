package commerce

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/tenant"
)

// ReleaseArgs is the job scheduled with every checkout for some time after
// its session expires: it settles an order the processor's events left
// pending.
type ReleaseArgs struct {
	ProjectID string `json:"project_id"`
	OrderID   int64  `json:"order_id"`
}

// Kind is the River job kind.
func (ReleaseArgs) Kind() string { return "commerce.release_order" }

type releaseWorker struct {
	river.WorkerDefaults[ReleaseArgs]
	s *Service
}

// Timeout bounds one run (it may call the processor).
func (w *releaseWorker) Timeout(*river.Job[ReleaseArgs]) time.Duration { return time.Minute }

// Work asks the processor how the session ended: a paid session marks the
// order paid (the event was lost), anything else cancels it and frees its
// stock. An order without a session (the process stopped before creating
// it) is cancelled. Orders no longer pending are left alone.
func (w *releaseWorker) Work(ctx context.Context, job *river.Job[ReleaseArgs]) error {
	err := w.s.Release(ctx, job.Args)
	if errors.Is(err, errPaymentProcessing) {
		return river.JobSnooze(time.Hour)
	}
	return err
}

// errPaymentProcessing: the buyer completed the checkout with a payment
// method that settles later; its outcome event will come.
var errPaymentProcessing = errors.New("commerce: the checkout's payment is still processing")

// Release runs the release of one order (the job's work).
func (s *Service) Release(ctx context.Context, a ReleaseArgs) error {
	sc, err := tenant.JobScope(ctx) // bound by the job gate
	if err != nil {
		return err
	}
	oa, err := tenant.TxV(ctx, sc, func(tx pgx.Tx) (orderAccount, error) { return getOrderAccount(ctx, tx, a.OrderID) })
	if errors.Is(err, httpapi.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	o, acct := oa.order, oa.account
	if o.Status != StatusPending || o.PaymentStatus != PaymentUnpaid {
		return nil
	}
	var state payments.SessionState
	if o.PaymentSessionID != nil && acct.ID != "" {
		if state, err = s.pay.GetCheckout(ctx, acct.ID, *o.PaymentSessionID); err != nil {
			return err
		}
		if state.Status == "complete" && state.PaymentStatus == "unpaid" {
			return errPaymentProcessing
		}
		if state.Status == "open" {
			if err := s.pay.ExpireCheckout(ctx, acct.ID, *o.PaymentSessionID); err != nil && !errors.Is(err, payments.ErrSessionClosed) {
				return err
			}
		}
	}
	return sc.Tx(ctx, func(tx pgx.Tx) error {
		o, err := lockOrder(ctx, tx, a.OrderID)
		if err != nil {
			return err
		}
		if o.Status != StatusPending || o.PaymentStatus != PaymentUnpaid {
			return nil
		}
		if state.Status == "complete" && (state.PaymentStatus == "paid" || state.PaymentStatus == "no_payment_required") {
			return s.markPaid(ctx, tx, sc, o, state.ID, state.PaymentIntent)
		}
		_, err = s.cancel(ctx, tx, sc, o)
		return err
	})
}

var _ river.Worker[ReleaseArgs] = (*releaseWorker)(nil)
