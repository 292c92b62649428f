package httpapi_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// TestOverHTTPS: X-Forwarded-Proto counts only from a trusted direct
// peer, and only its last value (the one that peer set); TLS counts
// whoever the peer is. HSTS goes with HTTPS and only with it.
func TestOverHTTPS(t *testing.T) {
	t.Parallel()
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tc := range []struct {
		name   string
		peer   string
		tls    bool
		proto  []string
		secure bool
	}{
		{"plain, no header", "203.0.113.9:4000", false, nil, false},
		{"direct TLS", "203.0.113.9:4000", true, nil, true},
		{"client claims https", "203.0.113.9:4000", false, []string{"https"}, false},
		{"trusted proxy, https", "10.1.2.3:4000", false, []string{"https"}, true},
		{"trusted proxy, HTTPS", "10.1.2.3:4000", false, []string{"HTTPS"}, true},
		{"trusted IPv6 proxy", "[::1]:4000", false, []string{"https"}, true},
		{"trusted IPv4-mapped proxy", "[::ffff:10.1.2.3]:4000", false, []string{"https"}, true},
		{"trusted proxy, http", "10.1.2.3:4000", false, []string{"http"}, false},
		{"trusted proxy, no header", "10.1.2.3:4000", false, nil, false},
		{"trusted proxy appends http to the client's https", "10.1.2.3:4000", false, []string{"https, http"}, false},
		{"trusted proxy appends a line", "10.1.2.3:4000", false, []string{"https", "http"}, false},
		{"trusted proxy appends https", "10.1.2.3:4000", false, []string{"http, https"}, true},
		{"peer not an address", "pipe", false, []string{"https"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tc.peer
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for _, v := range tc.proto {
				r.Header.Add("X-Forwarded-Proto", v)
			}
			if got := httpapi.OverHTTPS(r, trusted); got != tc.secure {
				t.Fatalf("OverHTTPS = %v, want %v", got, tc.secure)
			}
			w := httptest.NewRecorder()
			httpapi.StrictTransport(trusted)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})).ServeHTTP(w, r)
			want := ""
			if tc.secure {
				want = httpapi.HSTS
			}
			if got := w.Header().Get("Strict-Transport-Security"); got != want {
				t.Fatalf("Strict-Transport-Security %q, want %q", got, want)
			}
		})
	}
}
