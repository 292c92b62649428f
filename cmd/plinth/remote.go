package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Remote mode: the operator's commands against a server's admin API
// (/admin/api) with an admin token, instead of the database. A command
// that has an admin API equivalent embeds remoteFlags and implements
// remoteCommand; one that needs the database embeds databaseOnly and
// says why (databaseCommand). run sends each to runRemote first.

// remoteFlags select remote mode: the server's URL and an admin token,
// each from its flag or else the environment.
type remoteFlags struct {
	URL        string `name:"url" placeholder:"URL" help:"Run against the admin API of the server at URL (default PLINTH_URL) instead of the database, with --admin-token; no database is opened."`
	AdminToken string `name:"admin-token" placeholder:"TOKEN" help:"Admin token for --url (default PLINTH_ADMIN_TOKEN), holding the scope the command needs (plinth admin-token create)."`
}

func (f *remoteFlags) remoteMode() (remoteFlags, string) { return *f, "--url or PLINTH_URL" }

// tokenFlag is remoteFlags for shard add, whose --url is the shard's:
// there the server's URL comes from PLINTH_URL only.
type tokenFlag struct {
	AdminToken string `name:"admin-token" placeholder:"TOKEN" help:"Run against the admin API of the server at PLINTH_URL with this admin token (default PLINTH_ADMIN_TOKEN; scope shards:admin) instead of the database (--url is the shard's)."`
}

func (f *tokenFlag) remoteMode() (remoteFlags, string) {
	return remoteFlags{AdminToken: f.AdminToken}, "PLINTH_URL (--url is the shard's)"
}

// databaseOnly takes remote mode's flags, hidden, so that a command with
// no admin API equivalent refuses them by name instead of calling them
// unknown.
type databaseOnly struct {
	URL        string `name:"url" hidden:""`
	AdminToken string `name:"admin-token" hidden:""`
}

func (f *databaseOnly) remoteMode() (remoteFlags, string) { return remoteFlags(*f), "" }

// remoteCommand is a command with an admin API equivalent: Remote prints
// what Run prints on the database.
type remoteCommand interface {
	remoteMode() (remoteFlags, string)
	Remote(e *env, api *adminClient) error
}

// databaseCommand is a command with no admin API equivalent; needsDatabase
// says why, for its refusal of remote mode.
type databaseCommand interface {
	remoteMode() (remoteFlags, string)
	needsDatabase() string
}

func (serveCmd) needsDatabase() string  { return "it is the server, on the database" }
func (workerCmd) needsDatabase() string { return "it works the jobs of the database" }
func (migrateCmd) needsDatabase() string {
	return "it migrates the databases themselves (central, River, every project schema)"
}
func (adminTokenCreateCmd) needsDatabase() string { return adminTokensLocal }
func (adminTokenListCmd) needsDatabase() string   { return adminTokensLocal }
func (adminTokenRevokeCmd) needsDatabase() string { return adminTokensLocal }
func (keyCreateCmd) needsDatabase() string {
	return "the admin API mints no project key (a workspace user may create one in the dashboard)"
}

const adminTokensLocal = "admin tokens are minted, listed and revoked in the central database: the admin API has no route for them"

// runRemote runs cmd, the command at path, in remote mode when its flags
// or the environment select it, and reports whether it did. A command
// that needs the database refuses remote mode; without it, the command
// runs on the database (handled false).
func (e *env) runRemote(path string, cmd any) (handled bool, err error) {
	if c, ok := cmd.(databaseCommand); ok {
		f, _ := c.remoteMode()
		if f.URL != "" || f.AdminToken != "" || e.getenv("PLINTH_URL") != "" && e.getenv("PLINTH_ADMIN_TOKEN") != "" {
			return true, fmt.Errorf("plinth %s has no admin API equivalent: %s; run it without --url and --admin-token (PLINTH_URL or PLINTH_ADMIN_TOKEN unset) where DATABASE_URL reaches the central database", path, c.needsDatabase())
		}
		return false, nil
	}
	c, ok := cmd.(remoteCommand)
	if !ok {
		return false, nil
	}
	api, err := e.adminAPI(c.remoteMode())
	if api == nil {
		return err != nil, err
	}
	return true, c.Remote(e, api)
}

// adminAPI is the client of the server remote mode selects, or nil: a
// URL and an admin token, each from its flag or else its variable. A
// flag without the other half is an error; a variable alone (PLINTH_URL
// is plinth mcp's too) leaves the command on the database. urlFrom names
// where the URL may come from.
func (e *env) adminAPI(f remoteFlags, urlFrom string) (*adminClient, error) {
	u, token := f.URL, f.AdminToken
	if u == "" {
		u = e.getenv("PLINTH_URL")
	}
	if token == "" {
		token = e.getenv("PLINTH_ADMIN_TOKEN")
	}
	switch {
	case u != "" && token != "":
		return newAdminClient(u, token)
	case f.URL != "":
		return nil, errors.New("--url needs an admin token: --admin-token or PLINTH_ADMIN_TOKEN (plinth admin-token create mints one)")
	case f.AdminToken != "":
		return nil, fmt.Errorf("--admin-token needs the server's URL: %s", urlFrom)
	}
	return nil, nil
}

// remoteTimeout bounds the wait for each answer of the server, and the
// whole exchange of a JSON call; an archive's bytes flow as long as they
// come (until Ctrl-C).
const remoteTimeout = time.Minute

// adminClient calls the admin API of one server with an admin token.
type adminClient struct {
	base  string // the server's URL followed by /admin/api
	token string // sent in Authorization only: never printed or logged
	http  *http.Client
}

func newAdminClient(rawURL, token string) (*adminClient, error) {
	u, err := url.Parse(strings.TrimSuffix(rawURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("the server's URL %q (--url or PLINTH_URL) is not an http or https URL", rawURL)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.ResponseHeaderTimeout = remoteTimeout
	return &adminClient{base: u.String() + central.AdminPath, token: token, http: &http.Client{
		Transport: tr,
		// The admin API answers in place: a redirect (a proxy sending
		// http to https, another host) is reported, and the token goes
		// nowhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}, nil
}

// do sends a JSON request (no body when body is nil) and decodes the
// answer into out (discarded when out is nil).
func (c *adminClient) do(ctx context.Context, method, path string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, remoteTimeout)
	defer cancel()
	var rd io.Reader
	var ctype string
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd, ctype = bytes.NewReader(b), "application/json"
	}
	req, err := c.request(ctx, method, path, ctype, rd)
	if err != nil {
		return err
	}
	res, err := c.send(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(res.Body).Decode(out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the admin API's: %w", method, req.URL.Redacted(), err)
	}
	return nil
}

// request is a request of the admin API at path, with the token.
func (c *adminClient) request(ctx context.Context, method, path, ctype string, body io.Reader) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	return req, nil
}

// send sends req and returns a 2xx answer, whose body the caller closes;
// any other answer is returned as its problem.
func (c *adminClient) send(req *http.Request) (*http.Response, error) {
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err // the URL, never the token
	}
	if res.StatusCode/100 == 2 {
		return res, nil
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	ctype, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	var p problemError
	if (ctype == "application/problem+json" || ctype == "application/json") && json.Unmarshal(b, &p) == nil && p.Code != "" {
		p.Status = res.StatusCode
		return nil, &p
	}
	return nil, fmt.Errorf("%s %s: the server answered %s (%s), not the admin API: is %s the server's base URL?",
		req.Method, req.URL.Redacted(), res.Status, ctype, strings.TrimSuffix(c.base, central.AdminPath))
}

// problemError is a refusal of the admin API (its problem+json). It
// reads as the database mode's error of the same failure (the detail,
// then the invalid fields), followed by the problem's code; a refused
// token says which flag to mend, a missing scope how to get it.
type problemError struct {
	Status int                 `json:"status"`
	Title  string              `json:"title"`
	Code   string              `json:"code"`
	Detail string              `json:"detail"`
	Errors map[string][]string `json:"errors"`
}

func (p *problemError) Error() string {
	detail := p.Detail
	if detail == "" {
		detail = p.Title
	}
	msg := (&httpapi.Failure{Kind: errors.New(http.StatusText(p.Status)), Detail: detail, Fields: p.Errors}).Error() + " (" + p.Code + ")"
	switch {
	case p.Status == http.StatusUnauthorized:
		return "the server refused the admin token (--admin-token or PLINTH_ADMIN_TOKEN): " + msg
	case p.Status == http.StatusForbidden && p.Code == httpapi.CodeForbidden:
		return msg + "; plinth admin-token create --scopes mints a token that holds it"
	}
	return msg
}

// follow calls check after growing pauses (a quarter of a second,
// doubling up to two: the admin API limits each token's rate) until it
// reports done, fails, or ctx ends (Ctrl-C stops following, not the work
// on the server).
func follow(ctx context.Context, check func() (done bool, err error)) error {
	wait := 250 * time.Millisecond
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		if done, err := check(); err != nil || done {
			return err
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// pageQuery is the query of a list request: the page flags, as the
// database mode checked them, and the filters set.
func pageQuery(f pageFlags, filters url.Values) string {
	q := url.Values{"limit": {fmt.Sprint(f.Limit)}}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	for k, v := range filters {
		if len(v) > 0 && v[0] != "" {
			q[k] = v
		}
	}
	return "?" + q.Encode()
}

// printJSON writes v as one JSON object, as every command that prints a
// resource does.
func (e *env) printJSON(v any) error { return json.NewEncoder(e.stdout).Encode(v) }
