package social_test

import (
	"context"
	"encoding/base64"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest/socialtest"
	"github.com/plinth-dev/plinth/internal/oauth"
)

// The whole OAuth round trip against a fake authorization and token
// server: connect, authorize, callback, code exchange with PKCE, account
// lookup, tokens stored sealed, redirect with the account id. A replayed,
// an expired or a forged state is refused.
func TestOAuthRoundTrip(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"twitter"})
	tw := fakes["twitter"]
	p := env.NewProject("build")

	flow := socialtest.Start(t, env, p.Key, tw, map[string]any{"redirect_uri": "https://site.test/social/done?tab=accounts"})
	au, _ := url.Parse(flow.OAuthURL)
	aq := au.Query()
	if au.Host != strings.TrimPrefix(tw.Server.URL, "http://") || au.Path != "/oauth/authorize" || aq.Get("client_id") != tw.ClientID ||
		aq.Get("response_type") != "code" || aq.Get("state") != flow.State || aq.Get("code_challenge_method") != "S256" ||
		len(aq.Get("code_challenge")) != 43 || aq.Get("scope") != "tweet.read tweet.write users.read offline.access" ||
		aq.Get("redirect_uri") != env.Config.PublicURL+"/v1/social-accounts/callback/twitter" {
		t.Fatalf("oauth_url: %s", flow.OAuthURL)
	}
	var sealedVerifier []byte
	query(t, p, `SELECT verifier FROM social_oauth_states`, nil, &sealedVerifier)
	if len(sealedVerifier) < 43 {
		t.Fatalf("the PKCE verifier is not stored: %x", sealedVerifier)
	}

	q := flow.Finish(t)
	accID := q.Get("account_id")
	if q.Get("status") != "connected" || !strings.HasPrefix(accID, "acc_") || len(accID) != 28 || q.Get("tab") != "accounts" {
		t.Fatalf("redirect query: %v", q)
	}
	// The code was exchanged once, with the verifier matching the challenge.
	reqs := tw.TokenRequests()
	if len(reqs) != 1 || reqs[0].Get("grant_type") != "authorization_code" || reqs[0].Get("code_verifier") == "" ||
		reqs[0].Get("client_secret") != "" { // X takes the client's credentials in the Authorization header

		t.Fatalf("token requests: %v", reqs)
	}
	if string(sealedVerifier) == reqs[0].Get("code_verifier") || strings.Contains(string(sealedVerifier), reqs[0].Get("code_verifier")) {
		t.Fatal("the PKCE verifier was stored readable")
	}
	list := env.Do("GET", "/v1/social-accounts", p.Key, nil).Expect(t, 200).JSON(t)
	data := list["data"].([]any)
	if len(data) != 1 || list["has_more"] != false || list["next_cursor"] != nil {
		t.Fatalf("accounts: %v", list)
	}
	acc := data[0].(map[string]any)
	if acc["id"] != accID || acc["platform"] != "twitter" || acc["name"] != "Acme Studio" || acc["external_id"] != "2244994945" ||
		acc["status"] != "connected" || len(acc) != 6 {
		t.Fatalf("account: %v", acc)
	}
	if at, err := time.Parse(time.RFC3339, acc["connected_at"].(string)); err != nil || !strings.HasSuffix(acc["connected_at"].(string), "Z") || time.Since(at) > time.Minute {
		t.Fatalf("connected_at: %v", acc["connected_at"])
	}

	// The tokens are not readable in the table, in any column.
	var row string
	var token []byte
	query(t, p, `SELECT a::text, a.token FROM social_accounts a`, nil, &row, &token)
	for _, secret := range []string{"at-twitter-1", "rt-twitter-1"} {
		if strings.Contains(row, secret) || strings.Contains(string(token), secret) {
			t.Fatalf("the token %s is stored readable: %s", secret, row)
		}
	}
	// ... yet they open with the server's key, bound to this account.
	sealer := oauth.NewSealer(env.Server.Central.Secret())
	plain, err := sealer.Open(token, []byte("social-account:"+p.ID+":twitter:2244994945"))
	if err != nil || !strings.Contains(string(plain), `"access_token":"at-twitter-1"`) || !strings.Contains(string(plain), `"refresh_token":"rt-twitter-1"`) {
		t.Fatalf("sealed token: %s, %v", plain, err)
	}
	var verifierLeft bool
	var used *time.Time
	query(t, p, `SELECT verifier IS NOT NULL, used_at FROM social_oauth_states`, nil, &verifierLeft, &used)
	if verifierLeft || used == nil {
		t.Fatalf("a used state keeps its verifier (%v) or is not marked used (%v)", verifierLeft, used)
	}

	// A replayed state is refused: no second exchange, no second account.
	if q := flow.Finish(t); q.Get("status") != "error" || q.Get("error") != "state_used" || q.Get("account_id") != "" {
		t.Fatalf("replay: %v", q)
	}
	if n := len(tw.TokenRequests()); n != 1 {
		t.Fatalf("a replay reached the token endpoint (%d requests)", n)
	}

	// An expired state is refused, whether its signed expiry has passed...
	st := oauth.State{ID: "ost_x", Project: p.ID, Platform: "twitter", RedirectURI: "https://site.test/done", Expires: time.Now().Add(-time.Second).Unix()}
	expired := oauth.NewSigner(env.Server.Central.Secret()).Sign(st)
	loc := socialtest.GetAPI(t, env, env.URL+"/v1/social-accounts/callback/twitter?code=code-twitter-99&state="+url.QueryEscape(expired), 302)
	if !strings.HasPrefix(loc, "https://site.test/done?") || !strings.Contains(loc, "error=state_expired") || !strings.Contains(loc, "status=error") {
		t.Fatalf("expired state: %s", loc)
	}
	// ... or its stored half has expired.
	late := socialtest.Start(t, env, p.Key, tw, map[string]any{"redirect_uri": "https://site.test/done"})
	if err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), `UPDATE social_oauth_states SET expires_at = now() - interval '1 second' WHERE used_at IS NULL`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if q := late.Finish(t); q.Get("status") != "error" || q.Get("error") != "state_expired" {
		t.Fatalf("expired stored state: %v", q)
	}
	if n := len(tw.TokenRequests()); n != 1 {
		t.Fatalf("an expired state reached the token endpoint (%d requests)", n)
	}

	// A forged or damaged state is not trusted even for the redirect: 400.
	payload, sig, _ := strings.Cut(late.State, ".")
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		t.Fatal(err)
	}
	for i := range mac {
		mac[i] ^= 0xff // every bit: damaged by construction
	}
	forged := payload + "." + base64.RawURLEncoding.EncodeToString(mac)
	env.Do("GET", "/v1/social-accounts/callback/twitter?code=x&state="+url.QueryEscape(forged), "", nil).Problem(t, 400, "bad_request")
	env.Do("GET", "/v1/social-accounts/callback/twitter?code=x", "", nil).Problem(t, 400, "bad_request")
	other := oauth.NewSigner([]byte("another server")).Sign(oauth.State{ID: "ost_y", Project: p.ID, Platform: "twitter", RedirectURI: "https://evil.test/", Expires: time.Now().Add(time.Hour).Unix()})
	env.Do("GET", "/v1/social-accounts/callback/twitter?code=x&state="+url.QueryEscape(other), "", nil).Problem(t, 400, "bad_request")
	// A state is good only on its own platform's callback.
	fresh := socialtest.Start(t, env, p.Key, tw, nil)
	env.Do("GET", "/v1/social-accounts/callback/linkedin?code=x&state="+url.QueryEscape(fresh.State), "", nil).Problem(t, 400, "bad_request")

	var accounts int
	query(t, p, `SELECT count(*) FROM social_accounts`, nil, &accounts)
	if accounts != 1 {
		t.Fatalf("%d accounts after refused callbacks", accounts)
	}

	// Reconnecting the same platform account keeps its id and takes the new tokens.
	if again := socialtest.Connect(t, env, p.Key, tw); again != accID {
		t.Fatalf("reconnect gave %s, want %s", again, accID)
	}
	query(t, p, `SELECT token FROM social_accounts`, nil, &token)
	if plain, err := sealer.Open(token, []byte("social-account:"+p.ID+":twitter:2244994945")); err != nil || !strings.Contains(string(plain), "at-twitter-2") {
		t.Fatalf("reconnected token: %s, %v", plain, err)
	}
}

// The user declines at the platform: the browser comes back with the
// platform's error code, and the state is spent.
func TestOAuthDeclined(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"linkedin"})
	p := env.NewProject("build")
	flow := socialtest.Start(t, env, p.Key, fakes["linkedin"], map[string]any{"redirect_uri": "http://localhost:3000/cb"})
	u, _ := url.Parse(flow.Callback)
	q := u.Query()
	q.Del("code")
	q.Set("error", "user_cancelled_authorize")
	q.Set("error_description", "The user cancelled <b>")
	loc := socialtest.GetAPI(t, env, env.URL+u.Path+"?"+q.Encode(), 302)
	lu, _ := url.Parse(loc)
	if lu.Host != "localhost:3000" || lu.Query().Get("status") != "error" || lu.Query().Get("error") != "user_cancelled_authorize" {
		t.Fatalf("declined: %s", loc)
	}
	if len(fakes["linkedin"].TokenRequests()) != 0 {
		t.Fatal("a declined flow exchanged a code")
	}
	if q := flow.Finish(t); q.Get("error") != "state_used" {
		t.Fatalf("the declined flow's state is still good: %v", q)
	}
}

func TestConnectValidationAndScopes(t *testing.T) {
	t.Parallel()
	env, fakes := setup(t, []string{"youtube"})
	p := env.NewProject("build")
	for _, c := range []struct {
		name, platform string
		body           any
		field          string
	}{
		{"unknown platform", "myspace", nil, "platform"},
		{"no app configured", "facebook", nil, "platform"},
		{"relative redirect", "youtube", map[string]any{"redirect_uri": "/done"}, "redirect_uri"},
		{"other scheme", "youtube", map[string]any{"redirect_uri": "javascript:alert(1)"}, "redirect_uri"},
		{"fragment", "youtube", map[string]any{"redirect_uri": "https://site.test/#x"}, "redirect_uri"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := env.Do("POST", "/v1/social-accounts/connect/"+c.platform, p.Key, c.body).Problem(t, 422, "validation_failed")
			errs := m["errors"].(map[string]any)
			if _, ok := errs[c.field]; !ok || len(errs) != 1 {
				t.Fatalf("errors: %v", errs)
			}
			if c.name == "no app configured" && !strings.Contains(jsonString(errs), "facebook") {
				t.Fatalf("the error does not name the platform: %v", errs)
			}
		})
	}
	env.Do("POST", "/v1/social-accounts/connect/youtube", p.Key, map[string]any{"redirect_uri": 5}).Problem(t, 422, "validation_failed")
	env.Do("POST", "/v1/social-accounts/connect/youtube", p.Key, map[string]any{"other": "x"}).Problem(t, 400, "bad_request")
	env.Do("POST", "/v1/social-accounts/connect/youtube", p.Key, "{").Problem(t, 400, "bad_request")
	env.Do("POST", "/v1/social-accounts/connect/youtube", "", nil).Problem(t, 401, "unauthorized")

	// social:connect is what accounts need; social:* holds it, read and write do not.
	rw := p.NewKey(false, "social:read", "social:write", "social:publish")
	for _, r := range []struct{ method, path string }{{"POST", "/v1/social-accounts/connect/youtube"}, {"GET", "/v1/social-accounts"}, {"DELETE", "/v1/social-accounts/acc_000000000000000000000000"}} {
		m := env.Do(r.method, r.path, rw, nil).Problem(t, 403, "forbidden")
		if !strings.Contains(m["detail"].(string), "social:connect") {
			t.Fatalf("%s %s: %v", r.method, r.path, m)
		}
	}
	conn := p.NewKey(false, "social:connect")
	yt := socialtest.Start(t, env, conn, fakes["youtube"], nil)
	au, _ := url.Parse(yt.OAuthURL)
	if au.Query().Get("access_type") != "offline" || au.Query().Get("prompt") != "consent" || au.Query().Get("code_challenge") == "" {
		t.Fatalf("youtube oauth_url: %s", yt.OAuthURL)
	}
	// Without redirect_uri the flow ends on the server's own page.
	final := socialtest.GetAPI(t, env, yt.Callback, 302)
	if !strings.HasPrefix(final, env.Config.PublicURL+"/v1/social-accounts/connected?") || !strings.Contains(final, "status=connected") {
		t.Fatalf("default redirect: %s", final)
	}
	fu, _ := url.Parse(final)
	page := env.Do("GET", fu.Path+"?"+fu.RawQuery, "", nil).Expect(t, 200)
	if !strings.HasPrefix(page.Header.Get("Content-Type"), "text/html") || !strings.Contains(string(page.Body), "Account connected") ||
		!strings.Contains(string(page.Body), fu.Query().Get("account_id")) {
		t.Fatalf("connected page: %s", page.Body)
	}
	failed := env.Do("GET", "/v1/social-accounts/connected?status=error&error=%3Cscript%3E", "", nil).Expect(t, 200)
	if !strings.Contains(string(failed.Body), "Connection failed") || strings.Contains(string(failed.Body), "<script>") {
		t.Fatalf("failed page: %s", failed.Body)
	}

	// Delete: 204 with no body, then 404.
	accID := fu.Query().Get("account_id")
	del := env.Do("DELETE", "/v1/social-accounts/"+accID, conn, nil).Expect(t, 204)
	if len(del.Body) != 0 {
		t.Fatalf("delete body: %q", del.Body)
	}
	env.Do("DELETE", "/v1/social-accounts/"+accID, conn, nil).Problem(t, 404, "not_found")
	env.Do("DELETE", "/v1/social-accounts/nope", conn, nil).Problem(t, 404, "not_found")
	if l := env.Do("GET", "/v1/social-accounts", conn, nil).Expect(t, 200).JSON(t); len(l["data"].([]any)) != 0 {
		t.Fatalf("after delete: %v", l)
	}
	// Another project cannot see or delete an account.
	other := env.NewProject("build")
	acc2 := socialtest.Connect(t, env, p.Key, fakes["youtube"])
	env.Do("DELETE", "/v1/social-accounts/"+acc2, other.Key, nil).Problem(t, 404, "not_found")
	if l := env.Do("GET", "/v1/social-accounts", other.Key, nil).Expect(t, 200).JSON(t); len(l["data"].([]any)) != 0 {
		t.Fatalf("another project's accounts: %v", l)
	}
}
