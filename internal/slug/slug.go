// Package slug derives URL slugs from names and makes them unique.
package slug

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// Pattern is the slug syntax the API accepts (the gallery pattern of the contract).
var Pattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,254}$`)

// Valid reports whether s matches Pattern.
func Valid(s string) bool { return Pattern.MatchString(s) }

// Make derives a slug from a name: accents folded, lowercase, runs of other
// characters as one hyphen, at most 200 characters; "item" if nothing is left.
func Make(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range norm.NFKD.String(name) {
		switch {
		case unicode.Is(unicode.Mn, r):
			continue
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToLower(r))
			dash = false
		default:
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
				dash = true
			}
		}
		if b.Len() >= 200 {
			break
		}
	}
	s := strings.Trim(b.String(), "-")
	if s == "" {
		return "item"
	}
	return s
}

// Unique returns base, or base-2, base-3, … , the first one taken reports free.
func Unique(ctx context.Context, base string, taken func(ctx context.Context, candidate string) (bool, error)) (string, error) {
	candidate := base
	for n := 2; ; n++ {
		t, err := taken(ctx, candidate)
		if err != nil {
			return "", err
		}
		if !t {
			return candidate, nil
		}
		suffix := "-" + strconv.Itoa(n)
		b := base
		if len(b)+len(suffix) > 255 {
			b = b[:255-len(suffix)]
		}
		candidate = b + suffix
	}
}
