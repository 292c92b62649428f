package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/plinth-dev/plinth/central/inproc"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/content"
	"github.com/plinth-dev/plinth/tenant/drafts"
	"github.com/plinth-dev/plinth/tenant/releases"
	"github.com/plinth-dev/plinth/tenant/webhooks"
)

// problem is a problem+json answer of the API, as far as the pages use it.
type problem struct {
	Status  int                 `json:"status"`
	Code    string              `json:"code"`
	Detail  string              `json:"detail"`
	Message string              `json:"message"`
	Errors  map[string][]string `json:"errors"`
	// ProjectStatus names the status of the project that refused a
	// change (403).
	ProjectStatus string `json:"project_status"`
	// RetryAfter is the Retry-After of a 429, in seconds.
	RetryAfter int `json:"-"`
}

func (p *problem) Error() string { return fmt.Sprintf("%d %s: %s", p.Status, p.Code, p.Detail) }

// call sends a request to the central API through the server's router,
// as the browser's client (its address, so the login's per-IP limit
// counts the browser), with the session's token when there is one. A
// 2xx answer is decoded into out; anything else is a *problem, except
// 401, which means the session is over (errSignedOut).
func (d *Dashboard) call(r *http.Request, method, path string, body, out any) error {
	res, err := d.send(r, method, path, "application/json", body)
	if err != nil {
		return err
	}
	if out == nil || res.Status == 204 {
		return nil
	}
	return json.Unmarshal(res.Body.Bytes(), out)
}

// pageHeaders are the headers of a page's request its API requests
// carry: the client's address and agent, for the limits and the logs.
// Never the cookies: the session's token goes as Authorization.
var pageHeaders = []string{"X-Forwarded-For", "X-Real-Ip", "User-Agent"}

// send is call's request, asking for the media type accept, with the
// answer kept whole when it is a 2xx (a CSV export is passed on as is).
func (d *Dashboard) send(r *http.Request, method, path, accept string, body any) (*inproc.Response, error) {
	req := inproc.Request{Method: method, Target: path, Header: http.Header{"Accept": {accept}}}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		req.Body = bytes.NewReader(b)
		req.Header.Set("Content-Type", "application/json")
	}
	tok := ""
	if c, err := r.Cookie(sessionCookie); err == nil {
		tok = c.Value
	}
	if t, ok := r.Context().Value(tokenKey{}).(string); ok {
		tok = t
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := d.api.Do(inproc.Of(r), req)
	if err != nil {
		return nil, err
	}
	if res.Status >= 200 && res.Status < 300 {
		return res, nil
	}
	if res.Status == 401 && tok != "" {
		return nil, errSignedOut
	}
	p := &problem{}
	if err := json.Unmarshal(res.Body.Bytes(), p); err != nil || p.Status == 0 {
		return nil, fmt.Errorf("dashboard: %s %s answered %d: %s", method, path, res.Status, res.Body.String())
	}
	p.RetryAfter, _ = strconv.Atoi(res.Header.Get("Retry-After"))
	return nil, p
}

// tokenKey carries a token just issued, before the browser has its cookie.
type tokenKey struct{}

// Resources of the central API the pages show.
type (
	tenant struct {
		ID     int64  `json:"id"`
		Name   string `json:"name"`
		Domain string `json:"domain"`
	}
	session struct {
		User struct {
			ID    int64  `json:"id"`
			Name  string `json:"name"`
			Email string `json:"email"`
		} `json:"user"`
		Tenant tenant `json:"tenant"`
		// ProjectPlans are the plans the user may give a new project, the
		// default first.
		ProjectPlans []string `json:"project_plans"`
	}
	project struct {
		ID              string    `json:"id"`
		Name            string    `json:"name"`
		Slug            string    `json:"slug"`
		DefaultLanguage string    `json:"default_language"`
		TargetLanguages []string  `json:"target_languages"`
		Timezone        string    `json:"timezone"`
		Plan            string    `json:"plan"`
		CreatedAt       time.Time `json:"created_at"`
		// Status is active, suspended or deleting.
		Status string `json:"status"`
	}
	apiKey struct {
		ID         string     `json:"id"`
		Name       string     `json:"name"`
		Masked     string     `json:"masked"`
		Secret     string     `json:"secret"`
		Scopes     []string   `json:"scopes"`
		LastUsedAt *time.Time `json:"last_used_at"`
		CreatedAt  time.Time  `json:"created_at"`
	}
	// The pillars' resources decode into the pillars' own types.
	webhookEndpoint = webhooks.Endpoint
	delivery        = webhooks.Delivery
	contentPage     = content.Page
	blogPost        = blog.Post
	version         = drafts.Version
	release         = releases.Release
	job             struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Status   string `json:"status"`
		Progress int    `json:"progress"`
		Message  string `json:"message"`
		Error    *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		CreatedAt time.Time `json:"created_at"`
		UpdatedAt time.Time `json:"updated_at"`
	}
	submission struct {
		ID        int64     `json:"id"`
		Type      string    `json:"type"`
		Email     string    `json:"email"`
		Name      *string   `json:"name"`
		Subject   *string   `json:"subject"`
		Message   *string   `json:"message"`
		Source    *string   `json:"source"`
		Spam      bool      `json:"spam"`
		CreatedAt time.Time `json:"created_at"`
	}
	list[T any] struct {
		Data       []T    `json:"data"`
		HasMore    bool   `json:"has_more"`
		NextCursor string `json:"next_cursor"`
	}
)
