package tenant

import (
	"fmt"
	"maps"
	"slices"

	"golang.org/x/text/language"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/openapi"
)

// Fallbacks are a project's locale fallback chains: for a language, the
// languages a read in it looks in next, in order ({"fr-CA": ["fr",
// "en"]}). A language named next is followed by its own chain.
type Fallbacks map[string][]string

// Limits of a project's fallback chains.
const (
	MaxFallbackLanguages = 50 // languages with a chain
	MaxFallbackChain     = 10 // languages one chain names
)

// Chain returns the languages a read in lang looks in, each once and in
// order: lang, the languages its chain names (each followed, depth
// first, by its own), then the project's default language, where every
// value is. An empty lang is the default language.
func (p *Project) Chain(lang string) []string {
	if lang == "" {
		lang = p.DefaultLanguage
	}
	chain := []string{lang}
	var follow func(string)
	follow = func(l string) {
		for _, next := range p.FallbackLanguages[l] {
			if !slices.Contains(chain, next) {
				chain = append(chain, next)
				follow(next)
			}
		}
	}
	follow(lang)
	if !slices.Contains(chain, p.DefaultLanguage) {
		chain = append(chain, p.DefaultLanguage)
	}
	return chain
}

// ChainFor is Chain for a read that may ask for no language: nil when
// lang is empty (the item served as stored).
func (p *Project) ChainFor(lang string) []string {
	if lang == "" {
		return nil
	}
	return p.Chain(lang)
}

// Pick returns the value of the first language of chain that has one
// (value reports whether lang has), and that language; the zero value
// and "" when none has.
func Pick[T any](chain []string, value func(lang string) (T, bool)) (T, string) {
	for _, l := range chain {
		if v, ok := value(l); ok {
			return v, l
		}
	}
	var zero T
	return zero, ""
}

// Provenance tells, for a read in one language, where each value that
// is not that language's came from: field → language ({"title": "fr"}).
// Nil when nothing fell back, so the response omits it.
type Provenance map[string]string

// Note records that field's value came from lang when it is not asked,
// the language the read asked for ("" from: the field has no value).
func (p *Provenance) Note(field, from, asked string) {
	if from == "" || from == asked {
		return
	}
	if *p == nil {
		*p = Provenance{}
	}
	(*p)[field] = from
}

// Localizer fills an item's text fields for a read along Chain (chain[0]
// the language asked for), noting in Fallback each that came from another
// language. Own is the language of the item's own fields (a page's or a
// product's default language; "" when all its text is in translations).
type Localizer struct {
	Chain    []string
	Own      string
	Fallback *Provenance
}

// Text sets *field to the value of the first language of the chain that
// has one: translated(lang), or *field itself at Own. Left as it is when
// no language has one.
func (l Localizer) Text(name string, field *string, translated func(lang string) string) {
	v, from := Pick(l.Chain, func(lang string) (string, bool) {
		if t := translated(lang); t != "" {
			return t, true
		}
		return *field, lang == l.Own && *field != ""
	})
	if from != "" {
		*field = v
	}
	l.Fallback.Note(name, from, l.Chain[0])
}

// Optional is Text for a field that may be absent (nil): nil stays nil
// when no language has a value.
func (l Localizer) Optional(name string, field **string, translated func(lang string) *string) {
	var v string
	if *field != nil {
		v = **field
	}
	l.Text(name, &v, func(lang string) string {
		if t := translated(lang); t != nil {
			return *t
		}
		return ""
	})
	if v != "" {
		*field = &v
	}
}

// FallbackSchema is the schema of a read's fallback field; fields names
// what its keys are (such as "title, seo.meta_title").
func FallbackSchema(fields string) openapi.M {
	return openapi.M{"type": "object", "additionalProperties": openapi.Str(), "example": openapi.M{"title": "fr"},
		"description": "For a read in a language (?lang): which " + fields + " came from another language of the project's fallback chain " +
			"(fallback_languages, then the default language), and which language; omitted when nothing fell back."}
}

// CheckFallbacks validates a project's fallback chains: every language a
// known language code (en, fr-CA, pt-BR; not a well-formed code no
// registry knows), at most MaxFallbackLanguages chains of at most
// MaxFallbackChain languages, none naming its own language, and no
// cycle (fr-CA → fr → fr-CA), which would make a chain's order
// depend on where a read starts.
func CheckFallbacks(v *httpapi.Validator, field string, f Fallbacks) {
	v.Check(len(f) <= MaxFallbackLanguages, field, fmt.Sprintf("must give chains for at most %d languages", MaxFallbackLanguages))
	for _, lang := range sortedKeys(f) {
		chain := f[lang]
		at := field + "." + lang
		v.Check(knownLanguage(lang), field, fmt.Sprintf("%q is not a known language code", lang))
		v.Check(len(chain) >= 1 && len(chain) <= MaxFallbackChain, at, fmt.Sprintf("must list 1 to %d languages", MaxFallbackChain))
		for _, next := range chain {
			v.Check(knownLanguage(next), at, fmt.Sprintf("%q is not a known language code", next))
			v.Check(next != lang, at, "must not name its own language")
		}
		v.Check(len(chain) == len(dedup(chain)), at, "must name each language once")
	}
	if v.Err() != nil {
		return
	}
	if cycle := findCycle(f); cycle != nil {
		v.Check(false, field, fmt.Sprintf("has a cycle: %v", cycle))
	}
}

// knownLanguage reports whether s is a language code (httpapi's form)
// whose every subtag the IANA registry knows.
func knownLanguage(s string) bool {
	if !httpapi.ValidLanguage(s) {
		return false
	}
	_, err := language.Parse(s)
	return err == nil
}

// findCycle returns the languages of one cycle of f's chains, the first
// repeated at the end, or nil when there is none.
func findCycle(f Fallbacks) []string {
	const (
		open = 1 // on the current path
		done = 2 // fully explored
	)
	state := map[string]int{}
	var path []string
	var visit func(string) []string
	visit = func(l string) []string {
		switch state[l] {
		case open:
			i := slices.Index(path, l)
			return append(slices.Clone(path[i:]), l)
		case done:
			return nil
		}
		state[l] = open
		path = append(path, l)
		for _, next := range f[l] {
			if c := visit(next); c != nil {
				return c
			}
		}
		path = path[:len(path)-1]
		state[l] = done
		return nil
	}
	for _, l := range sortedKeys(f) {
		if c := visit(l); c != nil {
			return c
		}
	}
	return nil
}

func sortedKeys(f Fallbacks) []string { return slices.Sorted(maps.Keys(f)) }

func dedup(list []string) []string {
	out := slices.Clone(list)
	slices.Sort(out)
	return slices.Compact(out)
}
