// Package signature signs and verifies Plinth webhook deliveries. A
// receiver calls Verify with its endpoint's signing secret, the
// X-Service-Signature header and the raw request body:
//
//	body, _ := io.ReadAll(r.Body)
//	err := signature.Verify(secret, r.Header.Get("X-Service-Signature"), body, time.Now())
//
// The header is "t=<unix seconds>,v1=<hex>", where v1 is the lowercase hex
// HMAC-SHA256, keyed by the signing secret, of "<t>.<raw body>". While a
// rotated secret is still valid the header carries one v1 entry per
// secret; later versions may append entries such as v2, which Verify
// ignores.
package signature

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"
)

// Header is the name of the HTTP header carrying the signature.
const Header = "X-Service-Signature"

// Tolerance is how far the signed timestamp may be from the receiver's
// clock, either way.
const Tolerance = 300 * time.Second

// Errors returned by Verify; test them with errors.Is.
var (
	// ErrInvalidHeader: the header is empty or has no t or no v1 entry.
	ErrInvalidHeader = errors.New("signature: malformed X-Service-Signature header")
	// ErrNoMatch: no v1 entry matches the body under the secret.
	ErrNoMatch = errors.New("signature: no v1 signature matches the body")
	// ErrStale: the timestamp is more than Tolerance from now.
	ErrStale = errors.New("signature: timestamp outside the tolerance")
)

// Sign returns the header value for body sent at t, with one v1 entry per
// secret, in the order given.
func Sign(t time.Time, body []byte, secrets ...string) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(mac(s, ts, body)))
	}
	return b.String()
}

// Verify checks that header signs body under secret and that its timestamp
// is within Tolerance of now. Every v1 entry is compared in constant time.
func Verify(secret, header string, body []byte, now time.Time) error {
	var (
		ts   string
		sigs [][]byte
	)
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case "t":
			if ts != "" {
				return ErrInvalidHeader
			}
			ts = v
		case "v1":
			if sig, err := hex.DecodeString(v); err == nil && len(sig) == sha256.Size {
				sigs = append(sigs, sig)
			}
		}
	}
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrInvalidHeader
	}
	want := mac(secret, ts, body)
	match := 0
	for _, sig := range sigs {
		match |= subtleEqual(sig, want)
	}
	if match == 0 {
		return ErrNoMatch
	}
	if d := now.Sub(time.Unix(t, 0)); d > Tolerance || d < -Tolerance {
		return ErrStale
	}
	return nil
}

func mac(secret, ts string, body []byte) []byte {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte{'.'})
	h.Write(body)
	return h.Sum(nil)
}

// subtleEqual is hmac.Equal as 0 or 1, so every entry is compared and the
// loop takes the same time whichever entry matches.
func subtleEqual(a, b []byte) int {
	if hmac.Equal(a, b) {
		return 1
	}
	return 0
}
