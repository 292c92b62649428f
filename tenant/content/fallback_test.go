package content_test

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// chainFrCA gives p the chain fr-CA → fr → en (en is the default).
func chainFrCA(t *testing.T, env *apitest.Env, p *apitest.Project) {
	t.Helper()
	got := env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"fallback_languages": map[string]any{"fr-CA": []string{"fr", "en"}}}).
		Expect(t, 200).JSON(t)
	if !reflect.DeepEqual(got["fallback_languages"], map[string]any{"fr-CA": []any{"fr", "en"}}) {
		t.Fatalf("fallback_languages = %v", got["fallback_languages"])
	}
}

// TestFallbackChainContentKeys: a key missing in fr-CA serves fr, with
// its provenance, on every read of keys, never an empty string while a
// language of the chain has a value; missing lists only keys no language
// of the chain has.
func TestFallbackChainContentKeys(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	chainFrCA(t, env, p)
	env.Do("PUT", "/v1/content", p.Key, map[string]any{"updates": []any{
		map[string]any{"key": "hero.title", "value": "Welcome", "lang": "en"},
		map[string]any{"key": "hero.title", "value": "Bienvenue", "lang": "fr"},
		map[string]any{"key": "hero.cta", "value": "Order", "lang": "en"},
		map[string]any{"key": "hero.note", "value": "Eh", "lang": "fr-CA"},
		map[string]any{"key": "hero.note", "value": "Note", "lang": "en"},
		map[string]any{"key": "hero.blank", "value": "", "lang": "fr-CA"},
		map[string]any{"key": "hero.blank", "value": "Merci", "lang": "fr"},
	}}).Expect(t, 200)

	for _, tc := range []struct {
		key, value, lang string
		fallback         any
	}{
		{"hero.title", "Bienvenue", "fr", map[string]any{"value": "fr"}},
		{"hero.cta", "Order", "en", map[string]any{"value": "en"}},
		{"hero.note", "Eh", "fr-CA", nil},
		{"hero.blank", "Merci", "fr", map[string]any{"value": "fr"}}, // "" in fr-CA is no value while fr has one
	} {
		for _, path := range []string{"/v1/content/" + tc.key + "?lang=fr-CA"} {
			got := env.Do("GET", path, p.Key, nil).Expect(t, 200).JSON(t)
			pub := public(env, p, "/v1/public/content/"+tc.key+"?lang=fr-CA").Expect(t, 200).JSON(t)
			for who, k := range map[string]map[string]any{"authenticated": got, "public": pub} {
				if k["value"] != tc.value || k["lang"] != tc.lang || !reflect.DeepEqual(k["fallback"], tc.fallback) {
					t.Errorf("%s %s in fr-CA: value %v lang %v fallback %v; want %q %q %v", who, tc.key, k["value"], k["lang"], k["fallback"], tc.value, tc.lang, tc.fallback)
				}
			}
		}
	}
	// In its own language nothing falls back: no fallback field at all.
	if k := env.Do("GET", "/v1/content/hero.title?lang=en", p.Key, nil).Expect(t, 200).JSON(t); k["value"] != "Welcome" || k["fallback"] != nil {
		t.Fatalf("en read: %v", k)
	}

	keys := "hero.title,hero.cta,hero.note,hero.blank,hero.none"
	wantData := map[string]any{"hero.title": "Bienvenue", "hero.cta": "Order", "hero.note": "Eh", "hero.blank": "Merci"}
	wantFallback := map[string]any{"hero.title": "fr", "hero.cta": "en", "hero.blank": "fr"}
	for who, b := range map[string]map[string]any{
		"authenticated": env.Do("GET", "/v1/content/bulk?lang=fr-CA&keys="+keys, p.Key, nil).Expect(t, 200).JSON(t),
		"public":        public(env, p, "/v1/public/content/bulk?lang=fr-CA&keys="+keys).Expect(t, 200).JSON(t),
	} {
		if !reflect.DeepEqual(b["data"], wantData) || !reflect.DeepEqual(b["fallback"], wantFallback) ||
			!reflect.DeepEqual(b["missing"], []any{"hero.none"}) || b["lang"] != "fr-CA" {
			t.Errorf("%s bulk in fr-CA: data %v fallback %v missing %v lang %v", who, b["data"], b["fallback"], b["missing"], b["lang"])
		}
	}
	// A language without a chain falls back to the default alone.
	b := public(env, p, "/v1/public/content/bulk?lang=de&keys=hero.title").Expect(t, 200).JSON(t)
	if !reflect.DeepEqual(b["data"], map[string]any{"hero.title": "Welcome"}) || !reflect.DeepEqual(b["fallback"], map[string]any{"hero.title": "en"}) {
		t.Fatalf("de bulk: %v", b)
	}
	// The chain changes with the project, on the next read.
	env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"fallback_languages": map[string]any{}}).Expect(t, 200)
	if k := public(env, p, "/v1/public/content/hero.title?lang=fr-CA").Expect(t, 200).JSON(t); k["value"] != "Welcome" || k["lang"] != "en" {
		t.Fatalf("without a chain fr-CA falls back to the default: %v", k)
	}
}

// TestFallbackChainPagesComponents: pages and components read in fr-CA
// take each field from the first language of the chain that has it, and
// say so per field.
func TestFallbackChainPagesComponents(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	chainFrCA(t, env, p)
	page := env.Do("POST", "/v1/pages", p.Key, map[string]any{"title": "About", "slug": "about", "status": "published",
		"seo": map[string]any{"meta_title": "About us", "meta_description": "Who we are"},
		"translations": []any{
			map[string]any{"lang": "fr", "title": "À propos", "seo": map[string]any{"meta_title": "À propos de nous"}},
			map[string]any{"lang": "fr-CA", "title": "", "seo": map[string]any{"meta_description": "Qui nous sommes, icitte"}},
		}}).Expect(t, 201).JSON(t)
	wantPage := map[string]any{"title": "À propos", "meta_title": "À propos de nous", "meta_description": "Qui nous sommes, icitte",
		"fallback": map[string]any{"title": "fr", "seo.meta_title": "fr"}}
	for who, got := range map[string]map[string]any{
		"authenticated": env.Do("GET", fmt.Sprint("/v1/pages/", page["id"], "?lang=fr-CA"), p.Key, nil).Expect(t, 200).JSON(t),
		"public":        public(env, p, "/v1/public/pages/about?lang=fr-CA").Expect(t, 200).JSON(t),
	} {
		seo := got["seo"].(map[string]any)
		flat := map[string]any{"title": got["title"], "meta_title": seo["meta_title"], "meta_description": seo["meta_description"], "fallback": got["fallback"]}
		if !reflect.DeepEqual(flat, wantPage) {
			t.Errorf("%s page in fr-CA: %v, want %v", who, flat, wantPage)
		}
	}
	if got := env.Do("GET", "/v1/pages/about", p.Key, nil).Expect(t, 200).JSON(t); got["title"] != "About" || got["fallback"] != nil {
		t.Fatalf("without lang the page is as stored: %v %v", got["title"], got["fallback"])
	}
	links := public(env, p, "/v1/public/pages?lang=fr-CA").Expect(t, 200).JSON(t)["data"].([]any)
	if l := links[0].(map[string]any); l["title"] != "À propos" || !reflect.DeepEqual(l["fallback"], map[string]any{"title": "fr"}) {
		t.Fatalf("page link in fr-CA: %v", l)
	}

	env.Do("POST", "/v1/components", p.Key, map[string]any{"name": "Hero", "slug": "hero",
		"props": map[string]any{"heading": "Fresh bread", "cta": "Order", "image": "/media/a.jpg"},
		"translations": map[string]any{
			"fr":    map[string]any{"heading": "Pain frais", "cta": ""},
			"fr-CA": map[string]any{"cta": "Commander"},
		}}).Expect(t, 201)
	wantProps := map[string]any{"heading": "Pain frais", "cta": "Commander", "image": "/media/a.jpg"}
	wantFallback := map[string]any{"props.heading": "fr", "props.image": "en"}
	for who, got := range map[string]map[string]any{
		"authenticated": env.Do("GET", "/v1/components/hero?lang=fr-CA", p.Key, nil).Expect(t, 200).JSON(t),
		"public":        public(env, p, "/v1/public/components/hero?lang=fr-CA").Expect(t, 200).JSON(t),
	} {
		if !reflect.DeepEqual(got["props"], wantProps) || !reflect.DeepEqual(got["fallback"], wantFallback) {
			t.Errorf("%s component in fr-CA: props %v fallback %v", who, got["props"], got["fallback"])
		}
	}
	if got := env.Do("GET", "/v1/components/hero", p.Key, nil).Expect(t, 200).JSON(t); got["props"].(map[string]any)["heading"] != "Fresh bread" || got["fallback"] != nil {
		t.Fatalf("without lang the component is as stored: %v", got)
	}
	env.Do("GET", "/v1/components/hero?lang=not_a_code", p.Key, nil).Expect(t, 422)
	public(env, p, "/v1/public/components/hero?lang=not_a_code").Expect(t, 422)
}

// TestFallbackChainBadInput: a chain with a cycle, a self-reference or an
// unknown language is a 422 naming fallback_languages, and the project's
// chains stay as they were.
func TestFallbackChainBadInput(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	chainFrCA(t, env, p)
	for name, body := range map[string]any{
		"cycle":            map[string]any{"fr-CA": []string{"fr"}, "fr": []string{"fr-CA"}},
		"long cycle":       map[string]any{"fr-CA": []string{"fr"}, "fr": []string{"fr-BE"}, "fr-BE": []string{"fr-CA"}},
		"self":             map[string]any{"fr": []string{"fr"}},
		"unknown language": map[string]any{"fr-CA": []string{"zz"}},
		"unknown key":      map[string]any{"xx-AB": []string{"en"}},
		"not a code":       map[string]any{"fr-CA": []string{"French"}},
		"empty chain":      map[string]any{"fr-CA": []string{}},
		"not a list":       map[string]any{"fr-CA": "fr"},
		"not an object":    []string{"fr"},
	} {
		res := env.Do("PATCH", "/v1/projects/me", p.Key, map[string]any{"fallback_languages": body, "name": "Renamed"})
		if res.Status != 422 && res.Status != 400 {
			t.Errorf("%s: %d %s", name, res.Status, res.Body)
			continue
		}
		if res.Status == 422 {
			if errs, _ := res.JSON(t)["errors"].(map[string]any); len(errs) == 0 {
				t.Errorf("%s: 422 without errors: %s", name, res.Body)
			}
		}
	}
	got := env.Do("GET", "/v1/projects/me", p.Key, nil).Expect(t, 200).JSON(t)
	if got["name"] == "Renamed" || !reflect.DeepEqual(got["fallback_languages"], map[string]any{"fr-CA": []any{"fr", "en"}}) {
		t.Fatalf("a refused PATCH changed the project: %v %v", got["name"], got["fallback_languages"])
	}
}
