package central

import (
	"crypto/hmac"
	"crypto/sha256"
	"hash"
	"strings"
	"sync"

	"github.com/plinth-dev/plinth/internal/id"
)

// Key prefixes: product, then environment.
const (
	LivePrefix = "pln_live_"
	TestPrefix = "pln_test_"
	secretLen  = 32
)

// NewKeySecret mints a key string: prefix then 32 base62 characters.
func NewKeySecret(test bool) string {
	p := LivePrefix
	if test {
		p = TestPrefix
	}
	b := make([]byte, secretLen)
	id.Random(b)
	return p + string(b)
}

// ParseKey checks the format of a presented key and reports its environment.
func ParseKey(s string) (test bool, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(s, LivePrefix):
		rest = s[len(LivePrefix):]
	case strings.HasPrefix(s, TestPrefix):
		rest, test = s[len(TestPrefix):], true
	default:
		return false, false
	}
	if len(rest) != secretLen {
		return false, false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z') {
			return false, false
		}
	}
	return test, true
}

// Mask renders a key as prefix, an ellipsis and its last four characters.
func Mask(s string) string {
	p := LivePrefix
	if strings.HasPrefix(s, TestPrefix) {
		p = TestPrefix
	}
	return p + "…" + s[len(s)-4:]
}

// HashKey is the stored form of a key: HMAC-SHA256 under the server secret.
func HashKey(secret []byte, key string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(key))
	return m.Sum(nil)
}

// keyHasher computes HashKey without allocating, for the key lookup of
// every request: the HMAC keyed once, reset per key, with buffers of its
// own. keyHashers pools them (an HMAC is not safe for concurrent use).
type keyHasher struct {
	m   hash.Hash
	in  []byte
	sum []byte
}

// hash returns HashKey(secret, key), valid until h is used again.
func (h *keyHasher) hash(key string) []byte {
	h.m.Reset()
	h.in = append(h.in[:0], key...)
	h.m.Write(h.in)
	h.sum = h.m.Sum(h.sum[:0])
	return h.sum
}

func newKeyHashers(secret []byte) *sync.Pool {
	return &sync.Pool{New: func() any {
		return &keyHasher{m: hmac.New(sha256.New, secret), in: make([]byte, 0, 64), sum: make([]byte, 0, sha256.Size)}
	}}
}
