package outbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"

	"github.com/plinth-dev/plinth/internal/id"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// NewSigningSecret returns a fresh signing secret: whsec_ and 32 random
// base62 characters (190 bits).
func NewSigningSecret() string {
	b := make([]byte, len(SecretPrefix)+32)
	copy(b, SecretPrefix)
	id.Random(b[len(SecretPrefix):])
	return string(b)
}

// Secrets seals signing secrets for storage. They must stay usable as HMAC
// keys, so they are encrypted (AES-256-GCM under a key derived from the
// server secret), not hashed. The endpoint id is the associated data, so a
// sealed secret copied to another endpoint's row does not open.
type Secrets struct{ aead cipher.AEAD }

// NewSecrets derives the sealing key from the server secret.
func NewSecrets(serverSecret []byte) *Secrets {
	m := hmac.New(sha256.New, serverSecret)
	m.Write([]byte("plinth/webhook-signing-secret/v1"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return &Secrets{aead: aead}
}

// Seal encrypts secret for the endpoint: nonce || ciphertext.
func (s *Secrets) Seal(endpointID, secret string) []byte {
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(secret)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		panic("webhook: crypto/rand failed: " + err.Error())
	}
	return s.aead.Seal(nonce, nonce, []byte(secret), []byte(endpointID))
}

// ErrSealed is returned when a sealed secret does not open (another server
// secret, another endpoint, or corruption).
var ErrSealed = errors.New("webhook: signing secret does not decrypt under the server secret")

// Open decrypts a sealed secret of the endpoint.
func (s *Secrets) Open(endpointID string, sealed []byte) (string, error) {
	n := s.aead.NonceSize()
	if len(sealed) < n {
		return "", ErrSealed
	}
	plain, err := s.aead.Open(nil, sealed[:n], sealed[n:], []byte(endpointID))
	if err != nil {
		return "", ErrSealed
	}
	return string(plain), nil
}
