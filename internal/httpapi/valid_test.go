package httpapi_test

import (
	"net/mail"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

func FuzzValidEmail(f *testing.F) {
	for _, s := range []string{"ann@example.com", "a@b.c", "Ann <a@b.co>", "\"a b\"@example.com", "a@[1.2.3.4]", "zoë@exämple.de", "a@b..c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !httpapi.ValidEmail(s) {
			return
		}
		// whatever is accepted is one bare address the mail package agrees on
		a, err := mail.ParseAddress(s)
		if err != nil || a.Address != s || a.Name != "" {
			t.Fatalf("accepted %q, which mail.ParseAddress reads as %v, %v", s, a, err)
		}
		if strings.ContainsAny(s, " \t\r\n\x00") || !strings.Contains(s[strings.LastIndexByte(s, '@'):], ".") {
			t.Fatalf("accepted %q", s)
		}
	})
}
