package outbox

import (
	"strings"
	"testing"
	"time"
)

func TestSecretsSealOpen(t *testing.T) {
	s := NewSecrets([]byte("server-secret"))
	secret := NewSigningSecret()
	if !strings.HasPrefix(secret, "whsec_") || len(secret) != 38 || secret == NewSigningSecret() {
		t.Fatalf("secret %q", secret)
	}
	sealed := s.Seal("whe_1", secret)
	if strings.Contains(string(sealed), secret[6:]) {
		t.Fatal("sealed secret holds the plaintext")
	}
	if got, err := s.Open("whe_1", sealed); err != nil || got != secret {
		t.Fatalf("Open = %q, %v", got, err)
	}
	if string(s.Seal("whe_1", secret)) == string(sealed) {
		t.Fatal("two seals are identical: the nonce is not random")
	}
	if _, err := s.Open("whe_2", sealed); err != ErrSealed {
		t.Fatalf("opened under another endpoint id: %v", err)
	}
	if _, err := NewSecrets([]byte("other")).Open("whe_1", sealed); err != ErrSealed {
		t.Fatalf("opened under another server secret: %v", err)
	}
	if _, err := s.Open("whe_1", sealed[:5]); err != ErrSealed {
		t.Fatalf("short: %v", err)
	}
}

func TestLimits(t *testing.T) {
	l := newLimits(2, 10*time.Second)
	a, b := l.acquire("e"), l.acquire("e")
	if a == nil || b == nil || l.acquire("e") != nil {
		t.Fatal("cap of 2 not enforced")
	}
	if l.acquire("other") == nil {
		t.Fatal("endpoints share a cap")
	}
	// a full endpoint's backoff grows with how long its requests have run
	if d := l.backoff("e"); d < 37*time.Millisecond || d > 63*time.Millisecond {
		t.Fatalf("fresh backoff %s", d)
	}
	a.start = time.Now().Add(-8 * time.Second)
	if d := l.backoff("e"); d < 3*time.Second || d > 5*time.Second {
		t.Fatalf("backoff with a 8s request in flight: %s", d)
	}
	a.release(20 * time.Second)
	if l.acquire("e") == nil {
		t.Fatal("release did not free a slot")
	}
	if d := l.backoff("e"); d > 10*time.Second {
		t.Fatalf("backoff above the ceiling: %s", d)
	}
}
