package oauth

import (
	"bytes"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestStateRoundTrip(t *testing.T) {
	s := NewSigner([]byte("server secret"))
	now := time.Now()
	st := State{ID: "st_1", Project: "prj_1", Platform: "twitter", RedirectURI: "https://site.test/done?x=1", Expires: now.Add(10 * time.Minute).Unix()}
	signed := s.Sign(st)
	got, err := s.Verify(signed, now)
	if err != nil || got != st {
		t.Fatalf("verify: %+v, %v", got, err)
	}
	// Expired: refused, but its authentic claims are returned.
	got, err = s.Verify(signed, now.Add(11*time.Minute))
	if !errors.Is(err, ErrStateExpired) || got.RedirectURI != st.RedirectURI {
		t.Fatalf("expired: %+v, %v", got, err)
	}
	// Another server secret, a changed claim, a damaged signature: invalid.
	if _, err := NewSigner([]byte("other secret")).Verify(signed, now); !errors.Is(err, ErrStateInvalid) {
		t.Fatalf("other key: %v", err)
	}
	payload, sig, _ := strings.Cut(signed, ".")
	forged := State{ID: "st_1", Project: "prj_2", Platform: "twitter", RedirectURI: st.RedirectURI, Expires: st.Expires}
	other := strings.SplitN(s.Sign(forged), ".", 2)[0]
	// Every bit of the MAC flipped: damaged by construction (replacing its
	// last letters at random kept it whole one time in 1,024).
	mac, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		t.Fatal(err)
	}
	for i := range mac {
		mac[i] ^= 0xff
	}
	damaged := payload + "." + base64.RawURLEncoding.EncodeToString(mac)
	for _, bad := range []string{other + "." + sig, damaged, payload, "", "a.b.c", "..."} {
		if _, err := s.Verify(bad, now); !errors.Is(err, ErrStateInvalid) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func TestSealer(t *testing.T) {
	s := NewSealer([]byte("server secret"))
	plain := []byte(`{"access_token":"at-123","refresh_token":"rt-456"}`)
	aad := []byte("project:acc_1")
	sealed := s.Seal(plain, aad)
	if bytes.Contains(sealed, []byte("at-123")) || bytes.Contains(sealed, []byte("rt-456")) {
		t.Fatal("the sealed value shows the plaintext")
	}
	if again := s.Seal(plain, aad); bytes.Equal(again, sealed) {
		t.Fatal("two seals of one value must differ (random nonce)")
	}
	got, err := s.Open(sealed, aad)
	if err != nil || !bytes.Equal(got, plain) {
		t.Fatalf("open: %s, %v", got, err)
	}
	if _, err := s.Open(sealed, []byte("project:acc_2")); !errors.Is(err, ErrUnseal) {
		t.Fatalf("other owner: %v", err)
	}
	if _, err := NewSealer([]byte("other secret")).Open(sealed, aad); !errors.Is(err, ErrUnseal) {
		t.Fatalf("other key: %v", err)
	}
	damaged := append([]byte(nil), sealed...)
	damaged[len(damaged)-1] ^= 1
	if _, err := s.Open(damaged, aad); !errors.Is(err, ErrUnseal) {
		t.Fatalf("damaged: %v", err)
	}
	if _, err := s.Open(sealed[:5], aad); !errors.Is(err, ErrUnseal) {
		t.Fatalf("short: %v", err)
	}
	// The state key and the sealing key differ even for one secret.
	if bytes.Equal(deriveKey([]byte("k"), "oauth state v1"), deriveKey([]byte("k"), "oauth token seal v1")) {
		t.Fatal("keys of two purposes are equal")
	}
}

func FuzzVerify(f *testing.F) {
	s := NewSigner([]byte("secret"))
	f.Add(s.Sign(State{ID: "a", Project: "b", Expires: 1 << 40}))
	f.Add("x.y")
	f.Fuzz(func(t *testing.T, in string) {
		st, err := s.Verify(in, time.Unix(0, 0))
		if err == nil && (st.ID == "" || st.Project == "") {
			t.Fatalf("accepted %q as %+v", in, st)
		}
	})
}
