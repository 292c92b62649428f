package social

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Adapter speaks one platform's API: who a token acts for, and how a post
// is published there. Each adapter makes that platform's real requests;
// the base address is configurable (PLINTH_SOCIAL_<PLATFORM>_API_BASE).
type Adapter interface {
	// Identify returns the account a freshly granted token acts for. It
	// may return a replacement token (a long-lived exchange).
	Identify(ctx context.Context, api *API) (Identity, error)
	// Publish posts c as the account and returns the platform's id of the
	// post and, when the platform gives one, its URL.
	Publish(ctx context.Context, api *API, acct Target, c Content) (Published, error)
}

// Identity is the account behind a token.
type Identity struct {
	ExternalID string
	Name       string
	// Extra is kept sealed with the token (e.g. a Facebook Page token).
	Extra map[string]string
	// Token replaces the granted token when set.
	Token *oauth2.Token
}

// Target is the connected account a post is published as.
type Target struct {
	ExternalID string
	Name       string
	Extra      map[string]string
}

// Content is what a post publishes, its media split by kind.
type Content struct {
	Title  string
	Text   string
	Images []string
	Videos []string
}

// Published is a platform's answer to a publish.
type Published struct {
	ExternalID string
	URL        string
}

// platform is one supported platform: its OAuth endpoints (the real ones
// by default), scopes and API base, and its adapter.
type platform struct {
	name     string
	authURL  string
	tokenURL string
	apiBase  string
	scopes   []string
	// pkce: the platform takes (or requires) PKCE with S256.
	pkce      bool
	authStyle oauth2.AuthStyle
	// authParams are extra parameters of the authorization URL.
	authParams []oauth2.AuthCodeOption
	// clientKey: the platform names the client id client_key (TikTok).
	clientKey bool
	adapter   Adapter
}

// Platforms lists the supported platforms, in the contract's order.
var Platforms = []string{"facebook", "instagram", "twitter", "tiktok", "linkedin", "youtube"}

// ValidPlatform reports whether p is a supported platform.
func ValidPlatform(p string) bool { return slices.Contains(Platforms, p) }

func platforms() map[string]*platform {
	return map[string]*platform{
		"facebook": {
			name: "facebook", authURL: "https://www.facebook.com/v21.0/dialog/oauth",
			tokenURL: "https://graph.facebook.com/v21.0/oauth/access_token", apiBase: "https://graph.facebook.com/v21.0",
			scopes:    []string{"pages_show_list", "pages_read_engagement", "pages_manage_posts"},
			authStyle: oauth2.AuthStyleInParams, adapter: &facebook{},
		},
		"instagram": {
			name: "instagram", authURL: "https://www.instagram.com/oauth/authorize",
			tokenURL: "https://api.instagram.com/oauth/access_token", apiBase: "https://graph.instagram.com/v21.0",
			scopes:    []string{"instagram_business_basic", "instagram_business_content_publish"},
			authStyle: oauth2.AuthStyleInParams, adapter: &instagram{poll: 3 * time.Second},
		},
		"twitter": {
			name: "twitter", authURL: "https://twitter.com/i/oauth2/authorize",
			tokenURL: "https://api.twitter.com/2/oauth2/token", apiBase: "https://api.twitter.com",
			scopes: []string{"tweet.read", "tweet.write", "users.read", "offline.access"},
			pkce:   true, authStyle: oauth2.AuthStyleInHeader, adapter: &twitter{},
		},
		"tiktok": {
			name: "tiktok", authURL: "https://www.tiktok.com/v2/auth/authorize/",
			tokenURL: "https://open.tiktokapis.com/v2/oauth/token/", apiBase: "https://open.tiktokapis.com",
			// TikTok separates scopes with commas.
			scopes: []string{"user.info.basic,video.publish"},
			pkce:   true, authStyle: oauth2.AuthStyleInParams, clientKey: true, adapter: &tiktok{},
		},
		"linkedin": {
			name: "linkedin", authURL: "https://www.linkedin.com/oauth/v2/authorization",
			tokenURL: "https://www.linkedin.com/oauth/v2/accessToken", apiBase: "https://api.linkedin.com",
			scopes:    []string{"openid", "profile", "w_member_social"},
			authStyle: oauth2.AuthStyleInParams, adapter: &linkedin{},
		},
		"youtube": {
			name: "youtube", authURL: "https://accounts.google.com/o/oauth2/v2/auth",
			tokenURL: "https://oauth2.googleapis.com/token", apiBase: "https://www.googleapis.com",
			scopes: []string{"https://www.googleapis.com/auth/youtube.upload", "https://www.googleapis.com/auth/youtube.readonly"},
			pkce:   true, authStyle: oauth2.AuthStyleInParams,
			// A refresh token is only granted offline, and again only with consent.
			authParams: []oauth2.AuthCodeOption{oauth2.AccessTypeOffline, oauth2.ApprovalForce},
			adapter:    &youtube{},
		},
	}
}

// App is a platform with the OAuth app the server is configured with.
type App struct {
	*platform
	OAuth   oauth2.Config
	APIBase string
	// HTTP makes the token and API requests of the platform.
	HTTP *http.Client
}

// LoadApps reads PLINTH_SOCIAL_<PLATFORM>_CLIENT_ID, _CLIENT_SECRET,
// _AUTH_URL, _TOKEN_URL and _API_BASE for every platform. A platform is
// configured when its client id and secret are set; the URLs default to
// the platform's own. callbackBase is the public base the platforms
// redirect to (PLINTH_PUBLIC_URL).
func LoadApps(getenv func(string) string, callbackBase string, client *http.Client) map[string]*App {
	apps := map[string]*App{}
	for name, p := range platforms() {
		env := func(k string) string {
			return strings.TrimSpace(getenv("PLINTH_SOCIAL_" + strings.ToUpper(name) + "_" + k))
		}
		id, secret := env("CLIENT_ID"), env("CLIENT_SECRET")
		if id == "" || secret == "" {
			continue
		}
		a := &App{
			platform: p,
			OAuth: oauth2.Config{
				ClientID: id, ClientSecret: secret, Scopes: p.scopes,
				Endpoint:    oauth2.Endpoint{AuthURL: or(env("AUTH_URL"), p.authURL), TokenURL: or(env("TOKEN_URL"), p.tokenURL), AuthStyle: p.authStyle},
				RedirectURL: strings.TrimRight(callbackBase, "/") + "/v1/social-accounts/callback/" + name,
			},
			APIBase: strings.TrimRight(or(env("API_BASE"), p.apiBase), "/"),
			HTTP:    client,
		}
		if p.clientKey {
			a.HTTP = &http.Client{Timeout: client.Timeout, Transport: clientKeyTransport{base: client.Transport, tokenURL: a.OAuth.Endpoint.TokenURL}}
		}
		apps[name] = a
	}
	return apps
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// AuthURL is where the user grants access; verifier is the PKCE verifier
// (empty when the platform takes no PKCE).
func (a *App) AuthURL(state, verifier string) string {
	opts := slices.Clone(a.authParams)
	if verifier != "" {
		opts = append(opts, oauth2.S256ChallengeOption(verifier))
	}
	if a.clientKey {
		opts = append(opts, oauth2.SetAuthURLParam("client_key", a.OAuth.ClientID))
	}
	return a.OAuth.AuthCodeURL(state, opts...)
}

// ctx carries the app's HTTP client to golang.org/x/oauth2.
func (a *App) ctx(ctx context.Context) context.Context {
	return context.WithValue(ctx, oauth2.HTTPClient, a.HTTP)
}

// Exchange trades an authorization code for a token.
func (a *App) Exchange(ctx context.Context, code, verifier string) (*oauth2.Token, error) {
	var opts []oauth2.AuthCodeOption
	if verifier != "" {
		opts = append(opts, oauth2.VerifierOption(verifier))
	}
	return a.OAuth.Exchange(a.ctx(ctx), code, opts...)
}

// earlyRefresh is how long before its expiry a token is refreshed.
const earlyRefresh = time.Minute

// renewer is an adapter whose platform renews long-lived tokens through
// its API rather than with refresh tokens (Instagram).
type renewer interface {
	Renew(ctx context.Context, api *API) (*oauth2.Token, error)
}

// renewWithin is how long before its expiry a renewable token is renewed.
const renewWithin = 7 * 24 * time.Hour

// Fresh returns tok, refreshed first through the platform's token
// endpoint when it expires within a minute and a refresh token is held,
// or renewed through the platform's API in its last week when the
// platform renews that way.
func (a *App) Fresh(ctx context.Context, tok *oauth2.Token) (*oauth2.Token, error) {
	if r, ok := a.adapter.(renewer); ok && tok.RefreshToken == "" && !tok.Expiry.IsZero() && time.Until(tok.Expiry) < renewWithin {
		if nt, err := r.Renew(a.ctx(ctx), a.API(tok.AccessToken, nil)); err == nil && nt.AccessToken != "" {
			return nt, nil
		}
		// Renewing is a courtesy while the token lives; an expired one fails below.
	}
	src := oauth2.ReuseTokenSourceWithExpiry(tok, a.OAuth.TokenSource(a.ctx(ctx), tok), earlyRefresh)
	return src.Token()
}

// API returns a client of the platform's API acting with token.
func (a *App) API(token string, media *http.Client) *API {
	return &API{Base: a.APIBase, HTTP: a.HTTP, Token: token, ClientID: a.OAuth.ClientID, ClientSecret: a.OAuth.ClientSecret, Media: media}
}

// clientKeyTransport renames client_id to client_key in token requests,
// as TikTok wants, so golang.org/x/oauth2 (exchange and refresh) works
// against it unchanged.
type clientKeyTransport struct {
	base     http.RoundTripper
	tokenURL string
}

func (t clientKeyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	if r.Method != http.MethodPost || r.Body == nil || r.URL.String() != t.tokenURL {
		return base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, err
	}
	if v.Has("client_id") {
		v.Set("client_key", v.Get("client_id"))
		v.Del("client_id")
	}
	enc := v.Encode()
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(strings.NewReader(enc)), int64(len(enc))
	return base.RoundTrip(r)
}

// API is a client of one platform's API acting for one account.
type API struct {
	Base  string
	HTTP  *http.Client
	Token string
	// ClientID and ClientSecret are the app's, for the token exchanges
	// some platforms make through their API (long-lived tokens).
	ClientID, ClientSecret string
	// Media fetches user-supplied media URLs (SSRF-guarded), for the
	// platforms that take uploads rather than URLs.
	Media *http.Client
}

// PlatformError is a platform's refusal of a request.
type PlatformError struct {
	Status  int
	Message string
}

func (e *PlatformError) Error() string {
	return fmt.Sprintf("the platform answered %d: %s", e.Status, e.Message)
}

// Unauthorized reports whether the platform refused the token itself.
func (e *PlatformError) Unauthorized() bool { return e.Status == http.StatusUnauthorized }

// maxErrorText bounds a platform's error text kept in a result.
const maxErrorText = 300

// Do sends a request to the API: path is relative to the base (or an
// absolute URL), body is sent as a form when it is url.Values and as JSON
// otherwise, and a 2xx JSON answer is decoded into out (when not nil).
func (a *API) Do(ctx context.Context, method, p string, query url.Values, body any, out any, header ...string) (http.Header, error) {
	u := p
	if !strings.HasPrefix(p, "http://") && !strings.HasPrefix(p, "https://") {
		u = a.Base + p
	}
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	ct := ""
	switch b := body.(type) {
	case nil:
	case url.Values:
		rd, ct = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			return nil, err
		}
		rd, ct = bytes.NewReader(buf), "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	req.Header.Set("Accept", "application/json")
	if a.Token != "" {
		req.Header.Set("Authorization", "Bearer "+a.Token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return a.send(req, out)
}

func (a *API) send(req *http.Request, out any) (http.Header, error) {
	res, err := a.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the platform could not be reached: %w", err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("the platform's answer could not be read: %w", err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return res.Header, &PlatformError{Status: res.StatusCode, Message: errorText(raw, res.Status)}
	}
	if out != nil && len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return res.Header, fmt.Errorf("the platform's answer is not the JSON expected: %w", err)
		}
	}
	return res.Header, nil
}

// errorText finds the message in the error shapes platforms use:
// {error: {message}}, {error: "..", error_description}, {detail},
// {message}, {title}.
func errorText(raw []byte, status string) string {
	var m map[string]any
	msg := ""
	if json.Unmarshal(raw, &m) == nil {
		switch e := m["error"].(type) {
		case map[string]any:
			msg, _ = e["message"].(string)
		case string:
			msg = e
			if d, _ := m["error_description"].(string); d != "" {
				msg += ": " + d
			}
		}
		for _, k := range []string{"detail", "message", "title"} {
			if msg == "" {
				msg, _ = m[k].(string)
			}
		}
	}
	if msg == "" {
		msg = status
	}
	if len(msg) > maxErrorText {
		msg = msg[:maxErrorText]
	}
	return msg
}

// videoExt lists the file extensions taken for video; other media are images.
var videoExt = map[string]bool{".mp4": true, ".mov": true, ".m4v": true, ".webm": true, ".avi": true, ".mkv": true, ".mpeg": true, ".mpg": true}

// IsVideo reports whether a media URL names a video (by its extension).
func IsVideo(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	return videoExt[strings.ToLower(path.Ext(pu.Path))]
}

// splitMedia sorts media URLs into images and videos.
func splitMedia(media []string) (images, videos []string) {
	for _, m := range media {
		if IsVideo(m) {
			videos = append(videos, m)
		} else {
			images = append(images, m)
		}
	}
	return images, videos
}

// errNeedsMedia is a publish refused before any request: the platform
// cannot take the post's media.
func errNeedsMedia(platform, what string) error {
	return errors.New(platform + " posts need " + what)
}
