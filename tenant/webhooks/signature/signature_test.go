package signature_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/tenant/webhooks/signature"
)

func TestSignMatchesTheContract(t *testing.T) {
	at := time.Unix(1700000000, 0)
	body := []byte(`{"id":"evt_1","type":"order.paid","created":1700000000,"data":{}}`)
	h := hmac.New(sha256.New, []byte("whsec_abc"))
	h.Write([]byte("1700000000." + string(body)))
	want := "t=1700000000,v1=" + hex.EncodeToString(h.Sum(nil))
	if got := signature.Sign(at, body, "whsec_abc"); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestVerify(t *testing.T) {
	now := time.Unix(1700000000, 0)
	body := []byte(`{"id":"evt_1"}`)
	good := signature.Sign(now, body, "whsec_new")
	rotated := signature.Sign(now, body, "whsec_new", "whsec_old")
	cases := []struct {
		name   string
		secret string
		header string
		body   []byte
		now    time.Time
		want   error
	}{
		{"valid", "whsec_new", good, body, now, nil},
		{"valid at the edge of the tolerance", "whsec_new", good, body, now.Add(300 * time.Second), nil},
		{"valid from a clock slightly behind", "whsec_new", good, body, now.Add(-300 * time.Second), nil},
		{"new secret of a rotation", "whsec_new", rotated, body, now, nil},
		{"old secret of a rotation", "whsec_old", rotated, body, now, nil},
		{"later versions are ignored", "whsec_new", good + ",v2=zzzz", body, now, nil},
		{"entries in another order", "whsec_new", strings.Join(reverse(strings.Split(good, ",")), ","), body, now, nil},
		{"tampered body", "whsec_new", good, []byte(`{"id":"evt_2"}`), now, signature.ErrNoMatch},
		{"wrong secret", "whsec_other", good, body, now, signature.ErrNoMatch},
		{"stale timestamp", "whsec_new", good, body, now.Add(301 * time.Second), signature.ErrStale},
		{"timestamp in the future", "whsec_new", good, body, now.Add(-301 * time.Second), signature.ErrStale},
		{"empty header", "whsec_new", "", body, now, signature.ErrInvalidHeader},
		{"no timestamp", "whsec_new", strings.SplitN(good, ",", 2)[1], body, now, signature.ErrInvalidHeader},
		{"no v1", "whsec_new", "t=1700000000,v2=abc", body, now, signature.ErrInvalidHeader},
		{"two timestamps", "whsec_new", good + ",t=1700000001", body, now, signature.ErrInvalidHeader},
		{"non-numeric timestamp", "whsec_new", "t=abc," + strings.SplitN(good, ",", 2)[1], body, now, signature.ErrInvalidHeader},
		{"v1 not hex", "whsec_new", "t=1700000000,v1=xyz", body, now, signature.ErrInvalidHeader},
		{"re-timed header", "whsec_new", strings.Replace(good, "t=1700000000", "t=1700000001", 1), body, now, signature.ErrNoMatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := signature.Verify(c.secret, c.header, c.body, c.now)
			if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}

func reverse(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[len(s)-1-i] = v
	}
	return out
}

func FuzzVerify(f *testing.F) {
	now := time.Unix(1700000000, 0)
	f.Add(signature.Sign(now, []byte("{}"), "whsec_a"), []byte("{}"))
	f.Add("t=1,v1=00", []byte(""))
	f.Add(",,,=,t=,v1=", []byte("x"))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		err := signature.Verify("whsec_a", header, body, now)
		if err == nil && signature.Verify("whsec_b", header, body, now) == nil {
			t.Fatalf("one header verified under two secrets: %q", header)
		}
		if err == nil && !strings.Contains(header, "v1=") {
			t.Fatalf("verified without a v1 entry: %q", header)
		}
	})
}

func ExampleVerify() {
	secret := "whsec_0123456789abcdefghijklmnopqrstuv"
	body := []byte(`{"id":"evt_0A1b2C3d4E5f6G7h8I9j0K1l","type":"order.paid","created":1700000000,"data":{"id":42}}`)
	header := signature.Sign(time.Unix(1700000000, 0), body, secret) // what the service sends

	fmt.Println(signature.Verify(secret, header, body, time.Unix(1700000100, 0)))
	fmt.Println(signature.Verify(secret, header, []byte(`{"tampered":true}`), time.Unix(1700000100, 0)))
	fmt.Println(signature.Verify(secret, header, body, time.Unix(1700000400, 0)))
	// Output:
	// <nil>
	// signature: no v1 signature matches the body
	// signature: timestamp outside the tolerance
}
