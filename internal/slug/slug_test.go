package slug

import (
	"context"
	"testing"
)

func TestMake(t *testing.T) {
	for in, want := range map[string]string{
		"Hello World":       "hello-world",
		"  Crème Brûlée!! ": "creme-brulee",
		"a--b__c":           "a-b-c",
		"!!!":               "item",
		"Über 2026":         "uber-2026",
	} {
		if got := Make(in); got != want || !Valid(got) {
			t.Errorf("Make(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestUnique(t *testing.T) {
	taken := map[string]bool{"post": true, "post-2": true}
	got, err := Unique(context.Background(), "post", func(_ context.Context, c string) (bool, error) { return taken[c], nil })
	if err != nil || got != "post-3" {
		t.Fatalf("Unique = %q, %v", got, err)
	}
}

func FuzzMake(f *testing.F) {
	f.Add("Hello, World")
	f.Fuzz(func(t *testing.T, s string) {
		if got := Make(s); !Valid(got) {
			t.Fatalf("Make(%q) = %q is not a valid slug", s, got)
		}
	})
}
