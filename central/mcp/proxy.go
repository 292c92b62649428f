package mcp

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProxyConfig is where `plinth mcp` forwards to.
type ProxyConfig struct {
	// URL is the server's base address (PLINTH_URL), without /v1.
	URL string
	// Key is the project API key (PLINTH_API_KEY).
	Key string
	// HTTP sends the requests; nil is http.DefaultClient.
	HTTP *http.Client
	// Version is this binary's, as the proxy's client and server name it.
	Version string
}

// Proxy serves MCP on local (stdio) by forwarding every call to the
// Streamable HTTP server at URL/v1/mcp with the key: a local agent
// drives a remote project, and the remote server alone decides what the
// key may do. The tools, their schemas and the resources are the
// remote's, read once at the start. It returns when local closes.
func Proxy(ctx context.Context, cfg ProxyConfig, local sdk.Transport) error {
	if cfg.URL == "" || cfg.Key == "" {
		return errors.New("PLINTH_URL and PLINTH_API_KEY are required")
	}
	hc := cfg.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	next := hc.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	base, err := url.Parse(strings.TrimSuffix(cfg.URL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return fmt.Errorf("PLINTH_URL %q is not an http or https URL", cfg.URL)
	}
	// The key goes to PLINTH_URL's scheme and host only: a redirect
	// elsewhere (another host, or http from https) is not followed, and
	// the key is added to no request for another origin whatever the
	// client follows.
	origin := originOf(base)
	authed := *hc
	authed.Transport = withKey{key: cfg.Key, origin: origin, next: next}
	authed.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if originOf(req.URL) != origin {
			return fmt.Errorf("redirected to %s://%s, outside PLINTH_URL (%s): not followed, the key goes nowhere else", req.URL.Scheme, req.URL.Host, cfg.URL)
		}
		if hc.CheckRedirect != nil {
			return hc.CheckRedirect(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}

	// Progress of a remote call goes to the local session that made it,
	// under the same token.
	var mu sync.Mutex
	waiting := map[string]*sdk.ServerSession{}
	client := sdk.NewClient(&sdk.Implementation{Name: "plinth-mcp", Version: cfg.Version}, &sdk.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
			mu.Lock()
			ss := waiting[fmt.Sprint(req.Params.ProgressToken)]
			mu.Unlock()
			if ss != nil {
				_ = ss.NotifyProgress(ctx, req.Params)
			}
		},
	})
	remote, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: base.String() + "/v1/mcp", HTTPClient: &authed}, nil)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", cfg.URL, err)
	}
	defer remote.Close()

	info := remote.InitializeResult()
	server := sdk.NewServer(&sdk.Implementation{Name: "plinth", Title: "Plinth", Version: info.ServerInfo.Version},
		&sdk.ServerOptions{Instructions: info.Instructions})
	for tool, err := range remote.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("listing the tools: %w", err)
		}
		server.AddTool(tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			params := &sdk.CallToolParams{Name: req.Params.Name, Arguments: req.Params.Arguments}
			if token := req.Params.GetProgressToken(); token != nil {
				// Set as received: a number arrives as float64, which
				// SetProgressToken refuses with a panic, and the remote
				// echoes it as the client sent it.
				params.Meta = sdk.Meta{"progressToken": token}
				key := fmt.Sprint(token)
				mu.Lock()
				waiting[key] = req.Session
				mu.Unlock()
				// The client handles notifications apart from answers:
				// the last progress may come after the call's answer,
				// so the token is kept a while longer.
				defer time.AfterFunc(progressGrace, func() {
					mu.Lock()
					delete(waiting, key)
					mu.Unlock()
				})
			}
			return remote.CallTool(ctx, params)
		})
	}
	read := func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return remote.ReadResource(ctx, &sdk.ReadResourceParams{URI: req.Params.URI})
	}
	for r, err := range remote.Resources(ctx, nil) {
		if err != nil {
			return fmt.Errorf("listing the resources: %w", err)
		}
		server.AddResource(r, read)
	}
	for rt, err := range remote.ResourceTemplates(ctx, nil) {
		if err != nil {
			return fmt.Errorf("listing the resource templates: %w", err)
		}
		server.AddResourceTemplate(rt, read)
	}
	return server.Run(ctx, local)
}

// progressGrace is how long a call's progress token still routes
// notifications after its answer.
const progressGrace = 10 * time.Second

// withKey sends the project key with every request to origin, and with
// no other.
type withKey struct {
	key, origin string
	next        http.RoundTripper
}

func (k withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	if originOf(r.URL) != k.origin {
		return k.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.next.RoundTrip(r)
}

// originOf is u's scheme, host and port, the port written out when it
// is the scheme's default, as one comparable string.
func originOf(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}
