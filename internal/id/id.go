// Package id mints the prefixed, time-ordered identifiers of the API
// (prj_, key_, job_, whe_, whd_, evt_, acc_).
package id

import (
	"crypto/rand"
	"time"
)

// Alphabet is base62 in ASCII order, so ids sort by creation time as strings.
const Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

const (
	timeChars   = 9  // 62^9 ms ≈ 430,000 years
	randomChars = 15 // 62^15 ≈ 7.7e26 per millisecond
)

// New returns prefix followed by 24 base62 characters: nine encode the
// current Unix time in milliseconds, fifteen are random.
func New(prefix string) string {
	return NewAt(prefix, time.Now())
}

// NewAt is New with an explicit clock, for tests.
func NewAt(prefix string, t time.Time) string {
	buf := make([]byte, len(prefix)+timeChars+randomChars)
	copy(buf, prefix)
	ms := uint64(t.UnixMilli())
	for i := len(prefix) + timeChars - 1; i >= len(prefix); i-- {
		buf[i] = Alphabet[ms%62]
		ms /= 62
	}
	Random(buf[len(prefix)+timeChars:])
	return string(buf)
}

// Random fills dst with uniformly random base62 characters from crypto/rand.
// It reads random bytes a block at a time and keeps those below 248 (4 ×
// 62), each giving one character (its remainder by 62), so every
// character is equally likely; the others (8 in 256) are dropped. One
// read serves a whole id: the request path mints one per request (its
// X-Request-Id), and a crypto/rand.Int per character was 15 reads and
// 30 allocations for each.
func Random(dst []byte) {
	var block [64]byte
	for i := 0; i < len(dst); {
		// enough for what is left, nearly always in one read
		n := min(len(block), len(dst)-i+len(dst)/8+4)
		if _, err := rand.Read(block[:n]); err != nil {
			panic("id: crypto/rand failed: " + err.Error())
		}
		for _, c := range block[:n] {
			if c >= 248 {
				continue
			}
			dst[i] = Alphabet[c%62]
			if i++; i == len(dst) {
				return
			}
		}
	}
}

// Valid reports whether s is prefix followed by 24 base62 characters.
func Valid(prefix, s string) bool {
	if len(s) != len(prefix)+timeChars+randomChars || s[:len(prefix)] != prefix {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if !isBase62(s[i]) {
			return false
		}
	}
	return true
}

func isBase62(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}
