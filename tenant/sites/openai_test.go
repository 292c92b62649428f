package sites_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

// fakeOpenAI speaks the OpenAI chat completions API, answering by the
// schema's name; malformed[name] answers that many calls of it with
// malformed structured output first (-1: every call).
type fakeOpenAI struct {
	*httptest.Server
	mu        sync.Mutex
	calls     map[string]int
	malformed map[string]int
}

var toLang = regexp.MustCompile(`to the language with code ([a-zA-Z-]+):\n`)

func newFakeOpenAI(t *testing.T, malformed map[string]int) *fakeOpenAI {
	f := &fakeOpenAI{calls: map[string]int{}, malformed: malformed}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct {
				Role, Content string
			} `json:"messages"`
			ResponseFormat struct {
				JSONSchema struct {
					Name string `json:"name"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if r.URL.Path != "/v1/chat/completions" || json.Unmarshal(body, &req) != nil {
			http.Error(w, `{"error":{"message":"unexpected request"}}`, 400)
			return
		}
		name := req.ResponseFormat.JSONSchema.Name
		f.mu.Lock()
		f.calls[name]++
		bad := f.malformed[name] == -1 || f.calls[name] <= f.malformed[name]
		f.mu.Unlock()
		var answer any
		switch name {
		case "site_plan":
			answer = map[string]any{"site_name": "Maison Dupain", "offering": "products", "extra_pages": []any{map[string]any{"title": "Our Breads"}}}
		case "brand":
			answer = map[string]any{"tagline": "Bread from Lyon since 1982", "description": "A family bakery.", "voice": "warm", "audience": "neighbours",
				"colors": map[string]string{"primary": "#8B4513", "secondary": "#F5DEB3", "accent": "#D2691E", "background": "#FFFFFF", "text": "#222222"},
				"fonts":  map[string]string{"heading": "Playfair Display", "body": "Lora"}}
		case "page":
			answer = map[string]any{"title": "Fresh bread daily", "meta_title": "Maison Dupain, Lyon", "meta_description": "Sourdough and pastries baked in Lyon.",
				"sections": []any{
					map[string]any{"kind": "text", "heading": "Our loaves", "body": "Baked at dawn.", "items": []any{}},
					map[string]any{"kind": "features", "heading": "Why us", "body": "Flour from local mills.", "items": []any{
						map[string]any{"title": "Sourdough", "text": "48 hours of fermentation."}}},
				}}
		case "components":
			answer = map[string]any{"header_button": "Order", "footer_text": "Maison Dupain, 3 rue du Pain, Lyon", "hero_heading": "Bread worth waking up for",
				"hero_body": "Family bakers since 1982.", "hero_button": "Visit us", "cta_heading": "Order for the weekend", "cta_body": "Call before Friday.", "cta_button": "Order now"}
		case "translations":
			prompt := req.Messages[len(req.Messages)-1].Content
			m := toLang.FindStringSubmatchIndex(prompt)
			var texts []string
			if m == nil || json.Unmarshal([]byte(prompt[m[1]:]), &texts) != nil {
				http.Error(w, `{"error":{"message":"unreadable prompt"}}`, 400)
				return
			}
			for i := range texts {
				texts[i] = prompt[m[2]:m[3]] + ": " + texts[i]
			}
			answer = map[string]any{"translations": texts}
		default:
			http.Error(w, `{"error":{"message":"unknown schema"}}`, 400)
			return
		}
		content, _ := json.Marshal(answer)
		if bad {
			// Valid JSON the schema refuses: a required field is missing.
			var m map[string]any
			_ = json.Unmarshal(content, &m)
			for k := range m {
				delete(m, k)
				break
			}
			content, _ = json.Marshal(m)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
			"message": map[string]any{"role": "assistant", "content": string(content)}, "finish_reason": "stop"}}})
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeOpenAI) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func openAIEnv(t *testing.T, f *fakeOpenAI) *apitest.Env {
	return apitest.New(t, apitest.WithWorkers(), apitest.WithEnv("PLINTH_AI_PROVIDER", "openai", "OPENAI_BASE_URL", f.URL+"/v1", "OPENAI_API_KEY", "sk-test"))
}

// The site is written from the model's structured answers; a malformed
// answer is asked for again.
func TestWebsiteOpenAI(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, map[string]int{"brand": 1})
	env := openAIEnv(t, f)
	p := env.NewProject("build")
	j := env.Do("POST", "/v1/websites/generate", p.Key, map[string]any{"brief": bakeryBrief, "target_languages": []string{"fr"}}).Expect(t, 202).JSON(t)
	env.JobSteps(t, p.Key, str(j, "id"), []string{"plan", "brand", "pages", "components", "content", "translate"})
	job := env.WaitJob(t, p.Key, str(j, "id"))
	st := checkSite(t, env, p, job, []string{"fr"})
	require.Contains(t, st.pages, "products", "the model chose products")
	require.Contains(t, st.pages, "our-breads", "and a page the brief implies")
	require.Equal(t, 2, f.count("brand"), "the malformed brand was asked for again")
	require.Equal(t, len(st.pages), f.count("page"))

	b := env.Do("GET", "/v1/brand", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "Maison Dupain", b["name"])
	require.Equal(t, "Bread from Lyon since 1982", b["tagline"])
	require.Equal(t, "#8B4513", b["colors"].(map[string]any)["primary"])
	home := st.pages["home"]
	require.Equal(t, "Fresh bread daily", home["title"])
	require.Equal(t, "fr: Fresh bread daily", home["translations"].([]any)[0].(map[string]any)["title"])
	k := sectionKeys(home)[0]
	v := env.Do("GET", "/v1/content/"+k+"?lang=fr", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "fr: Our loaves", v["value"])
	hero := env.Do("GET", "/v1/components/hero", p.Key, nil).Expect(t, 200).JSON(t)
	hk := hero["props"].(map[string]any)["heading_key"].(string)
	require.Equal(t, "Bread worth waking up for", public(env, p, "/v1/public/content/"+hk).Expect(t, 200).JSON(t)["value"])
}

// An answer that stays malformed fails the job with upstream_unavailable,
// refunded, with nothing written.
func TestWebsiteOpenAIMalformed(t *testing.T) {
	t.Parallel()
	f := newFakeOpenAI(t, map[string]int{"page": -1})
	env := openAIEnv(t, f)
	p := env.NewProject("build")
	j := env.Do("POST", "/v1/websites/generate", p.Key, map[string]any{"brief": bakeryBrief, "target_languages": []string{"fr"}}).Expect(t, 202).JSON(t)
	job := env.WaitJob(t, p.Key, str(j, "id"))
	require.Equal(t, "failed", job["status"])
	require.Equal(t, "upstream_unavailable", job["error"].(map[string]any)["code"], fmt.Sprint(job["error"]))
	require.Equal(t, 5, f.count("page"), "asked five times, then given up")
	net := ledger(t, p, str(j, "id"))
	require.Equal(t, int64(0), net["website"]+net["translate_language"], "refunded: %v", net)
	require.Equal(t, int64(0), query[int64](t, p, `SELECT (SELECT count(*) FROM pages) + (SELECT count(*) FROM components)
		+ (SELECT count(*) FROM content_values) + (SELECT count(*) FROM site_generated)`))
	require.Empty(t, env.Do("GET", "/v1/brand", p.Key, nil).Expect(t, 200).JSON(t)["name"])
}
