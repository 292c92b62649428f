package central

import (
	"strings"
	"testing"
)

func TestKeyFormat(t *testing.T) {
	for _, test := range []bool{false, true} {
		k := NewKeySecret(test)
		gotTest, ok := ParseKey(k)
		if !ok || gotTest != test {
			t.Fatalf("ParseKey(%q) = %v, %v", k, gotTest, ok)
		}
		if len(k) != len(LivePrefix)+32 {
			t.Fatalf("length %d", len(k))
		}
		m := Mask(k)
		if !strings.HasSuffix(m, "…"+k[len(k)-4:]) || !strings.HasPrefix(m, k[:9]) {
			t.Fatalf("mask %q of %q", m, k)
		}
	}
	for _, bad := range []string{"", "pln_live_", "pln_prod_" + strings.Repeat("a", 32), "pln_live_" + strings.Repeat("a", 31), "pln_live_" + strings.Repeat("-", 32)} {
		if _, ok := ParseKey(bad); ok {
			t.Fatalf("accepted %q", bad)
		}
	}
}

func FuzzParseKey(f *testing.F) {
	f.Add(NewKeySecret(false))
	f.Add("pln_test_abc")
	f.Fuzz(func(t *testing.T, s string) {
		if _, ok := ParseKey(s); ok && len(s) != 41 {
			t.Fatalf("accepted %q", s)
		}
	})
}

func TestScopes(t *testing.T) {
	for s, ok := range map[string]bool{"*": true, "content:*": true, "content:read": true, "social:connect": true, "commerce:admin": true,
		"content:admin": false, "nope:read": false, "content": false, "": false, "*:*": false, "content:read ": false} {
		if ValidScope(s) != ok {
			t.Errorf("ValidScope(%q) = %v", s, !ok)
		}
	}
	for _, c := range []struct {
		held, want []string
		ok         bool
	}{
		{[]string{"*"}, []string{"*"}, true},
		{[]string{"*"}, []string{"blog:*", "commerce:admin"}, true},
		{[]string{"content:*"}, []string{"content:read", "content:write"}, true},
		{[]string{"content:*"}, []string{"content:*"}, true},
		{[]string{"content:read", "content:write"}, []string{"content:*"}, true},
		{[]string{"content:read"}, []string{"content:*"}, false},
		{[]string{"content:*", "blog:*"}, []string{"*"}, false},
		{[]string{"project:admin"}, []string{"project:read"}, false},
	} {
		if got := Subset(c.held, c.want); got != c.ok {
			t.Errorf("Subset(%v, %v) = %v", c.held, c.want, got)
		}
	}
}
