package social

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"golang.org/x/oauth2"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/internal/oauth"
	"github.com/plinth-dev/plinth/tenant"
)

// ConnectRequest is the optional JSON body of POST /social-accounts/connect/{platform}.
type ConnectRequest struct {
	RedirectURI *string `json:"redirect_uri"`
}

// ConnectResponse starts an OAuth flow.
type ConnectResponse struct {
	OAuthURL string `json:"oauth_url"`
	State    string `json:"state"`
}

// DefaultRedirectPath is the page a connection ends on when the caller
// gave no redirect_uri.
const DefaultRedirectPath = "/v1/social-accounts/connected"

func (sv *Service) connect(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req ConnectRequest
	if r.ContentLength != 0 { // the body is optional
		if err := httpapi.Decode(r, &req); err != nil {
			return err
		}
	}
	platform := chi.URLParam(r, "platform")
	if !ValidPlatform(platform) {
		return httpapi.Invalid("platform", "must be one of "+strings.Join(Platforms, ", "))
	}
	app := sv.apps[platform]
	if app == nil {
		return httpapi.Invalid("platform", fmt.Sprintf("no OAuth app is configured for %s on this server (PLINTH_SOCIAL_%s_CLIENT_ID and _CLIENT_SECRET)",
			platform, strings.ToUpper(platform)))
	}
	redirect := sv.publicURL + DefaultRedirectPath
	if req.RedirectURI != nil {
		if err := validRedirect(*req.RedirectURI); err != nil {
			return httpapi.Invalid("redirect_uri", err.Error())
		}
		redirect = *req.RedirectURI
	}
	verifier := ""
	if app.pkce {
		verifier = oauth2.GenerateVerifier()
	}
	st := oauth.State{ID: id.New("ost_"), Project: s.Project.ID, Platform: platform, RedirectURI: redirect,
		Expires: time.Now().Add(sv.stateTTL).Unix()}
	var sealed []byte
	if verifier != "" {
		sealed = sv.sealer.Seal([]byte(verifier), stateAAD(s.Project.ID, st.ID))
	}
	if err := s.Tx(r.Context(), func(tx pgx.Tx) error { return insertOAuthState(r.Context(), tx, st, sealed) }); err != nil {
		return err
	}
	signed := sv.states.Sign(st)
	return httpapi.JSON(w, http.StatusOK, ConnectResponse{OAuthURL: app.AuthURL(signed, verifier), State: signed})
}

func validRedirect(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case len(raw) > 2048:
		return errors.New("must be at most 2048 characters")
	case err != nil || !u.IsAbs() || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return errors.New("must be an absolute http or https URL")
	case u.Fragment != "" || u.User != nil:
		return errors.New("must have no fragment and no user information")
	}
	return nil
}

func stateAAD(projectID, stateID string) []byte {
	return []byte("social-oauth-state:" + projectID + ":" + stateID)
}

func accountAAD(projectID, platform, externalID string) []byte {
	return []byte("social-account:" + projectID + ":" + platform + ":" + externalID)
}

// Callback errors, sent to the redirect_uri as error=.
const (
	errStateExpired  = "state_expired"
	errStateUsed     = "state_used"
	errNotConfigured = "platform_not_configured"
	errMissingCode   = "missing_code"
	errExchange      = "token_exchange_failed"
	errIdentity      = "account_lookup_failed"
	errServer        = "server_error"
)

// callback ends an OAuth flow: it checks and consumes the state, trades
// the code for tokens, asks the platform whose account they are, stores
// the account with its tokens sealed, and sends the browser back to the
// redirect_uri with status=connected&account_id=… or status=error&error=….
// A state that is not this server's is refused with 400: nothing in it
// can be trusted, not even where to send the browser.
func (sv *Service) callback(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	platform := chi.URLParam(r, "platform")
	q := r.URL.Query()
	st, err := sv.states.Verify(q.Get("state"), time.Now())
	if errors.Is(err, oauth.ErrStateInvalid) || st.Platform != platform {
		return httpapi.BadRequest("the state is not valid for this callback")
	}
	fail := func(code string) error {
		return redirect(w, r, st.RedirectURI, url.Values{"status": {"error"}, "error": {code}})
	}
	if errors.Is(err, oauth.ErrStateExpired) {
		return fail(errStateExpired)
	}
	s, err := sv.plane.ScopeFor(ctx, st.Project)
	if errors.Is(err, httpapi.ErrNotFound) {
		return httpapi.BadRequest("the state names a project that no longer exists")
	}
	if err != nil {
		return err
	}
	verifier, problem, err := sv.consumeState(ctx, s, st)
	if err != nil {
		return err
	}
	if problem != "" {
		return fail(problem)
	}
	if e := q.Get("error"); e != "" { // the user declined, or the platform refused
		return fail(errorCode(e))
	}
	app := sv.apps[platform]
	if app == nil {
		return fail(errNotConfigured)
	}
	code := q.Get("code")
	if code == "" {
		return fail(errMissingCode)
	}
	log := httpapi.Logger(ctx).With("project", st.Project, "platform", platform)
	tok, err := app.Exchange(ctx, code, verifier)
	if err != nil {
		log.WarnContext(ctx, "social: code exchange failed", "err", err)
		return fail(errExchange)
	}
	ident, err := app.adapter.Identify(ctx, app.API(tok.AccessToken, sv.media))
	if err != nil {
		log.WarnContext(ctx, "social: account lookup failed", "err", err)
		return fail(errIdentity)
	}
	if ident.Token != nil { // a long-lived token replaces the granted one, refresh token and all
		tok = ident.Token
	}
	acct, err := sv.saveAccount(ctx, s, platform, ident, tok)
	if err != nil {
		log.ErrorContext(ctx, "social: storing the account failed", "err", err)
		return fail(errServer)
	}
	return redirect(w, r, st.RedirectURI, url.Values{"status": {"connected"}, "account_id": {acct.ID}})
}

// consumeState marks the stored half of the flow used and returns its
// PKCE verifier, or the reason the state cannot be honoured: a state is
// good for one callback, within its lifetime.
func (sv *Service) consumeState(ctx context.Context, s *tenant.Scope, st oauth.State) (verifier, problem string, err error) {
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		o, err := lockOAuthState(ctx, tx, st)
		switch {
		case errors.Is(err, httpapi.ErrNotFound):
			problem = errStateExpired // signed by us, since cleared away
			return nil
		case err != nil:
			return err
		case o.used != nil:
			problem = errStateUsed
			return nil
		case !time.Now().Before(o.expires):
			problem = errStateExpired
			return nil
		}
		if o.verifier != nil {
			v, err := sv.sealer.Open(o.verifier, stateAAD(s.Project.ID, st.ID))
			if err != nil {
				return err
			}
			verifier = string(v)
		}
		return useOAuthState(ctx, tx, st.ID)
	})
	return verifier, problem, err
}

// errorCode keeps a platform's error code to the characters OAuth allows
// in it, for the redirect.
func errorCode(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.' {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "access_denied"
	}
	return b.String()
}

// redirect sends the browser to target with params added to its query.
func redirect(w http.ResponseWriter, r *http.Request, target string, params url.Values) error {
	u, err := url.Parse(target)
	if err != nil {
		return httpapi.BadRequest("the state's redirect_uri is not a URL")
	}
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	u.RawQuery = q.Encode()
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusFound)
	return nil
}

// secret is what an account keeps sealed: its tokens and the platform's
// extra credentials (a Page token).
type secret struct {
	Token *oauth2.Token     `json:"token"`
	Extra map[string]string `json:"extra,omitempty"`
}

func (sv *Service) seal(projectID, platform, externalID string, sec secret) ([]byte, error) {
	plain, err := json.Marshal(sec)
	if err != nil {
		return nil, err
	}
	return sv.sealer.Seal(plain, accountAAD(projectID, platform, externalID)), nil
}

func (sv *Service) open(projectID string, a Account, sealed []byte) (secret, error) {
	var sec secret
	plain, err := sv.sealer.Open(sealed, accountAAD(projectID, a.Platform, a.ExternalID))
	if err != nil {
		return sec, err
	}
	err = json.Unmarshal(plain, &sec)
	if sec.Token == nil {
		err = errors.Join(err, errors.New("social: the sealed secret holds no token"))
	}
	return sec, err
}

// saveAccount stores the account, or reconnects the same platform account
// (same external id), keeping its id.
func (sv *Service) saveAccount(ctx context.Context, s *tenant.Scope, platform string, ident Identity, tok *oauth2.Token) (Account, error) {
	sealed, err := sv.seal(s.Project.ID, platform, ident.ExternalID, secret{Token: tok, Extra: ident.Extra})
	if err != nil {
		return Account{}, err
	}
	name := ident.Name
	if name == "" {
		name = ident.ExternalID
	}
	return tenant.TxV(ctx, s, func(tx pgx.Tx) (Account, error) {
		return saveAccount(ctx, tx, platform, name, ident.ExternalID, sealed)
	})
}

func (sv *Service) listAccounts(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	list, err := httpapi.ListOf(r, httpapi.CursorText, func(after string, limit int) ([]Account, error) {
		return listAccounts(r.Context(), s.Reader(), after, limit)
	}, func(a Account) string { return a.ID })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

// deleteAccount disconnects an account: the row and its tokens are gone.
func (sv *Service) deleteAccount(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	accID := chi.URLParam(r, "id")
	if !id.Valid("acc_", accID) {
		return errNoAccount
	}
	if err := s.Tx(r.Context(), func(tx pgx.Tx) error { return deleteAccount(r.Context(), tx, accID) }); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

// freshToken returns the account's token for a publish, refreshed first
// (and the refreshed tokens stored) when it is about to expire. The row
// stays locked during a refresh, so two publishes never spend one
// rotating refresh token. An account whose refresh the platform refuses
// becomes expired. problem tells why no token could be had, for the
// result; err is a failure of the server itself.
func (sv *Service) freshToken(ctx context.Context, s *tenant.Scope, app *App, accountID string) (a Account, sec secret, problem string, err error) {
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		var sealed []byte
		var err error
		if a, sealed, err = lockAccount(ctx, tx, accountID); err != nil || a.Status != AccountConnected {
			return err
		}
		if sec, err = sv.open(s.Project.ID, a, sealed); err != nil {
			return err
		}
		tok, err := app.Fresh(ctx, sec.Token)
		var re *oauth2.RetrieveError
		switch {
		case errors.As(err, &re) || (err != nil && sec.Token.RefreshToken == ""):
			sv.logger.WarnContext(ctx, "social: token refresh refused; the account is expired", "project", s.Project.ID, "account", a.ID, "err", err)
			problem, a.Status = "the platform refused to renew the account's authorization; reconnect the account", AccountExpired
			return expireAccount(ctx, tx, a.ID)
		case err != nil:
			problem = "the account's authorization could not be renewed: " + err.Error()
			return nil
		case tok.AccessToken == sec.Token.AccessToken:
			return nil
		}
		sec.Token = tok
		if sealed, err = sv.seal(s.Project.ID, a.Platform, a.ExternalID, sec); err != nil {
			return err
		}
		return setAccountToken(ctx, tx, a.ID, sealed)
	})
	return a, sec, problem, err
}

var connectedTmpl = template.Must(template.New("connected").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; padding: 0 1rem">
<h1>{{.Title}}</h1><p>{{.Text}}</p>
{{if .AccountID}}<p>Account id: <code>{{.AccountID}}</code></p>{{end}}
<p>You can close this window.</p></body></html>
`))

// connectedPage is the default end of a connection (no redirect_uri given).
func (sv *Service) connectedPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	data := struct{ Title, Text, AccountID string }{"Account connected", "The social account is connected.", q.Get("account_id")}
	status := http.StatusOK
	if q.Get("status") != "connected" {
		data.Title, data.Text, data.AccountID = "Connection failed", "The social account was not connected ("+errorCode(q.Get("error"))+"). Try again.", ""
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = connectedTmpl.Execute(w, data)
}
