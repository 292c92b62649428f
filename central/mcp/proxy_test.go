package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/central/mcp"
)

// authLog records the Authorization header of every request a server
// received.
type authLog struct {
	mu   sync.Mutex
	seen []string
}

func (l *authLog) record(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, r.Header.Get("Authorization"))
}

func (l *authLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

// TestProxyKeepsKeyToItsOrigin: plinth mcp sends the key to PLINTH_URL's
// scheme and host only. A server there that redirects to another host,
// or from https to http, never gets the key to that other server: the
// redirect is not followed and the proxy says so. A redirect within the
// same origin is followed with the key.
func TestProxyKeepsKeyToItsOrigin(t *testing.T) {
	t.Parallel()
	const key = "pln_live_thekeythatmuststayhome"
	for _, c := range []struct {
		name   string
		tls    bool
		status int
	}{
		{"another host, 307", false, http.StatusTemporaryRedirect},
		{"another host, 308", false, http.StatusPermanentRedirect},
		{"another host, 302", false, http.StatusFound},
		{"https to http, 307", true, http.StatusTemporaryRedirect},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var elsewhere authLog
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				elsewhere.record(r)
				http.Error(w, "who are you", http.StatusUnauthorized)
			}))
			t.Cleanup(other.Close)
			redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.Path, c.status)
			})
			first := httptest.NewUnstartedServer(redirect)
			if c.tls {
				first.StartTLS()
			} else {
				first.Start()
			}
			t.Cleanup(first.Close)
			require.NotEqual(t, first.Listener.Addr().String(), other.Listener.Addr().String())

			_, local := sdk.NewInMemoryTransports()
			err := mcp.Proxy(context.Background(), mcp.ProxyConfig{URL: first.URL, Key: key, HTTP: first.Client()}, local)
			for _, auth := range elsewhere.all() {
				require.NotContains(t, auth, key, "the other server got the key")
			}
			require.ErrorContains(t, err, "not followed")
		})
	}

	t.Run("same origin", func(t *testing.T) {
		t.Parallel()
		env := apitest.New(t)
		p := env.NewProject("build")
		env.Do("PUT", "/v1/content/hero.title", p.Key, map[string]any{"value": "Moved"}).Expect(t, 200)
		var home authLog
		mux := http.NewServeMux()
		mux.HandleFunc("/v1/mcp", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/moved/v1/mcp", http.StatusTemporaryRedirect)
		})
		mux.Handle("/moved/", http.StripPrefix("/moved", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			home.record(r)
			env.Server.Handler.ServeHTTP(w, r)
		})))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)

		local, remote := sdk.NewInMemoryTransports()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mcp.Proxy(ctx, mcp.ProxyConfig{URL: srv.URL, Key: p.Key, HTTP: srv.Client()}, remote) }()
		t.Cleanup(func() {
			cancel()
			<-done
		})
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "plinth-test", Version: "1"}, nil).Connect(context.Background(), local, nil)
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		got := structured(t, callTool(t, cs, "get_content", map[string]any{"key": "hero.title"}))
		require.Equal(t, "Moved", got["value"])
		seen := home.all()
		require.NotEmpty(t, seen)
		for _, auth := range seen {
			require.True(t, strings.HasSuffix(auth, p.Key), "a request reached the server without the key: %q", auth)
		}
	})
}
