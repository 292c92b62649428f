// Package socialtest gives social tests a fake platform: one httptest
// server that is the platform's OAuth authorization and token server
// (with PKCE checks and rotating refresh tokens) and its API, answering
// the requests the adapters make and recording them.
package socialtest

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// Request is one API request the platform received.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	// Form is the form body; JSON is the decoded JSON body.
	Form   url.Values
	JSON   map[string]any
	Header http.Header
	Token  string
	Body   []byte
}

// Platform is a fake of one platform.
type Platform struct {
	Name         string
	Server       *httptest.Server
	ClientID     string
	ClientSecret string
	// ExpiresIn is the lifetime in seconds of the access tokens issued
	// (default 3600); LongLivedExpiresIn that of the long-lived tokens of
	// Facebook and Instagram (default 60 days).
	ExpiresIn          int
	LongLivedExpiresIn int

	mu        sync.Mutex
	codes     map[string]grant
	access    map[string]bool
	refresh   map[string]bool
	issued    int
	requests  []Request
	tokenReqs []url.Values
	fail      func(r Request) (int, string)
	seq       int
}

type grant struct {
	redirectURI string
	challenge   string
	used        bool
}

// New starts a fake of platform (facebook, instagram, twitter, tiktok,
// linkedin or youtube).
func New(t testing.TB, platform string) *Platform {
	p := &Platform{Name: platform, ClientID: "client-" + platform, ClientSecret: "secret-" + platform, ExpiresIn: 3600, LongLivedExpiresIn: 5184000,
		codes: map[string]grant{}, access: map[string]bool{}, refresh: map[string]bool{}}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.Server.Close)
	return p
}

// Env returns the PLINTH_SOCIAL_<PLATFORM>_* settings pointing at the fake.
func (p *Platform) Env() []string {
	k := "PLINTH_SOCIAL_" + strings.ToUpper(p.Name) + "_"
	return []string{k + "CLIENT_ID", p.ClientID, k + "CLIENT_SECRET", p.ClientSecret,
		k + "AUTH_URL", p.Server.URL + "/oauth/authorize", k + "TOKEN_URL", p.Server.URL + "/oauth/token", k + "API_BASE", p.Server.URL + "/api"}
}

// FailPublish makes the platform refuse publish requests (any POST to its
// API, or the YouTube upload) with status and message; nil restores it.
func (p *Platform) FailPublish(f func(r Request) (int, string)) {
	p.mu.Lock()
	p.fail = f
	p.mu.Unlock()
}

// Requests returns the API requests received so far.
func (p *Platform) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.requests...)
}

// Posts returns the API requests that publish (POST and PUT).
func (p *Platform) Posts() []Request {
	var out []Request
	for _, r := range p.Requests() {
		if r.Method == "POST" || r.Method == "PUT" {
			out = append(out, r)
		}
	}
	return out
}

// TokenRequests returns the forms posted to the token endpoint.
func (p *Platform) TokenRequests() []url.Values {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]url.Values(nil), p.tokenReqs...)
}

// ValidToken reports whether tok is an access token the platform honours.
func (p *Platform) ValidToken(tok string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.access[tok]
}

// Revoke makes the platform refuse every token issued so far.
func (p *Platform) Revoke() {
	p.mu.Lock()
	p.access, p.refresh = map[string]bool{}, map[string]bool{}
	p.mu.Unlock()
}

func (p *Platform) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/oauth/authorize":
		p.authorize(w, r)
	case r.URL.Path == "/oauth/token":
		p.token(w, r)
	case strings.HasPrefix(r.URL.Path, "/api/") || strings.HasPrefix(r.URL.Path, "/upload-session/"):
		p.api(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (p *Platform) pkce() bool {
	return p.Name == "twitter" || p.Name == "tiktok" || p.Name == "youtube"
}

// authorize grants at once and sends the browser back with a code.
func (p *Platform) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	client := q.Get("client_id")
	if p.Name == "tiktok" {
		client = q.Get("client_key")
	}
	if client != p.ClientID || q.Get("response_type") != "code" || q.Get("redirect_uri") == "" || q.Get("state") == "" {
		http.Error(w, "bad authorization request", 400)
		return
	}
	if p.pkce() && (q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256") {
		http.Error(w, "PKCE required", 400)
		return
	}
	p.mu.Lock()
	p.seq++
	code := fmt.Sprintf("code-%s-%d", p.Name, p.seq)
	p.codes[code] = grant{redirectURI: q.Get("redirect_uri"), challenge: q.Get("code_challenge")}
	p.mu.Unlock()
	u, _ := url.Parse(q.Get("redirect_uri"))
	v := u.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	u.RawQuery = v.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func tokenError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"error":%q,"error_description":"refused by the fake"}`, code)
}

// token exchanges codes and refresh tokens; refresh tokens rotate.
func (p *Platform) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		tokenError(w, 400, "invalid_request")
		return
	}
	f := r.PostForm
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tokenReqs = append(p.tokenReqs, f)
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = f.Get("client_id"), f.Get("client_secret")
		if p.Name == "tiktok" {
			id = f.Get("client_key")
		}
	}
	if id != p.ClientID || secret != p.ClientSecret {
		tokenError(w, 401, "invalid_client")
		return
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := p.codes[f.Get("code")]
		if !ok || g.used || g.redirectURI != f.Get("redirect_uri") {
			tokenError(w, 400, "invalid_grant")
			return
		}
		if g.challenge != "" {
			sum := sha256.Sum256([]byte(f.Get("code_verifier")))
			if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
				tokenError(w, 400, "invalid_grant")
				return
			}
		}
		g.used = true
		p.codes[f.Get("code")] = g
	case "refresh_token":
		if !p.refresh[f.Get("refresh_token")] {
			tokenError(w, 400, "invalid_grant")
			return
		}
		delete(p.refresh, f.Get("refresh_token"))
	default:
		tokenError(w, 400, "unsupported_grant_type")
		return
	}
	p.issued++
	at, rt := fmt.Sprintf("at-%s-%d", p.Name, p.issued), fmt.Sprintf("rt-%s-%d", p.Name, p.issued)
	p.access[at], p.refresh[rt] = true, true
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": at, "refresh_token": rt, "token_type": "bearer", "expires_in": p.ExpiresIn})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// api answers the platform's API requests the adapters make.
func (p *Platform) api(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: strings.TrimPrefix(r.URL.Path, "/api"), Query: r.URL.Query(), Header: r.Header.Clone(), Body: body,
		Token: strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")}
	switch ct := r.Header.Get("Content-Type"); {
	case strings.HasPrefix(ct, "application/x-www-form-urlencoded"):
		req.Form, _ = url.ParseQuery(string(body))
	case strings.HasPrefix(ct, "application/json"):
		_ = json.Unmarshal(body, &req.JSON)
	}
	p.mu.Lock()
	p.requests = append(p.requests, req)
	valid := p.access[req.Token]
	fail := p.fail
	p.seq++
	n := p.seq
	p.mu.Unlock()
	if !valid {
		writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "Invalid OAuth access token", "code": 190}})
		return
	}
	if fail != nil && (r.Method == "POST" || r.Method == "PUT") {
		if status, msg := fail(req); status != 0 {
			writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg}})
			return
		}
	}
	path := req.Path
	switch p.Name {
	case "facebook":
		switch {
		case path == "/oauth/access_token":
			long := "long-" + req.Query.Get("fb_exchange_token")
			p.grantToken(long)
			writeJSON(w, 200, map[string]any{"access_token": long, "token_type": "bearer", "expires_in": p.LongLivedExpiresIn})
		case path == "/me/accounts":
			p.grantToken("page-token-" + req.Token)
			writeJSON(w, 200, map[string]any{"data": []map[string]any{{"id": "1001", "name": "Acme Page", "access_token": "page-token-" + req.Token}}})
		case strings.HasSuffix(path, "/photos"):
			writeJSON(w, 200, map[string]any{"id": fmt.Sprintf("photo-%d", n)})
		case strings.HasSuffix(path, "/videos"):
			writeJSON(w, 200, map[string]any{"id": fmt.Sprintf("video-%d", n)})
		case strings.HasSuffix(path, "/feed"):
			writeJSON(w, 200, map[string]any{"id": fmt.Sprintf("1001_%d", n)})
		default:
			http.NotFound(w, r)
		}
	case "instagram":
		switch {
		case path == "/access_token" || path == "/refresh_access_token":
			long := "long-" + req.Query.Get("access_token")
			p.grantToken(long)
			writeJSON(w, 200, map[string]any{"access_token": long, "token_type": "bearer", "expires_in": p.LongLivedExpiresIn})
		case path == "/me":
			writeJSON(w, 200, map[string]any{"user_id": 17841400000000001, "username": "acme.studio", "id": "app-scoped-1"})
		case strings.HasSuffix(path, "/media") && r.Method == "POST":
			writeJSON(w, 200, map[string]any{"id": fmt.Sprintf("container-%d", n)})
		case strings.HasSuffix(path, "/media_publish"):
			writeJSON(w, 200, map[string]any{"id": fmt.Sprintf("ig-media-%d", n)})
		case strings.HasPrefix(path, "/container-"):
			writeJSON(w, 200, map[string]any{"status_code": "FINISHED", "id": strings.TrimPrefix(path, "/")})
		case strings.HasPrefix(path, "/ig-media-"):
			writeJSON(w, 200, map[string]any{"permalink": "https://www.instagram.com/p/" + strings.TrimPrefix(path, "/ig-media-"), "id": strings.TrimPrefix(path, "/")})
		default:
			http.NotFound(w, r)
		}
	case "twitter":
		switch path {
		case "/2/users/me":
			writeJSON(w, 200, map[string]any{"data": map[string]any{"id": "2244994945", "name": "Acme Studio", "username": "acmestudio"}})
		case "/2/tweets":
			writeJSON(w, 201, map[string]any{"data": map[string]any{"id": fmt.Sprintf("17%d", n), "text": req.JSON["text"]}})
		default:
			http.NotFound(w, r)
		}
	case "linkedin":
		switch path {
		case "/v2/userinfo":
			writeJSON(w, 200, map[string]any{"sub": "782bbtaQ", "name": "Ada Acme"})
		case "/v2/ugcPosts":
			w.Header().Set("X-RestLi-Id", fmt.Sprintf("urn:li:share:%d", n))
			writeJSON(w, 201, map[string]any{"id": fmt.Sprintf("urn:li:share:%d", n)})
		default:
			http.NotFound(w, r)
		}
	case "tiktok":
		ok := map[string]any{"code": "ok", "message": ""}
		switch path {
		case "/v2/user/info/":
			writeJSON(w, 200, map[string]any{"data": map[string]any{"user": map[string]any{"open_id": "tt-open-1", "display_name": "acme"}}, "error": ok})
		case "/v2/post/publish/video/init/", "/v2/post/publish/content/init/":
			writeJSON(w, 200, map[string]any{"data": map[string]any{"publish_id": fmt.Sprintf("v_pub_%d", n)}, "error": ok})
		default:
			http.NotFound(w, r)
		}
	case "youtube":
		switch {
		case path == "/youtube/v3/channels":
			writeJSON(w, 200, map[string]any{"items": []map[string]any{{"id": "UC-acme", "snippet": map[string]any{"title": "Acme Channel"}}}})
		case path == "/upload/youtube/v3/videos":
			w.Header().Set("Location", fmt.Sprintf("%s/upload-session/%d", p.Server.URL, n))
			w.WriteHeader(200)
		case strings.HasPrefix(r.URL.Path, "/upload-session/"):
			writeJSON(w, 200, map[string]any{"id": fmt.Sprintf("yt%d", n), "bytes": len(body)})
		default:
			http.NotFound(w, r)
		}
	default:
		http.NotFound(w, r)
	}
}

func (p *Platform) grantToken(tok string) {
	p.mu.Lock()
	p.access[tok] = true
	p.mu.Unlock()
}

// Flow is an OAuth flow driven through the server under test.
type Flow struct {
	OAuthURL string
	State    string
	// Callback is the server's callback URL the platform sent the
	// browser to (on the test server), code and state included.
	Callback string

	env *apitest.Env
}

// noFollow is an HTTP client that shows redirects instead of following them.
var noFollow = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// Start connects p through the API (body: the request's JSON, or nil)
// and lets the fake grant access, returning where it sent the browser.
func Start(t testing.TB, env *apitest.Env, key string, p *Platform, body any) Flow {
	t.Helper()
	res := env.Do("POST", "/v1/social-accounts/connect/"+p.Name, key, body).Expect(t, 200).JSON(t)
	f := Flow{OAuthURL: res["oauth_url"].(string), State: res["state"].(string)}
	loc := Get(t, f.OAuthURL, 302)
	u, err := url.Parse(loc)
	if err != nil {
		t.Fatal(err)
	}
	if want := env.Config.PublicURL + "/v1/social-accounts/callback/" + p.Name; u.Scheme+"://"+u.Host+u.Path != want {
		t.Fatalf("the platform redirected to %s, want the callback %s", loc, want)
	}
	f.Callback = env.URL + u.Path + "?" + u.RawQuery
	f.env = env
	return f
}

// Get requests u without following redirects, expects status and
// returns the Location header.
func Get(t testing.TB, u string, status int) string {
	t.Helper()
	res, _ := get(t, u, status)
	return res.Header.Get("Location")
}

// get requests u without following redirects, expects status and
// returns the response with its body read.
func get(t testing.TB, u string, status int) (*http.Response, []byte) {
	t.Helper()
	res, err := noFollow.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		t.Fatalf("GET %s: status %d, want %d: %s", u, res.StatusCode, status, b)
	}
	return res, b
}

// GetAPI is Get of a URL of env's server (the OAuth callback), whose
// answer is also checked against the OpenAPI document, as env.Do does.
func GetAPI(t testing.TB, env *apitest.Env, u string, status int) string {
	t.Helper()
	res, b := get(t, u, status)
	path := res.Request.URL.Path
	if q := res.Request.URL.RawQuery; q != "" {
		path += "?" + q
	}
	for _, msg := range env.Contract.Check(apitest.Exchange{Method: "GET", Path: path, ReqHeader: res.Request.Header,
		Status: res.StatusCode, RespHeader: res.Header, RespBody: b, Routed: true}) {
		t.Errorf("OpenAPI contract: %s", msg)
	}
	return res.Header.Get("Location")
}

// Finish follows the callback and returns the query of the redirect it
// answers with (status, account_id or error).
func (f Flow) Finish(t testing.TB) url.Values {
	t.Helper()
	u, err := url.Parse(GetAPI(t, f.env, f.Callback, 302))
	if err != nil {
		t.Fatal(err)
	}
	return u.Query()
}

// Connect runs the whole round trip and returns the new account's id.
func Connect(t testing.TB, env *apitest.Env, key string, p *Platform) string {
	t.Helper()
	q := Start(t, env, key, p, nil).Finish(t)
	if q.Get("status") != "connected" || q.Get("account_id") == "" {
		t.Fatalf("connect %s: %v", p.Name, q)
	}
	return q.Get("account_id")
}
