package outbox

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/plinth-dev/plinth/internal/ssrf"
)

// Reasons an attempt failed: what a delivery's last_error holds and the
// API shows (docs/api/webhooks.md). They are generic on purpose: the
// transport's own error names the server's resolver, its addresses and
// what the SSRF guard saw, which is the operator's business, so that
// detail goes to the log with the delivery id and never to the row.
const (
	ReasonDNS          = "dns_failure"             // the endpoint's host did not resolve
	ReasonRefused      = "connection_refused"      // nothing listens at the address
	ReasonReset        = "connection_reset"        // the connection was cut before an answer
	ReasonTLS          = "tls_error"               // handshake or certificate refused
	ReasonTimeout      = "timeout"                 // no answer within PLINTH_WEBHOOK_TIMEOUT
	ReasonBlocked      = "address_not_allowed"     // the SSRF guard refused the address dialled
	ReasonInvalidURL   = "invalid_url"             // the stored URL cannot be requested
	ReasonDisabled     = "endpoint_disabled"       // the endpoint was disabled before the attempt
	ReasonSecret       = "signing_secret_unusable" // the server secret changed: rotate and redeliver
	ReasonNoCredits    = "insufficient_credits"    // the balance could not pay; nothing was sent
	ReasonOther        = "other"                   // any other transport failure
	reasonStatusPrefix = "http_status "            // followed by the receiver's non-2xx status
)

// ReasonPattern matches every reason and nothing else: the OpenAPI
// description holds last_error to it, so a test that shows a transport's
// message fails the contract check.
var ReasonPattern = "^(" + strings.Join([]string{ReasonDNS, ReasonRefused, ReasonReset, ReasonTLS, ReasonTimeout, ReasonBlocked,
	ReasonInvalidURL, ReasonDisabled, ReasonSecret, ReasonNoCredits, ReasonOther}, "|") + "|" + reasonStatusPrefix + "[0-9]{3})$"

// statusReason is the reason of a non-2xx answer, e.g. "http_status 503".
func statusReason(code int) string { return reasonStatusPrefix + strconv.Itoa(code) }

// transportReason classifies the error of a request that got no answer.
// The order matters: the SSRF guard's refusal and a DNS failure come
// wrapped in the dial's *net.OpError, and a timeout may look like several
// things at once.
func transportReason(err error) string {
	var (
		dns    *net.DNSError
		cert   *tls.CertificateVerificationError
		header tls.RecordHeaderError
		ua     x509.UnknownAuthorityError
		host   x509.HostnameError
		inv    x509.CertificateInvalidError
		ne     net.Error
	)
	switch {
	case errors.Is(err, ssrf.ErrBlocked):
		return ReasonBlocked
	case errors.As(err, &dns):
		return ReasonDNS
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		// net/http's sentinel for a pooled connection the receiver closed
		// (a receiver that cuts connections on accept causes it) is not
		// exported.
		strings.Contains(err.Error(), "server closed idle connection"):
		return ReasonReset
	case errors.As(err, &cert), errors.As(err, &header), errors.As(err, &ua), errors.As(err, &host), errors.As(err, &inv),
		// Neither an alert from the receiver ("remote error: tls: …") nor
		// net/http's verdict on a plain HTTP server behind an https URL
		// has an exported type.
		strings.Contains(err.Error(), "tls: "), strings.Contains(err.Error(), "HTTP response to HTTPS client"):
		return ReasonTLS
	}
	return ReasonOther
}
