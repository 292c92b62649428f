package httpapi

import (
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// ValidText reports whether s is UTF-8 text without NUL characters: what
// PostgreSQL stores in text and jsonb. Every value a request carries (a
// path, a query value, a cursor, a JSON string) must be.
func ValidText(s string) bool {
	return utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// Limits of an email address (RFC 5321), in characters.
const (
	MaxEmail      = 254 // the path
	MaxEmailLocal = 64  // the local part
)

// ValidEmail reports whether s is a bare email address (no display name,
// no comments) whose domain is a dotted host name: what a person can
// actually be written to. Every pillar and the control plane check
// addresses with it.
func ValidEmail(s string) bool {
	if s == "" || utf8.RuneCountInString(s) > MaxEmail || strings.ContainsAny(s, " \t\r\n\x00") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Name != "" || a.Address != s {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	local, domain := s[:at], s[at+1:]
	if local == "" || utf8.RuneCountInString(local) > MaxEmailLocal {
		return false
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range l {
			if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80) {
				return false
			}
		}
	}
	tld := labels[len(labels)-1]
	return strings.Trim(tld, "0123456789") != "" // not a bare IP address
}

var langRe = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$`)

// ValidLanguage reports whether s is a language code such as en or pt-BR.
func ValidLanguage(s string) bool { return langRe.MatchString(s) }

// ValidTimezone reports whether s is an IANA zone name.
func ValidTimezone(s string) bool {
	if s == "" || s == "Local" {
		return false
	}
	_, err := time.LoadLocation(s)
	return err == nil
}
