package central

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Dashboard login (docs/decisions.md section 4).
const (
	// TokenTTL is the lifetime of a dashboard token.
	TokenTTL = 12 * time.Hour
	// LoginFailureLimit failed logins of one email within
	// LoginFailureWindow make further attempts 429.
	LoginFailureLimit  = 5
	LoginFailureWindow = 15 * time.Minute
	// TenantsLookupFloor is the minimum response time of
	// tenants-for-email, so known and unknown emails answer alike.
	TenantsLookupFloor = 100 * time.Millisecond
	// AuthFailed is the message key of wrong credentials.
	AuthFailed = "auth.failed"
	// LoginSlotWait is how long a login waits for a verification slot
	// before it is refused (503 with Retry-After).
	LoginSlotWait = time.Second
)

// loginState is the login's per-process state, made by newLoginState.
type loginState struct {
	dummyOnce sync.Once
	dummy     string
	dummyErr  error
	lastPrune atomic.Int64 // unix seconds of the last prune of old failures
	// lastSessionPrune is that of the revoked sessions past their expiry.
	lastSessionPrune atomic.Int64
	// slots bounds the logins verifying passwords at once. Each argon2id
	// verification holds 19 MiB and a CPU for tens of milliseconds, so
	// unbounded concurrent logins (distinct emails pass the per-email
	// limit) would take the process's memory; more verifications than
	// CPUs would not finish sooner anyway.
	slots chan struct{}
}

func newLoginState() loginState {
	return loginState{slots: make(chan struct{}, 2*runtime.GOMAXPROCS(0))}
}

// loginSlot takes a verification slot, waiting up to LoginSlotWait for
// one; the caller calls release when its verifications are done.
func (c *Central) loginSlot(ctx context.Context) (release func(), err error) {
	release = func() { <-c.login.slots }
	select {
	case c.login.slots <- struct{}{}:
		return release, nil
	default:
	}
	wait := time.NewTimer(LoginSlotWait)
	defer wait.Stop()
	select {
	case c.login.slots <- struct{}{}:
		return release, nil
	case <-wait.C:
		return nil, httpapi.NewError(503, httpapi.CodeServiceUnavailable, "too many logins are being checked at once; retry shortly").
			WithHeader("Retry-After", "1")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dummyHash is an argon2id hash of a random password, made with the same
// parameters as real hashes, verified when no user matches so an unknown
// email costs what a known one does.
func (c *Central) dummyHash() (string, error) {
	c.login.dummyOnce.Do(func() {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			c.login.dummyErr = err
			return
		}
		c.login.dummy, c.login.dummyErr = HashPassword(hex.EncodeToString(b))
	})
	return c.login.dummy, c.login.dummyErr
}

// ErrAuthFailed is the answer to wrong credentials, whether or not the
// email exists: 422 validation_failed, message auth.failed.
func ErrAuthFailed() *httpapi.Error {
	return &httpapi.Error{Status: 422, Code: httpapi.CodeValidationFailed, Detail: "the email or password is not correct",
		Errors: map[string][]string{"email": {AuthFailed}}, Extra: map[string]any{"message": AuthFailed}}
}

// cleanEmail is a presented email made safe to send to PostgreSQL (which
// refuses NUL and invalid UTF-8) without making it match another address.
func cleanEmail(email string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(strings.TrimSpace(email), "\x00", "\uFFFD"), "\uFFFD")
}

// loginKey is the form of an email the failure limit counts under.
func loginKey(email string) string { return strings.ToLower(email) }

// maxEmailLen bounds an email (RFC 5321); no user can have a longer one.
const maxEmailLen = 254

// TenantsForEmail lists the workspaces an email (any case) belongs to, in
// a stable order: the order login tries them in.
func (c *Central) TenantsForEmail(ctx context.Context, email string) ([]Tenant, error) {
	out, err := tenantsOfEmail(ctx, c.pool, cleanEmail(email))
	if out == nil {
		out = []Tenant{}
	}
	return out, err
}

// LoginResult is a successful login: the token and whom it names.
type LoginResult struct {
	Token  string `json:"token"`
	Tenant Tenant `json:"tenant"`
	User   User   `json:"user"`
}

type loginCandidate struct {
	user   User
	tenant Tenant
	hash   string
	epoch  int64 // the user's session epoch, which its token carries
}

// Login checks an email and password, in the workspace tenantID or, when
// nil, in each workspace of the email in TenantsForEmail order, taking the
// first whose password verifies. Wrong credentials give ErrAuthFailed.
//
// Timing: an unknown email (or a workspace the email is not in) verifies
// a dummy hash, so it costs one argon2id verification like a known email
// in one workspace. With tenantID nil a wrong password costs one
// verification per workspace of the email; that count is what
// tenants-for-email discloses anyway.
//
// Every attempt is first recorded as a failure (so concurrent attempts
// count too) and cleared on success; LoginFailureLimit recorded failures
// within LoginFailureWindow make further attempts 429 on every instance.
//
// An attempt holds a verification slot from before it is recorded, so
// one refused for want of a slot (503) counts for nothing, and known and
// unknown emails wait for a slot alike.
func (c *Central) Login(ctx context.Context, email, password string, tenantID *int64) (LoginResult, error) {
	email = cleanEmail(email)
	if len(email) > maxEmailLen {
		return LoginResult{}, ErrAuthFailed() // matches no user; not worth a row
	}
	release, err := c.loginSlot(ctx)
	if err != nil {
		return LoginResult{}, err
	}
	defer release()
	key := loginKey(email)
	if err := c.reserveLoginAttempt(ctx, key); err != nil {
		return LoginResult{}, err
	}
	c.pruneLoginFailures(ctx)
	cands, err := loginCandidates(ctx, c.pool, email, tenantID)
	if err != nil {
		return LoginResult{}, err
	}
	dummy, err := c.dummyHash()
	if err != nil {
		return LoginResult{}, err
	}
	if len(cands) == 0 {
		_, _ = VerifyPassword(dummy, password)
		return LoginResult{}, ErrAuthFailed()
	}
	for _, cand := range cands {
		ok, err := VerifyPassword(cand.hash, password)
		if err != nil {
			c.logger.ErrorContext(ctx, "unreadable password hash", "user", cand.user.ID, "err", err)
			continue
		}
		if !ok {
			continue
		}
		if err := clearLoginFailures(ctx, c.pool, key); err != nil {
			return LoginResult{}, err
		}
		tok, err := c.IssueToken(cand.user.ID, cand.tenant.ID, cand.epoch, time.Now())
		if err != nil {
			return LoginResult{}, err
		}
		return LoginResult{Token: tok, Tenant: cand.tenant, User: cand.user}, nil
	}
	return LoginResult{}, ErrAuthFailed()
}

// reserveLoginAttempt records an attempt as a failure before the password
// is checked, unless the email already has LoginFailureLimit failures in
// the window (429 with Retry-After until the oldest that counts expires).
// A transaction-scoped advisory lock per email makes count-then-insert
// atomic across instances.
func (c *Central) reserveLoginAttempt(ctx context.Context, key string) error {
	window := LoginFailureWindow.Seconds()
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if err := lockLoginEmail(ctx, tx, key); err != nil {
			return err
		}
		n, retry, err := recentLoginFailures(ctx, tx, key, window, LoginFailureLimit)
		if err != nil {
			return err
		}
		if n >= LoginFailureLimit {
			return httpapi.RateLimited(retry, "too many failed logins for this email; retry later")
		}
		return recordLoginFailure(ctx, tx, key)
	})
}

// pruneLoginFailures deletes failures older than the window.
func (c *Central) pruneLoginFailures(ctx context.Context) {
	c.pruneOld(ctx, &c.login.lastPrune, "login failures", func(ctx context.Context) error {
		return deleteOldLoginFailures(ctx, c.pool, LoginFailureWindow.Seconds())
	})
}

// pruneOld runs del, which deletes rows that no longer count, at most
// once a minute per process (last holds the unix seconds of the last
// run) and off the request path.
func (c *Central) pruneOld(ctx context.Context, last *atomic.Int64, what string, del func(context.Context) error) {
	now := time.Now().Unix()
	prev := last.Load()
	if now-prev < 60 || !last.CompareAndSwap(prev, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := del(ctx); err != nil && !errors.Is(err, context.Canceled) {
			c.logger.WarnContext(ctx, "pruning "+what, "err", err)
		}
	}()
}
