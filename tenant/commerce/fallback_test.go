package commerce_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// TestProductFallbackChain: a product read in fr-CA takes each text from
// the first language of the chain fr-CA → fr → en (the default: the
// product's own fields) that has it, and says where each came from.
func TestProductFallbackChain(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	f.do(t, "PATCH", "/projects/me", map[string]any{"fallback_languages": map[string]any{"fr-CA": []string{"fr"}}}).Expect(t, 200)
	created := f.do(t, "POST", "/products", map[string]any{"name": "Sourdough loaf", "slug": "sourdough", "price": 800, "status": "active",
		"description": "Slow-fermented bread", "short_description": "Bread",
		"translations": map[string]any{
			"fr":    map[string]any{"name": "Pain au levain", "description": "Pain à fermentation lente"},
			"fr-CA": map[string]any{"short_description": "Pain"},
		}}).Expect(t, 201).JSON(t)
	id := fmt.Sprint(created["id"])
	if created["fallback"] != nil || created["name"] != "Sourdough loaf" {
		t.Fatalf("a write answers the product as stored: %v %v", created["name"], created["fallback"])
	}
	want := map[string]any{"name": "Pain au levain", "description": "Pain à fermentation lente", "short_description": "Pain",
		"fallback": map[string]any{"name": "fr", "description": "fr"}}
	list := f.do(t, "GET", "/products?lang=fr-CA", nil).Expect(t, 200).JSON(t)["data"].([]any)
	pubList := f.env.Send(apitest.Request{Method: "GET", Path: "/v1/public/products?lang=fr-CA", Header: map[string]string{"X-Service-Project-Key": f.p.ID}}).
		Expect(t, 200).JSON(t)["data"].([]any)
	for who, got := range map[string]map[string]any{
		"get":         f.do(t, "GET", "/products/"+id+"?lang=fr-CA", nil).Expect(t, 200).JSON(t),
		"list":        list[0].(map[string]any),
		"public":      f.env.Send(apitest.Request{Method: "GET", Path: "/v1/public/products/sourdough?lang=fr-CA", Header: map[string]string{"X-Service-Project-Key": f.p.ID}}).Expect(t, 200).JSON(t),
		"public list": pubList[0].(map[string]any),
	} {
		flat := map[string]any{"name": got["name"], "description": got["description"], "short_description": got["short_description"], "fallback": got["fallback"]}
		if !reflect.DeepEqual(flat, want) {
			t.Errorf("%s in fr-CA: %v, want %v", who, flat, want)
		}
	}
	// A language with no chain and no translation: the default language.
	de := f.do(t, "GET", "/products/"+id+"?lang=de", nil).Expect(t, 200).JSON(t)
	if de["name"] != "Sourdough loaf" || !reflect.DeepEqual(de["fallback"], map[string]any{"name": "en", "description": "en", "short_description": "en"}) {
		t.Fatalf("de: %v %v", de["name"], de["fallback"])
	}
	plain := f.do(t, "GET", "/products/"+id, nil).Expect(t, 200).JSON(t)
	if plain["name"] != "Sourdough loaf" || plain["fallback"] != nil || len(plain["translations"].(map[string]any)) != 2 {
		t.Fatalf("without lang: as stored: %v", plain)
	}

	// Bad input: 422 (or 400 for a shape the decoder refuses), nothing written.
	for name, tr := range map[string]any{
		"bad language":  map[string]any{"not a code": map[string]any{"name": "x"}},
		"long name":     map[string]any{"fr": map[string]any{"name": strings.Repeat("n", 256)}},
		"not an object": map[string]any{"fr": "Pain"},
		"unknown field": map[string]any{"fr": map[string]any{"title": "Pain"}},
	} {
		res := f.do(t, "PATCH", "/products/"+id, map[string]any{"translations": tr, "name": "Renamed"})
		if res.Status != 422 && res.Status != 400 {
			t.Errorf("%s: %d %s", name, res.Status, res.Body)
		}
	}
	if got := f.do(t, "GET", "/products/"+id+"?lang=fr", nil).Expect(t, 200).JSON(t); got["name"] != "Pain au levain" {
		t.Fatalf("a refused PATCH changed the product: %v", got["name"])
	}
	f.do(t, "GET", "/products/"+id+"?lang=not_a_code", nil).Problem(t, 422, "validation_failed")
	f.do(t, "GET", "/products?lang=not_a_code", nil).Problem(t, 422, "validation_failed")
	// A chain of the default language itself: its own fields are the
	// default language's, never another's.
	f.do(t, "PATCH", "/projects/me", map[string]any{"fallback_languages": map[string]any{"en": []string{"fr"}}}).Expect(t, 200)
	if got := f.do(t, "GET", "/products/"+id+"?lang=en", nil).Expect(t, 200).JSON(t); got["name"] != "Sourdough loaf" || got["fallback"] != nil {
		t.Fatalf("en with a chain en → fr: %v %v", got["name"], got["fallback"])
	}
	// PATCH translations replaces them whole.
	f.do(t, "PATCH", "/products/"+id, map[string]any{"translations": map[string]any{}}).Expect(t, 200)
	if got := f.do(t, "GET", "/products/"+id+"?lang=fr", nil).Expect(t, 200).JSON(t); got["name"] != "Sourdough loaf" {
		t.Fatalf("translations cleared: %v", got["name"])
	}
}
