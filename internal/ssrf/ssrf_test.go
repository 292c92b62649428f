package ssrf

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"
)

// refused is the table of the issue: every destination is refused when
// PLINTH_DEV is unset.
var refused = []struct{ name, host string }{
	{"IPv4 loopback", "127.0.0.1"},
	{"IPv6 loopback", "[::1]"},
	{"10/8", "10.0.0.1"},
	{"172.16/12", "172.16.0.1"},
	{"192.168/16", "192.168.1.1"},
	{"metadata", "169.254.169.254"},
	{"CGNAT", "100.64.0.1"},
	{"IPv4-mapped IPv6 loopback", "[::ffff:127.0.0.1]"},
	{"IPv4-mapped IPv6 private", "[::ffff:10.1.2.3]"},
	{"unspecified", "0.0.0.0"},
	{"IPv6 unspecified", "[::]"},
	{"IPv6 link-local", "[fe80::1]"},
	{"IPv6 unique local", "[fd00::1]"},
	{"multicast", "224.0.0.1"},
	{"broadcast", "255.255.255.255"},
	{"NAT64 of loopback", "[64:ff9b::7f00:1]"},
	{"name resolving to loopback", "localhost"},
}

func TestCheck(t *testing.T) {
	for _, c := range refused {
		if c.host == "localhost" {
			continue
		}
		ip := netip.MustParseAddr(trimBrackets(c.host))
		if err := Check(ip, false); !errors.Is(err, ErrBlocked) {
			t.Errorf("%s (%s): Check = %v, want ErrBlocked", c.name, ip, err)
		}
	}
	for _, s := range []string{"93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"} {
		if err := Check(netip.MustParseAddr(s), false); err != nil {
			t.Errorf("public %s refused: %v", s, err)
		}
	}
	// dev mode opens loopback only
	for _, s := range []string{"127.0.0.1", "::1", "::ffff:127.0.0.1"} {
		if err := Check(netip.MustParseAddr(s), true); err != nil {
			t.Errorf("dev: loopback %s refused: %v", s, err)
		}
	}
	for _, s := range []string{"10.0.0.1", "169.254.169.254", "100.64.0.1", "0.0.0.0"} {
		if err := Check(netip.MustParseAddr(s), true); !errors.Is(err, ErrBlocked) {
			t.Errorf("dev: %s allowed: %v", s, err)
		}
	}
}

func trimBrackets(s string) string {
	if len(s) > 1 && s[0] == '[' {
		return s[1 : len(s)-1]
	}
	return s
}

// TestClientRefusesAtConnectTime sends real requests through the guarded
// client: the refusal comes from the dialer, after resolution, and no
// connection is made.
func TestClientRefusesAtConnectTime(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	c := NewClient(Options{Timeout: 5 * time.Second, RootCAs: roots})

	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			res, err := c.Get("https://" + tc.host + ":" + port + "/hook")
			if err == nil {
				res.Body.Close()
				t.Fatalf("request to %s succeeded", tc.host)
			}
			if !errors.Is(err, ErrBlocked) {
				t.Fatalf("request to %s: %v, want ErrBlocked", tc.host, err)
			}
		})
	}
	t.Run("redirect to loopback", func(t *testing.T) {
		// The redirector itself must be reachable outside dev mode: an
		// exception for its exact address stands in for a public host.
		redirector := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, srv.URL+"/internal", http.StatusFound)
		}))
		defer redirector.Close()
		only := netip.MustParseAddrPort(redirector.Listener.Addr().String())
		rc := newClient(Options{Timeout: 5 * time.Second, RootCAs: redirector.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs},
			func(ap netip.AddrPort) bool { return ap == only })
		res, err := rc.Get(redirector.URL + "/hook")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusFound {
			t.Fatalf("status %d, want the 302 itself", res.StatusCode)
		}
		// Following it by hand is refused too.
		if _, err := rc.Get(res.Header.Get("Location")); !errors.Is(err, ErrBlocked) {
			t.Fatalf("redirect target: %v, want ErrBlocked", err)
		}
	})
	if n := hits.Load(); n != 0 {
		t.Fatalf("the loopback server received %d requests", n)
	}

	// http is refused outside dev mode even to a public address.
	if _, err := c.Get("http://93.184.216.34/"); !errors.Is(err, ErrBlocked) {
		t.Fatalf("http outside dev mode: %v", err)
	}
}

func TestDevModeAllowsLoopbackButNeverFollowsRedirects(t *testing.T) {
	var target atomic.Int64
	dst := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { target.Add(1) }))
	defer dst.Close()
	src := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			w.WriteHeader(204)
			return
		}
		http.Redirect(w, r, dst.URL, http.StatusFound)
	}))
	defer src.Close()
	c := NewClient(Options{Dev: true, Timeout: 5 * time.Second})
	res, err := c.Get(src.URL + "/ok")
	if err != nil || res.StatusCode != 204 {
		t.Fatalf("dev mode loopback http: %v %v", res, err)
	}
	res.Body.Close()
	res, err = c.Get(src.URL + "/redirect")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 302 || target.Load() != 0 {
		t.Fatalf("redirect followed: status %d, target hits %d", res.StatusCode, target.Load())
	}
	// private ranges stay closed in dev mode
	if _, err := c.Get("http://10.0.0.1/"); !errors.Is(err, ErrBlocked) {
		t.Fatalf("dev mode private: %v", err)
	}
}

type fakeResolver map[string][]netip.Addr

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := f[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func TestCheckURL(t *testing.T) {
	r := fakeResolver{
		"public.example":   {netip.MustParseAddr("93.184.216.34")},
		"rebind.example":   {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.5")},
		"metadata.example": {netip.MustParseAddr("169.254.169.254")},
		"localhost":        {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
	}
	ctx := context.Background()
	for _, tc := range refused {
		if _, err := CheckURL(ctx, "https://"+tc.host+"/hook", false, r); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
	for _, raw := range []string{
		"http://public.example/hook", // http outside dev mode
		"ftp://public.example/",
		"https://rebind.example/",
		"https://metadata.example/",
		"/relative",
		"https://",
		"not a url",
		"https:opaque",
	} {
		if _, err := CheckURL(ctx, raw, false, r); err == nil {
			t.Errorf("%q accepted", raw)
		}
	}
	for _, raw := range []string{
		"https://public.example/hook?x=1",
		"https://93.184.216.34:8443/",
		"https://unresolvable.example/", // checked again at connect time
	} {
		if _, err := CheckURL(ctx, raw, false, r); err != nil {
			t.Errorf("%q refused: %v", raw, err)
		}
	}
	for _, raw := range []string{"http://127.0.0.1:8080/hook", "https://localhost/", "http://[::1]:9/"} {
		if _, err := CheckURL(ctx, raw, true, r); err != nil {
			t.Errorf("dev mode: %q refused: %v", raw, err)
		}
	}
	if _, err := CheckURL(ctx, "https://10.0.0.1/", true, r); err == nil {
		t.Errorf("dev mode: private address accepted")
	}
}
