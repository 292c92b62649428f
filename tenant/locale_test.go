package tenant

import (
	"reflect"
	"testing"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

func TestChain(t *testing.T) {
	p := &Project{DefaultLanguage: "en", FallbackLanguages: Fallbacks{
		"fr-CA": {"fr", "en"},
		"fr":    {"de"},
		"pt-BR": {"pt"},
	}}
	for lang, want := range map[string][]string{
		"fr-CA": {"fr-CA", "fr", "de", "en"}, // fr's own chain, then en once
		"pt-BR": {"pt-BR", "pt", "en"},       // the default ends every chain
		"en":    {"en"},
		"":      {"en"},
		"es":    {"es", "en"},
	} {
		if got := p.Chain(lang); !reflect.DeepEqual(got, want) {
			t.Errorf("Chain(%q) = %v, want %v", lang, got, want)
		}
	}
}

func TestPickAndProvenance(t *testing.T) {
	values := map[string]string{"fr": "Bonjour", "en": "Hello"}
	v, from := Pick([]string{"fr-CA", "fr", "en"}, func(l string) (string, bool) { v, ok := values[l]; return v, ok })
	if v != "Bonjour" || from != "fr" {
		t.Fatalf("Pick = %q from %q", v, from)
	}
	var p Provenance
	p.Note("title", "fr-CA", "fr-CA") // its own language: nothing fell back
	p.Note("seo", "", "fr-CA")        // no value anywhere: nothing to say
	if p != nil {
		t.Fatalf("provenance without a fallback = %v, want nil (omitted)", p)
	}
	p.Note("title", from, "fr-CA")
	if !reflect.DeepEqual(p, Provenance{"title": "fr"}) {
		t.Fatalf("provenance = %v", p)
	}
}

func TestCheckFallbacks(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Fallbacks
		ok   bool
	}{
		{"chain", Fallbacks{"fr-CA": {"fr", "en"}, "pt-BR": {"pt"}}, true},
		{"none", Fallbacks{}, true},
		{"self", Fallbacks{"fr": {"fr"}}, false},
		{"cycle", Fallbacks{"fr-CA": {"fr"}, "fr": {"fr-BE"}, "fr-BE": {"fr-CA"}}, false},
		{"two-cycle", Fallbacks{"fr-CA": {"fr"}, "fr": {"fr-CA"}}, false},
		{"unknown language", Fallbacks{"fr-CA": {"zz"}}, false},
		{"unknown region", Fallbacks{"fr-AB": {"fr"}}, false},
		{"not a code", Fallbacks{"fr-CA": {"French"}}, false},
		{"empty chain", Fallbacks{"fr-CA": {}}, false},
		{"repeat", Fallbacks{"fr-CA": {"fr", "fr"}}, false},
		{"diamond, no cycle", Fallbacks{"fr-CA": {"fr", "en"}, "fr": {"en"}}, true},
	} {
		var v httpapi.Validator
		CheckFallbacks(&v, "fallback_languages", tc.f)
		if (v.Err() == nil) != tc.ok {
			t.Errorf("%s: CheckFallbacks(%v) = %v, want ok %v", tc.name, tc.f, v.Err(), tc.ok)
		}
	}
}

func TestLocalizer(t *testing.T) {
	// An item whose own fields are English, with French and German
	// translations; read in fr-CA along fr-CA → fr → de → en.
	translations := map[string]map[string]string{
		"fr": {"title": "Bonjour"},
		"de": {"title": "Hallo", "summary": "Kurz"},
	}
	var fb Provenance
	l := Localizer{Chain: []string{"fr-CA", "fr", "de", "en"}, Own: "en", Fallback: &fb}
	title, summary, body := "Hello", "Short", "Body"
	in := func(field string) func(string) string {
		return func(lang string) string { return translations[lang][field] }
	}
	l.Text("title", &title, in("title"))
	l.Text("summary", &summary, in("summary"))
	l.Text("body", &body, in("body"))
	var image *string
	l.Optional("image", &image, func(string) *string { return nil })
	if title != "Bonjour" || summary != "Kurz" || body != "Body" || image != nil {
		t.Errorf("title %q, summary %q, body %q, image %v", title, summary, body, image)
	}
	if want := (Provenance{"title": "fr", "summary": "de", "body": "en"}); !reflect.DeepEqual(fb, want) {
		t.Errorf("fallback %v, want %v", fb, want)
	}

	// Own "": the item's fields are only its translations' (a blog post):
	// a field no language has stays as it was, and is not noted.
	fb = nil
	l = Localizer{Chain: []string{"fr", "en"}, Fallback: &fb}
	body = ""
	l.Text("body", &body, in("body"))
	l.Text("title", &title, in("title"))
	if body != "" || title != "Bonjour" || fb != nil {
		t.Errorf("body %q, title %q, fallback %v", body, title, fb)
	}
}
