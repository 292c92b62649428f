// Package ssrf makes outgoing HTTP requests to user-supplied URLs safe:
// webhook deliveries and image URL fetches. A URL must be https (http is
// allowed only in dev mode); the address is checked when the connection is
// made, after DNS resolution, so a name that resolves (or re-resolves) to
// an internal address is refused; redirects are never followed; no proxy
// from the environment is used.
package ssrf

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// ErrBlocked is wrapped by every refusal, so callers can tell a refused
// address from a network failure.
var ErrBlocked = errors.New("ssrf: address not allowed")

// blocked lists the ranges no request may reach, besides what the netip
// predicates catch (loopback, private, link-local, multicast, unspecified).
var blocked = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // carrier-grade NAT (RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // documentation
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // documentation
	netip.MustParsePrefix("203.0.113.0/24"),  // documentation
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and broadcast
	netip.MustParsePrefix("::/96"),           // IPv4-compatible (deprecated)
	netip.MustParsePrefix("64:ff9b::/96"),    // NAT64: reaches IPv4 through a translator
	netip.MustParsePrefix("64:ff9b:1::/48"),  // local-use NAT64
	netip.MustParsePrefix("100::/64"),        // discard
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("2002::/16"),       // 6to4: embeds an IPv4 address
	netip.MustParsePrefix("fec0::/10"),       // site-local (deprecated)
}

// Check returns nil when a request may connect to ip. In dev mode loopback
// addresses are allowed too (local receivers and test servers).
func Check(ip netip.Addr, dev bool) error {
	ip = ip.Unmap() // ::ffff:127.0.0.1 is 127.0.0.1
	if dev && ip.IsLoopback() {
		return nil
	}
	switch {
	case !ip.IsValid(), ip.IsUnspecified(), ip.IsLoopback(), ip.IsPrivate(),
		ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast(), ip.IsInterfaceLocalMulticast(),
		ip.IsMulticast(), !ip.IsGlobalUnicast():
		return fmt.Errorf("%w: %s is not a public address", ErrBlocked, ip)
	}
	for _, p := range blocked {
		if p.Contains(ip) {
			return fmt.Errorf("%w: %s is in the reserved range %s", ErrBlocked, ip, p)
		}
	}
	return nil
}

// Resolver looks up a host's addresses (net.DefaultResolver satisfies it).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// CheckURL validates raw as a destination: absolute, https (or http in dev
// mode), with a host whose addresses are all allowed. A name that does not
// resolve now is accepted, since the address is checked again at connect
// time; a name that resolves to a refused address is not. The error is
// meant for the user (a 422 on the url field).
func CheckURL(ctx context.Context, raw string, dev bool, r Resolver) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, errors.New("must be an absolute URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
	case "http":
		if !dev {
			return nil, errors.New("must use https")
		}
	default:
		return nil, errors.New("must use https")
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("must name a host")
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if err := Check(ip, dev); err != nil {
			return nil, errors.New("must not point to a private, loopback, link-local or reserved address")
		}
		return u, nil
	}
	if r == nil {
		r = net.DefaultResolver
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return u, nil // unresolvable now: the connect-time check decides
	}
	for _, a := range addrs {
		if err := Check(a, dev); err != nil {
			return nil, errors.New("must not resolve to a private, loopback, link-local or reserved address")
		}
	}
	return u, nil
}

// Options configure a guarded client.
type Options struct {
	// Dev allows http:// URLs and loopback addresses.
	Dev bool
	// Timeout bounds a whole request (0: none; set a context deadline).
	Timeout time.Duration
	// RootCAs replaces the system roots (tests trust their own servers).
	RootCAs *x509.CertPool
	// MaxConnsPerHost bounds connections per host (0: unbounded).
	MaxConnsPerHost int
}

// NewClient returns an HTTP client that refuses forbidden addresses at
// connect time, refuses http:// outside dev mode, and returns redirects to
// the caller instead of following them.
func NewClient(o Options) *http.Client {
	return newClient(o, nil)
}

// newClient is NewClient with an exception hook for tests that need one
// specific loopback server reachable outside dev mode.
func newClient(o Options, allow func(netip.AddrPort) bool) *http.Client {
	dialer := &net.Dialer{
		Timeout:   10 * time.Second,
		KeepAlive: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: %s", ErrBlocked, address)
			}
			if allow != nil && allow(ap) {
				return nil
			}
			return Check(ap.Addr(), o.Dev)
		},
	}
	tr := &http.Transport{
		Proxy:               nil, // a proxy would make the dial check meaningless
		DialContext:         dialer.DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        200,
		MaxIdleConnsPerHost: 32,
		MaxConnsPerHost:     o.MaxConnsPerHost,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}
	return &http.Client{
		Transport: &schemeGuard{rt: tr, dev: o.Dev},
		Timeout:   o.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// schemeGuard refuses plain http outside dev mode, for every request the
// client makes.
type schemeGuard struct {
	rt  http.RoundTripper
	dev bool
}

func (g *schemeGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" && !(g.dev && r.URL.Scheme == "http") {
		return nil, fmt.Errorf("%w: scheme %q (https only)", ErrBlocked, r.URL.Scheme)
	}
	return g.rt.RoundTrip(r)
}
