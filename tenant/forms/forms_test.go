package forms

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		"":            "",
		"ann":         "ann",
		"=1+1":        "'=1+1",
		"+1":          "'+1",
		"-1":          "'-1",
		"@SUM(A1)":    "'@SUM(A1)",
		"\tx":         "'\tx",
		"\rx":         "'\rx",
		"a=b":         "a=b",
		"'quoted":     "'quoted",
		"ann@x.com":   "ann@x.com",
		" =not first": " =not first",
	} {
		if got := csvCell(in); got != want {
			t.Errorf("csvCell(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWantsCSV(t *testing.T) {
	for accept, want := range map[string]bool{
		"":                                  false,
		"*/*":                               false,
		"text/*":                            false,
		"application/json":                  false,
		"text/csv":                          true,
		"TEXT/CSV":                          true,
		"text/csv; charset=utf-8":           true,
		"text/csv;q=0":                      false,
		"application/json, text/csv":        true,
		"text/csv;q=0.5, application/json":  false,
		"application/json;q=0.2, text/csv":  true,
		"text/html,application/xhtml+xml,*": false,
	} {
		r, _ := http.NewRequest("GET", "/", nil)
		if accept != "" {
			r.Header.Set("Accept", accept)
		}
		if got := wantsCSV(r); got != want {
			t.Errorf("wantsCSV(%q) = %v, want %v", accept, got, want)
		}
	}
}

func FuzzCheckFields(f *testing.F) {
	f.Add(`{"a":"b","n":1.5e3,"t":true,"z":null,"l":["x",2]}`)
	f.Add(`{"a":{"b":1}}`)
	f.Add(`{"a":"\u0000"}`)
	f.Fuzz(func(t *testing.T, body string) {
		var in map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &in) != nil {
			return
		}
		var v httpapi.Validator
		out := checkFields(&v, in)
		if v.Err() != nil {
			return
		}
		// what passes is a flat JSON object PostgreSQL's jsonb accepts
		var back map[string]any
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("checkFields gave invalid JSON %s: %v", out, err)
		}
		if len(back) != len(in) || len(back) > MaxFields || strings.Contains(string(out), `\u0000`) {
			t.Fatalf("checkFields let through %s", out)
		}
	})
}
