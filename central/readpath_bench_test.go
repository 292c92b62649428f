package central_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
)

// BenchmarkReadPaths serves the three reads of issue 21 that the
// bench-http table compares with a bare handler, in process (no network,
// so what a CPU or allocation profile shows is the server's own work):
// the public bulk read of 50 keys, half of them falling back to the
// default language, a blog post with two translations, and one content
// key.
func BenchmarkReadPaths(b *testing.B) {
	env := apitest.New(b, apitest.WithEnv("PLINTH_PUBLIC_RATE", "1000000000/1000000000", "PLINTH_RATE", "1000000000/1000000000"))
	p := env.NewProject("scale")
	// The key read is many thousands a minute: lift the project's own
	// limit (PLINTH_RATE is the default's, not a plan's).
	plan, rpm := "enterprise", 1000000
	if _, err := env.Server.Central.UpdateProject(context.Background(), p.ID, central.ProjectUpdate{Plan: &plan,
		RateRPM: central.Opt[int]{Set: true, Value: &rpm}, RateBurst: central.Opt[int]{Set: true, Value: &rpm}}); err != nil {
		b.Fatal(err)
	}
	var updates []map[string]any
	var keys []string
	for i := range 50 {
		k := fmt.Sprintf("section%02d.text", i)
		keys = append(keys, k)
		updates = append(updates, map[string]any{"key": k, "value": strings.Repeat("Words of the site. ", 5)})
		if i%2 == 0 {
			updates = append(updates, map[string]any{"key": k, "value": strings.Repeat("Des mots du site. ", 5), "lang": "fr"})
		}
	}
	env.Do("PUT", "/v1/content", p.Key, map[string]any{"updates": updates}).Expect(b, 200)
	env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"title": "Hello", "content": strings.Repeat("<p>A paragraph of the post.</p>", 20), "language_code": "en"}).Expect(b, 201)
	for _, l := range []string{"fr", "de"} {
		env.Do("PUT", "/v1/blog-posts/hello/translations/"+l, p.Key, map[string]any{"title": "Hello " + l, "content": strings.Repeat("<p>Un paragraphe.</p>", 20)}).Expect(b, 200)
	}
	for _, c := range []struct{ name, url, key string }{
		{"public-bulk-50", "/v1/public/content/bulk?keys=" + strings.Join(keys, ",") + "&lang=fr&project_id=" + p.ID, ""},
		{"blog-post", "/v1/blog-posts/hello", p.Key},
		{"content-key", "/v1/content/section00.text", p.Key},
	} {
		b.Run(c.name, func(b *testing.B) {
			do := func() *httptest.ResponseRecorder {
				req := httptest.NewRequest("GET", c.url, nil)
				if c.key != "" {
					req.Header.Set("Authorization", "Bearer "+c.key)
				}
				rec := httptest.NewRecorder()
				env.Server.Handler.ServeHTTP(rec, req)
				return rec
			}
			if rec := do(); rec.Code != http.StatusOK {
				b.Fatalf("%s: %d %s", c.url, rec.Code, rec.Body)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if rec := do(); rec.Code != http.StatusOK {
					b.Fatalf("%s: %d %s", c.url, rec.Code, rec.Body)
				}
			}
		})
	}
}
