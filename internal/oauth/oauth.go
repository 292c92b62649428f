// Package oauth holds the server-side pieces of OAuth 2.0 connections that
// carry no business meaning: the signed, expiring `state` a flow starts
// with, and the sealing (AES-GCM) of tokens kept at rest. Both keys are
// derived from the server secret with HKDF, one per purpose, so neither
// can stand in for the other or for the secret's other uses.
package oauth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// deriveKey derives a 32-byte key for purpose from the server secret.
func deriveKey(secret []byte, purpose string) []byte {
	k, err := hkdf.Key(sha256.New, secret, nil, "plinth "+purpose, 32)
	if err != nil { // only for lengths sha256 cannot reach
		panic("oauth: hkdf: " + err.Error())
	}
	return k
}

// State is what a signed state carries from the start of a flow to its
// callback.
type State struct {
	// ID names the stored half of the flow (the PKCE verifier, the
	// single-use mark).
	ID          string `json:"sid"`
	Project     string `json:"pid"`
	Platform    string `json:"plt"`
	RedirectURI string `json:"ru"`
	// Expires is in Unix seconds.
	Expires int64 `json:"exp"`
}

// Errors of VerifyState.
var (
	// ErrStateInvalid: not a state this server signed (or tampered with).
	ErrStateInvalid = errors.New("oauth: the state is not valid")
	// ErrStateExpired: a state this server signed, past its expiry.
	ErrStateExpired = errors.New("oauth: the state has expired")
)

// Signer signs and verifies states under a key derived from the server
// secret.
type Signer struct{ key []byte }

// NewSigner returns the state signer of the server secret.
func NewSigner(secret []byte) *Signer { return &Signer{key: deriveKey(secret, "oauth state v1")} }

// Sign returns st as an opaque URL-safe string: the claims, a dot, and
// their HMAC-SHA256.
func (s *Signer) Sign(st State) string {
	payload, _ := json.Marshal(st) // a struct of strings and an int cannot fail
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(p))
}

func (s *Signer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Verify checks the signature and expiry of a signed state. An expired
// state is returned with ErrStateExpired: its claims are authentic (its
// redirect_uri can be used to report the failure), but it must not be
// honoured.
func (s *Signer) Verify(signed string, now time.Time) (State, error) {
	p, sig, ok := strings.Cut(signed, ".")
	if !ok || len(signed) > 4096 {
		return State{}, ErrStateInvalid
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, s.mac(p)) {
		return State{}, ErrStateInvalid
	}
	payload, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil {
		return State{}, ErrStateInvalid
	}
	var st State
	if err := json.Unmarshal(payload, &st); err != nil || st.ID == "" || st.Project == "" {
		return State{}, ErrStateInvalid
	}
	if now.Unix() >= st.Expires {
		return st, ErrStateExpired
	}
	return st, nil
}

// Sealer encrypts secrets kept at rest (tokens, PKCE verifiers) with
// AES-256-GCM under a key derived from the server secret. A sealed value
// is a version byte, the 12-byte nonce and the ciphertext with its tag.
type Sealer struct{ aead cipher.AEAD }

const sealVersion = 1

// NewSealer returns the sealer of the server secret for OAuth tokens.
func NewSealer(secret []byte) *Sealer { return NewPurposeSealer(secret, "oauth token seal v1") }

// NewPurposeSealer returns a sealer of the server secret whose key is
// derived for purpose alone: what one purpose sealed, another's does not
// open (a shard's URL, say, against an OAuth token).
func NewPurposeSealer(secret []byte, purpose string) *Sealer {
	block, err := aes.NewCipher(deriveKey(secret, purpose))
	if err != nil {
		panic("oauth: aes: " + err.Error()) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic("oauth: gcm: " + err.Error())
	}
	return &Sealer{aead: aead}
}

// Seal encrypts plaintext. aad (associated data) binds the ciphertext to
// its owner, e.g. the row it is stored in: Open with another aad fails, so
// a sealed value copied to another row is useless.
func (s *Sealer) Seal(plaintext, aad []byte) []byte {
	out := make([]byte, 1+s.aead.NonceSize(), 1+s.aead.NonceSize()+len(plaintext)+s.aead.Overhead())
	out[0] = sealVersion
	if _, err := rand.Read(out[1:]); err != nil {
		panic("oauth: crypto/rand: " + err.Error())
	}
	return s.aead.Seal(out, out[1:], plaintext, aad)
}

// ErrUnseal is returned for a value that does not open under this key and aad.
var ErrUnseal = errors.New("oauth: the sealed value does not open (other key, other owner, or damaged)")

// Open decrypts a value made by Seal with the same aad.
func (s *Sealer) Open(sealed, aad []byte) ([]byte, error) {
	n := s.aead.NonceSize()
	if len(sealed) < 1+n+s.aead.Overhead() || sealed[0] != sealVersion {
		return nil, ErrUnseal
	}
	out, err := s.aead.Open(nil, sealed[1:1+n], sealed[1+n:], aad)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnseal, err)
	}
	return out, nil
}
