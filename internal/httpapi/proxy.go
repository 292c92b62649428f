package httpapi

import (
	"net/http"
	"net/netip"
	"strings"
)

// OverHTTPS reports whether the client reached the server over HTTPS:
// the connection is TLS, or the direct peer is one of the trusted proxies
// (PLINTH_TRUSTED_PROXIES) and the last value of its X-Forwarded-Proto,
// the one that proxy set, is https. The header from anyone else is the
// client's own word and counts for nothing.
func OverHTTPS(r *http.Request, trusted []netip.Prefix) bool {
	if r.TLS != nil {
		return true
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !trustedPeer(ap.Addr().Unmap(), trusted) {
		return false
	}
	vals := r.Header.Values("X-Forwarded-Proto")
	if len(vals) == 0 {
		return false
	}
	last := vals[len(vals)-1]
	if i := strings.LastIndexByte(last, ','); i >= 0 {
		last = last[i+1:]
	}
	return strings.EqualFold(strings.TrimSpace(last), "https")
}

func trustedPeer(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// HSTS is the Strict-Transport-Security of answers served over HTTPS: a
// browser that saw it uses only HTTPS for the host for a year. It leaves
// subdomains alone, which may be served otherwise.
const HSTS = "max-age=31536000"

// StrictTransport sends HSTS on every answer to a request that came over
// HTTPS (OverHTTPS), and never over plain HTTP, where a browser ignores
// it and a client could have claimed HTTPS.
func StrictTransport(trusted []netip.Prefix) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if OverHTTPS(r, trusted) {
				w.Header().Set("Strict-Transport-Security", HSTS)
			}
			next.ServeHTTP(w, r)
		})
	}
}
