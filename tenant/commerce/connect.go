package commerce

import (
	"context"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/payments"
	"github.com/plinth-dev/plinth/tenant"
)

// Connect is the connected-account status resource of GET
// /payments/connect and of connect.account_updated.
type Connect struct {
	AccountID        *string `json:"account_id"`
	ChargesEnabled   bool    `json:"charges_enabled"`
	PayoutsEnabled   bool    `json:"payouts_enabled"`
	DetailsSubmitted bool    `json:"details_submitted"`
}

func toConnect(a payments.Account) Connect {
	c := Connect{ChargesEnabled: a.ChargesEnabled, PayoutsEnabled: a.PayoutsEnabled, DetailsSubmitted: a.DetailsSubmitted}
	if a.ID != "" {
		id := a.ID
		c.AccountID = &id
	}
	return c
}

// storeAccount records the status of the project's account a and emits
// connect.account_updated when it changed.
func (s *Service) storeAccount(ctx context.Context, tx pgx.Tx, sc *tenant.Scope, a payments.Account) error {
	old, err := lockAccount(ctx, tx)
	if err != nil {
		return err
	}
	if old.ID != a.ID {
		return nil // not this project's current account
	}
	if old == a {
		return nil
	}
	if err := saveAccount(ctx, tx, a); err != nil {
		return err
	}
	return s.emit(ctx, tx, sc, TopicConnectUpdated, toConnect(a))
}

// onboardInput is the body of POST /payments/connect/onboard.
type onboardInput struct {
	ReturnURL  string `json:"return_url" required:"true"`
	RefreshURL string `json:"refresh_url" required:"true"`
}

// onboard creates the project's connected account on first use (once,
// whatever the concurrency: the account row is locked while it is made,
// and the processor call carries an idempotency key per project), maps it
// to the project centrally for the processor's webhooks, and answers with
// a hosted onboarding link.
func (s *Service) onboard(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var in onboardInput
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	var v httpapi.Validator
	v.Check(validURL(in.ReturnURL), "return_url", "must be an absolute http(s) URL")
	v.Check(validURL(in.RefreshURL), "refresh_url", "must be an absolute http(s) URL")
	if err := v.Err(); err != nil {
		return err
	}
	if !s.pay.Enabled() {
		return payments.ErrNotConfigured
	}
	ctx := r.Context()
	account, err := tenant.TxV(ctx, sc, func(tx pgx.Tx) (string, error) { return s.ensureAccount(ctx, tx, sc) })
	if err != nil {
		return err
	}
	link, err := s.pay.OnboardingLink(ctx, account, in.ReturnURL, in.RefreshURL)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, map[string]string{"url": link})
}

// ensureAccount returns the id of the project's connected account,
// creating it at the processor and linking it to the project on first use.
func (s *Service) ensureAccount(ctx context.Context, tx pgx.Tx, sc *tenant.Scope) (string, error) {
	cur, err := lockNewAccount(ctx, tx)
	if err != nil || cur.ID != "" {
		return cur.ID, err
	}
	a, err := s.pay.CreateAccount(ctx, sc.Project.ID, "plinth-connect-"+sc.Project.ID)
	if err != nil {
		return "", err
	}
	if err := s.plane.LinkPaymentAccount(ctx, sc.Project.ID, a.ID); err != nil {
		return "", err
	}
	return a.ID, saveAccount(ctx, tx, a)
}

// getConnect answers the account's status, refreshed from the processor
// (a change is stored and emitted); should the processor be unreachable,
// or the server have none configured, the last known status is served:
// before onboarding, no account and nothing enabled. That is the answer
// a client polls for, not an error.
func (s *Service) getConnect(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	ctx := r.Context()
	a, err := loadAccount(ctx, sc.Reader())
	if err != nil {
		return err
	}
	if a.ID == "" || !s.pay.Enabled() {
		return httpapi.JSON(w, 200, toConnect(a))
	}
	fresh, err := s.pay.GetAccount(ctx, a.ID)
	if err != nil {
		s.logger.WarnContext(ctx, "payment account status unavailable; serving the last known", "project", sc.Project.ID, "err", err)
		return httpapi.JSON(w, 200, toConnect(a))
	}
	if err := sc.Tx(ctx, func(tx pgx.Tx) error { return s.storeAccount(ctx, tx, sc, fresh) }); err != nil {
		return err
	}
	return httpapi.JSON(w, 200, toConnect(fresh))
}
