package blog

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestCleanText(t *testing.T) {
	for in, want := range map[string]string{
		"Plain & simple":                        "Plain & simple",
		"2 < 3":                                 "2 < 3",
		"<b>bold</b> text":                      "bold text",
		"<script>alert(1)</script>after":        "after",
		"&lt;script&gt;alert(1)&lt;/script&gt;": "",
		"&amp;lt;b&amp;gt;x":                    "x",
		"Tom &amp; Jerry":                       "Tom & Jerry",
	} {
		if got := cleanText(in); got != want {
			t.Errorf("cleanText(%q) = %q, want %q", in, got, want)
		}
	}
	// However deep the entities nest, no tag comes out.
	s := "<script>x</script>"
	for range 12 {
		s = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
		if got := cleanText(s); strings.Contains(got, "<script") {
			t.Fatalf("cleanText(%q) = %q", s, got)
		}
	}
}

func FuzzCleanText(f *testing.F) {
	f.Add("<script>alert(1)</script>")
	f.Add("&lt;img src=x onerror=y&gt;")
	f.Fuzz(func(t *testing.T, s string) {
		out := cleanText(s)
		z := html.NewTokenizer(strings.NewReader(out))
		for {
			switch tt := z.Next(); tt {
			case html.ErrorToken:
				return
			case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
				t.Fatalf("cleanText(%q) = %q keeps a tag: %s", s, out, z.Token())
			}
		}
	})
}
