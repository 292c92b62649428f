package content

import "testing"

func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"a", "home.title", "A", ".x", "a..b", "a b", "é", "", "x-_."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ValidKey(s) != KeyPattern.MatchString(s) {
			t.Fatalf("ValidKey(%q) = %v, the pattern says %v", s, ValidKey(s), KeyPattern.MatchString(s))
		}
	})
}
