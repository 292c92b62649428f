// Package payments wraps the payment processor (Stripe, through stripe-go):
// connected accounts and their onboarding links, hosted checkout sessions
// and refunds on a connected account, and the verification of the
// processor's signed webhooks. STRIPE_API_BASE points it at stripe-mock or
// another base. Without STRIPE_SECRET_KEY every call fails with
// ErrNotConfigured, a 409 connect_not_ready.
package payments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/client"
	"github.com/stripe/stripe-go/v76/webhook"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Tolerance is how far a webhook signature's timestamp may be from now.
const Tolerance = 300 * time.Second

// ErrNotConfigured is returned by every processor call when no secret key
// is configured. It is 409 connect_not_ready, not 503: a server without a
// processor is no outage a client could wait out, and for the project it
// means what connect_not_ready says (docs/decisions.md section 2): it
// cannot take payments, and retrying does not help until that changes.
var ErrNotConfigured = httpapi.Conflict(httpapi.CodeConnectNotReady,
	"this server has no payment processor configured (STRIPE_SECRET_KEY): the project cannot be onboarded or take payments")

// ErrWebhookNotConfigured is returned by VerifyEvent when no webhook
// signing secret is configured. It stays a 503: only the processor calls
// the webhook, and an answer it retries keeps its events queued until the
// operator sets the secret.
var ErrWebhookNotConfigured = httpapi.Fail(httpapi.ErrUnavailable,
	"payment webhooks are not configured on this server: set STRIPE_WEBHOOK_SECRET")

// Config is the processor configuration (docs/decisions.md section 1).
type Config struct {
	SecretKey     string // STRIPE_SECRET_KEY
	WebhookSecret string // STRIPE_WEBHOOK_SECRET
	APIBase       string // STRIPE_API_BASE: base URL without /v1; empty for Stripe itself
	// HTTPClient, when set, carries the requests (default: 30 s timeout).
	HTTPClient *http.Client
	// MaxRetries bounds stripe-go's retries of failed requests (default 2;
	// retries reuse the idempotency key).
	MaxRetries *int64
}

// Client calls the processor. The zero of its configuration (no secret
// key) makes every call ErrNotConfigured.
type Client struct {
	api           *client.API
	webhookSecret string
}

// New builds a client for cfg. Its own backends are used, never stripe-go's
// global state, so several clients (tests) can point at different bases.
func New(cfg Config) *Client {
	c := &Client{webhookSecret: cfg.WebhookSecret}
	if cfg.SecretKey == "" {
		return c
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	backend := func(t stripe.SupportedBackend) stripe.Backend {
		bc := &stripe.BackendConfig{HTTPClient: hc, LeveledLogger: &stripe.LeveledLogger{Level: stripe.LevelNull},
			MaxNetworkRetries: cfg.MaxRetries, EnableTelemetry: stripe.Bool(false)}
		if cfg.APIBase != "" {
			bc.URL = stripe.String(strings.TrimSuffix(strings.TrimRight(cfg.APIBase, "/"), "/v1"))
		}
		return stripe.GetBackendWithConfig(t, bc)
	}
	c.api = client.New(cfg.SecretKey, &stripe.Backends{
		API:     backend(stripe.APIBackend),
		Connect: backend(stripe.ConnectBackend),
		Uploads: backend(stripe.UploadsBackend),
	})
	return c
}

// Enabled reports whether a secret key is configured.
func (c *Client) Enabled() bool { return c != nil && c.api != nil }

func (c *Client) ready() error {
	if !c.Enabled() {
		return ErrNotConfigured
	}
	return nil
}

// Account is the status of a connected account.
type Account struct {
	ID               string `json:"account_id"`
	ChargesEnabled   bool   `json:"charges_enabled"`
	PayoutsEnabled   bool   `json:"payouts_enabled"`
	DetailsSubmitted bool   `json:"details_submitted"`
}

func toAccount(a *stripe.Account) Account {
	return Account{ID: a.ID, ChargesEnabled: a.ChargesEnabled, PayoutsEnabled: a.PayoutsEnabled, DetailsSubmitted: a.DetailsSubmitted}
}

// CreateAccount creates an Express connected account for a project.
// idempotencyKey makes a retried creation return the same account.
func (c *Client) CreateAccount(ctx context.Context, projectID, idempotencyKey string) (Account, error) {
	if err := c.ready(); err != nil {
		return Account{}, err
	}
	p := &stripe.AccountParams{Type: stripe.String(string(stripe.AccountTypeExpress))}
	p.Context = ctx
	p.AddMetadata("project_id", projectID)
	p.SetIdempotencyKey(idempotencyKey)
	a, err := c.api.Accounts.New(p)
	if err != nil {
		return Account{}, upstream(err)
	}
	return toAccount(a), nil
}

// GetAccount reads a connected account's status.
func (c *Client) GetAccount(ctx context.Context, accountID string) (Account, error) {
	if err := c.ready(); err != nil {
		return Account{}, err
	}
	p := &stripe.AccountParams{}
	p.Context = ctx
	a, err := c.api.Accounts.GetByID(accountID, p)
	if err != nil {
		return Account{}, upstream(err)
	}
	return toAccount(a), nil
}

// OnboardingLink returns the URL of a hosted onboarding flow for accountID.
func (c *Client) OnboardingLink(ctx context.Context, accountID, returnURL, refreshURL string) (string, error) {
	if err := c.ready(); err != nil {
		return "", err
	}
	p := &stripe.AccountLinkParams{
		Account:    stripe.String(accountID),
		Type:       stripe.String(string(stripe.AccountLinkTypeAccountOnboarding)),
		ReturnURL:  stripe.String(returnURL),
		RefreshURL: stripe.String(refreshURL),
	}
	p.Context = ctx
	l, err := c.api.AccountLinks.New(p)
	if err != nil {
		return "", upstream(err)
	}
	return l.URL, nil
}

// LineItem is one line of a checkout, in the currency's minor unit.
type LineItem struct {
	Name      string
	UnitPrice int64
	Quantity  int64
}

// CheckoutParams describe a hosted checkout on a connected account.
type CheckoutParams struct {
	Account        string // connected account id (Stripe-Account)
	IdempotencyKey string // forwarded as is; empty for none
	ProjectID      string
	OrderID        int64
	Currency       string
	Items          []LineItem
	CustomerEmail  string
	SuccessURL     string // passed unchanged: the processor fills {CHECKOUT_SESSION_ID}
	CancelURL      string
	ExpiresAt      time.Time
}

// Session is a created checkout session.
type Session struct {
	ID        string
	URL       string
	ExpiresAt time.Time
}

// CreateCheckout creates a hosted checkout session on p.Account. The
// project and order ids travel as metadata on the session and on its
// payment, so the processor's events name them.
func (c *Client) CreateCheckout(ctx context.Context, p CheckoutParams) (Session, error) {
	if err := c.ready(); err != nil {
		return Session{}, err
	}
	meta := map[string]string{"project_id": p.ProjectID, "order_id": strconv.FormatInt(p.OrderID, 10)}
	sp := &stripe.CheckoutSessionParams{
		Mode:              stripe.String(string(stripe.CheckoutSessionModePayment)),
		SuccessURL:        stripe.String(p.SuccessURL),
		CancelURL:         stripe.String(p.CancelURL),
		ClientReferenceID: stripe.String(strconv.FormatInt(p.OrderID, 10)),
		ExpiresAt:         stripe.Int64(p.ExpiresAt.Unix()),
		Metadata:          meta,
		PaymentIntentData: &stripe.CheckoutSessionPaymentIntentDataParams{Metadata: meta},
	}
	if p.CustomerEmail != "" {
		sp.CustomerEmail = stripe.String(p.CustomerEmail)
	}
	for _, it := range p.Items {
		sp.LineItems = append(sp.LineItems, &stripe.CheckoutSessionLineItemParams{
			Quantity: stripe.Int64(it.Quantity),
			PriceData: &stripe.CheckoutSessionLineItemPriceDataParams{
				Currency:    stripe.String(p.Currency),
				UnitAmount:  stripe.Int64(it.UnitPrice),
				ProductData: &stripe.CheckoutSessionLineItemPriceDataProductDataParams{Name: stripe.String(it.Name)},
			},
		})
	}
	sp.Context = ctx
	sp.SetStripeAccount(p.Account)
	if p.IdempotencyKey != "" {
		sp.SetIdempotencyKey(p.IdempotencyKey)
	}
	s, err := c.api.CheckoutSessions.New(sp)
	if err != nil {
		return Session{}, upstream(err)
	}
	exp := p.ExpiresAt
	if s.ExpiresAt > 0 {
		exp = time.Unix(s.ExpiresAt, 0)
	}
	return Session{ID: s.ID, URL: s.URL, ExpiresAt: exp.UTC()}, nil
}

// SessionState is what the processor says of a checkout session.
type SessionState struct {
	ID            string
	Status        string // open, complete, expired
	PaymentStatus string // paid, unpaid, no_payment_required
	PaymentIntent string
}

// GetCheckout reads a checkout session of a connected account.
func (c *Client) GetCheckout(ctx context.Context, account, sessionID string) (SessionState, error) {
	if err := c.ready(); err != nil {
		return SessionState{}, err
	}
	p := &stripe.CheckoutSessionParams{}
	p.Context = ctx
	p.SetStripeAccount(account)
	s, err := c.api.CheckoutSessions.Get(sessionID, p)
	if err != nil {
		return SessionState{}, upstream(err)
	}
	st := SessionState{ID: s.ID, Status: string(s.Status), PaymentStatus: string(s.PaymentStatus)}
	if s.PaymentIntent != nil {
		st.PaymentIntent = s.PaymentIntent.ID
	}
	return st, nil
}

// ExpireCheckout expires an open checkout session so it can no longer be
// paid. A session that is already complete gives ErrSessionComplete.
func (c *Client) ExpireCheckout(ctx context.Context, account, sessionID string) error {
	if err := c.ready(); err != nil {
		return err
	}
	p := &stripe.CheckoutSessionExpireParams{}
	p.Context = ctx
	p.SetStripeAccount(account)
	_, err := c.api.CheckoutSessions.Expire(sessionID, p)
	var se *stripe.Error
	if errors.As(err, &se) && se.HTTPStatusCode == http.StatusBadRequest && se.Type == stripe.ErrorTypeInvalidRequest {
		// Only open sessions can be expired: this one is complete
		// (paid or paying) or already expired.
		return fmt.Errorf("%w: %s", ErrSessionClosed, se.Msg)
	}
	if err != nil {
		return upstream(err)
	}
	return nil
}

// ErrSessionClosed reports a checkout session that is no longer open.
var ErrSessionClosed = errors.New("payments: the checkout session is not open")

// Refund is a created refund.
type Refund struct {
	ID     string
	Amount int64
	Status string // pending, succeeded, failed, canceled, requires_action
}

// CreateRefund refunds amount of a payment on a connected account.
func (c *Client) CreateRefund(ctx context.Context, account, paymentIntent string, amount int64, idempotencyKey string) (Refund, error) {
	if err := c.ready(); err != nil {
		return Refund{}, err
	}
	p := &stripe.RefundParams{PaymentIntent: stripe.String(paymentIntent), Amount: stripe.Int64(amount)}
	p.Context = ctx
	p.SetStripeAccount(account)
	if idempotencyKey != "" {
		p.SetIdempotencyKey(idempotencyKey)
	}
	r, err := c.api.Refunds.New(p)
	if err != nil {
		return Refund{}, upstream(err)
	}
	return Refund{ID: r.ID, Amount: amount, Status: string(r.Status)}, nil
}

// VerifyEvent checks the Stripe-Signature header of a webhook payload (HMAC
// under STRIPE_WEBHOOK_SECRET, timestamp within Tolerance) and parses the
// event. A bad signature is a 400. The event's API version may differ from
// stripe-go's: only stable fields are read from it.
func (c *Client) VerifyEvent(payload []byte, header string) (stripe.Event, error) {
	if c == nil || c.webhookSecret == "" {
		return stripe.Event{}, ErrWebhookNotConfigured
	}
	ev, err := webhook.ConstructEventWithOptions(payload, header, c.webhookSecret,
		webhook.ConstructEventOptions{Tolerance: Tolerance, IgnoreAPIVersionMismatch: true})
	if err != nil {
		return stripe.Event{}, httpapi.BadRequest("the Stripe-Signature header does not verify: " + err.Error())
	}
	if ev.ID == "" || ev.Data == nil {
		return stripe.Event{}, httpapi.BadRequest("the payload is not a processor event")
	}
	return ev, nil
}

// upstream maps a processor error to the API error sent for it: a reused
// idempotency key with other parameters is 409 idempotency_conflict, any
// other failure 502 upstream_unavailable (the cause is logged, not sent).
func upstream(err error) error {
	var se *stripe.Error
	if errors.As(err, &se) {
		if se.Type == stripe.ErrorTypeIdempotency {
			return fmt.Errorf("%w: %w", httpapi.Conflict(httpapi.CodeIdempotencyConflict,
				"the payment processor saw this Idempotency-Key with other parameters; use a fresh key"), err)
		}
		return fmt.Errorf("%w: %w", httpapi.Fail(httpapi.ErrUpstream,
			"the payment processor refused the request: "+se.Msg), err)
	}
	return fmt.Errorf("%w: %w", httpapi.Fail(httpapi.ErrUpstream,
		"the payment processor could not be reached"), err)
}
