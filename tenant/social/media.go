package social

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// errBlockedAddress refuses a media URL that leads to a non-public address.
var errBlockedAddress = errors.New("the media URL leads to an address that is not public")

// publicAddress reports whether a user-supplied media URL may be fetched
// from ip: public unicast only (loopback too in dev mode).
func publicAddress(ip netip.Addr, dev bool) bool {
	ip = ip.Unmap()
	if dev && ip.IsLoopback() {
		return true
	}
	return ip.IsGlobalUnicast() && !ip.IsPrivate() && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() &&
		!netip.MustParsePrefix("100.64.0.0/10").Contains(ip) && !netip.MustParsePrefix("64:ff9b::/96").Contains(ip) &&
		!netip.MustParsePrefix("2002::/16").Contains(ip)
}

// MediaClient fetches user-supplied media URLs (a video uploaded to
// YouTube): the address is checked when the connection is made, after
// DNS resolution, so no name can lead the server to itself or its
// network; no proxy is used and redirects are not followed.
func MediaClient(dev bool, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Timeout: 10 * time.Second,
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !publicAddress(ap.Addr(), dev) {
				return fmt.Errorf("%w (%s)", errBlockedAddress, address)
			}
			return nil
		},
	}
	return &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{Proxy: nil, DialContext: dialer.DialContext, TLSHandshakeTimeout: 10 * time.Second, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
