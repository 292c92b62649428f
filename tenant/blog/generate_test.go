package blog_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/ai"
)

// generated checks a completed blog_post.generate job and its post, and
// returns the post.
func generated(t *testing.T, env *apitest.Env, p *apitest.Project, job map[string]any, targets []string) map[string]any {
	t.Helper()
	require.Equal(t, "completed", job["status"], "job: %v", job)
	res := job["result"].(map[string]any)
	require.ElementsMatch(t, []string{"post_id", "slug", "title"}, keys(res))
	m := env.Do("GET", fmt.Sprintf("/v1/blog-posts/%v", res["post_id"]), p.Key, nil).Expect(t, 200).JSON(t)
	checkPost(t, m)
	require.Equal(t, res["slug"], m["slug"])
	require.Equal(t, res["title"], m["title"])
	require.Equal(t, "draft", m["status"])
	require.Equal(t, append([]string{"en"}, sortStrings(targets)...), langs(m))
	for _, x := range m["translations"].([]any) {
		tr := x.(map[string]any)
		for _, f := range []string{"title", "excerpt", "content", "meta_title", "meta_description"} {
			require.NotEmpty(t, tr[f], "%s of %s", f, tr["lang"])
		}
		requireClean(t, tr["content"].(string))
	}
	require.Contains(t, m["content"], "<h2>")
	require.Contains(t, m["content"], "<p>")

	// The featured image is stored, registered and served.
	img, _ := m["featured_image"].(string)
	prefix := env.Config.PublicURL + "/v1/public/media/" + p.ID + "/"
	require.True(t, strings.HasPrefix(img, prefix), "featured_image %q", img)
	key := strings.TrimPrefix(img, prefix)
	require.Equal(t, "ai", query[string](t, p, `SELECT source FROM images WHERE key = $1`, key))
	r := env.Do("GET", "/v1/public/media/"+p.ID+"/"+key, "", nil).Expect(t, 200)
	require.Equal(t, "image/png", r.Header.Get("Content-Type"))
	require.Equal(t, "\x89PNG", string(r.Body[:4]))
	return m
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func sortStrings(s []string) []string {
	out := append([]string(nil), s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

var steps = []string{"research", "write", "image", "translate", "seo"}

func TestGenerateOffline(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	j := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{
		"type": "ai", "topic": "Baking sourdough bread at home", "language_code": "en",
		"target_languages": []string{"fr", "de"}, "keywords": []string{"starter", "flour"}, "tone": "friendly",
	}).Expect(t, 202).JSON(t)
	require.Equal(t, "blog_post.generate", j["type"])
	require.Equal(t, "pending", j["status"])
	var names []string
	for _, s := range j["steps"].([]any) {
		require.Equal(t, false, s.(map[string]any)["completed"])
		names = append(names, s.(map[string]any)["name"].(string))
	}
	require.Equal(t, steps, names)
	// 60 credits for the post and 7 per target language, at submit.
	require.Equal(t, map[string]int64{"blog_post": 6000, "translate_language": 1400}, ledger(t, p, j["id"].(string)))

	done := env.JobSteps(t, p.Key, j["id"].(string), steps)
	job := env.Do("GET", "/v1/jobs/"+j["id"].(string), p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, job["result"], done["result"])
	m := generated(t, env, p, job, []string{"fr", "de"})
	fr := env.Do("GET", "/v1/blog-posts/"+idOf(m)+"?lang=fr", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "[fr] "+m["title"].(string), fr["title"], "the offline provider marks its translations")
	require.Equal(t, "[fr] "+m["meta_title"].(string), fr["meta_title"])
	// Charged once: nothing refunded, nothing more.
	require.Equal(t, map[string]int64{"blog_post": 6000, "translate_language": 1400}, ledger(t, p, j["id"].(string)))

	// Without target languages: the translate step passes, 60 credits.
	j = env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "ai", "topic": "Baking sourdough bread at home"}).Expect(t, 202).JSON(t)
	require.Equal(t, map[string]int64{"blog_post": 6000}, ledger(t, p, j["id"].(string)))
	second := generated(t, env, p, env.WaitJob(t, p.Key, j["id"].(string)), nil)
	require.NotEqual(t, m["slug"], second["slug"], "the same title gets its own slug")
	require.NotEqual(t, m["featured_image"], second["featured_image"])
}

func TestGenerateCredits(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	poor := env.NewProject("free") // 100 credits
	langs := []string{"fr", "de", "es", "it", "pt", "nl"}
	e := env.Do("POST", "/v1/blog-posts", poor.Key, map[string]any{"type": "ai", "topic": "t", "target_languages": langs}).Problem(t, 402, "insufficient_credits")
	require.Equal(t, float64(102), e["cost"])
	require.Equal(t, float64(100), e["balance"])
	require.Equal(t, int64(0), query[int64](t, poor, `SELECT count(*) FROM jobs`), "a refused submit queues nothing")
	env.Do("POST", "/v1/blog-posts", poor.Key, map[string]any{"type": "ai", "topic": "t", "target_languages": langs[:5]}).Expect(t, 202)
}

// fakeOpenAI speaks the OpenAI API: chat completions answer by the
// schema's name, translations prefix each text with the target language,
// and images are PNGs.
type fakeOpenAI struct {
	*httptest.Server
	mu    sync.Mutex
	calls map[string]int
	fail  bool
}

var toLang = regexp.MustCompile(`to the language with code ([a-zA-Z-]+):\n`)

func newFakeOpenAI(t *testing.T) *fakeOpenAI {
	f := &fakeOpenAI{calls: map[string]int{}}
	png, err := ai.Offline{}.Image(context.Background(), ai.ImageRequest{Prompt: "fake", Width: 96, Height: 64})
	require.NoError(t, err)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
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
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"error":{"message":"bad json"}}`, 400)
			return
		}
		name := r.URL.Path
		if r.URL.Path == "/v1/chat/completions" {
			name = req.ResponseFormat.JSONSchema.Name
		}
		f.mu.Lock()
		f.calls[name]++
		fail := f.fail
		f.mu.Unlock()
		if fail {
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":{"message":"the server had an error"}}`, 500)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/v1/images/generations" {
			fmt.Fprintf(w, `{"created":1,"data":[{"b64_json":%q}]}`, base64.StdEncoding.EncodeToString(png.Data))
			return
		}
		var answer any
		switch name {
		case "research":
			answer = map[string]any{"angle": "for beginners", "outline": []string{"Starter", "Dough", "Bake"}, "keywords": []string{"levain"}}
		case "post":
			answer = map[string]any{"title": "Sourdough at Home", "excerpt": "Bake your first loaf.", "sections": []map[string]string{
				{"heading": "Starter", "body": "Feed it daily.\n\nKeep it warm."},
				{"heading": "Dough", "body": "Mix <b>flour</b> and water. <script>alert(1)</script>"},
				{"heading": "Bake", "body": "Hot oven."},
			}}
		case "seo":
			answer = map[string]any{"meta_title": "Sourdough guide", "meta_description": "How to bake sourdough at home."}
		case "translations":
			prompt := req.Messages[len(req.Messages)-1].Content
			m := toLang.FindStringSubmatchIndex(prompt)
			var texts []string
			if m == nil || json.Unmarshal([]byte(prompt[m[1]:]), &texts) != nil {
				http.Error(w, `{"error":{"message":"unreadable prompt"}}`, 400)
				return
			}
			lang := prompt[m[2]:m[3]]
			for i := range texts {
				texts[i] = lang + ": " + texts[i]
			}
			answer = map[string]any{"translations": texts}
		default:
			http.Error(w, `{"error":{"message":"unknown schema"}}`, 400)
			return
		}
		content, _ := json.Marshal(answer)
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{
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

func TestGenerateOpenAI(t *testing.T) {
	t.Parallel()
	up := newFakeOpenAI(t)
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithEnv("PLINTH_AI_PROVIDER", "openai", "OPENAI_BASE_URL", up.URL+"/v1", "OPENAI_API_KEY", "sk-test"))
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	j := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "ai", "topic": "Sourdough", "target_languages": []string{"fr"}}).Expect(t, 202).JSON(t)
	env.JobSteps(t, p.Key, j["id"].(string), steps)
	job := env.WaitJob(t, p.Key, j["id"].(string))
	m := generated(t, env, p, job, []string{"fr"})
	require.Equal(t, map[string]any{"post_id": m["id"], "slug": "sourdough-at-home", "title": "Sourdough at Home"}, job["result"])
	require.Equal(t, "Bake your first loaf.", m["excerpt"])
	require.Equal(t, "Sourdough guide", m["meta_title"])
	require.Equal(t, "How to bake sourdough at home.", m["meta_description"])
	require.Contains(t, m["content"], "<h2>Starter</h2>\n<p>Feed it daily.</p>\n<p>Keep it warm.</p>")
	require.Contains(t, m["content"], "&lt;b&gt;flour&lt;/b&gt;", "the model's text is text, not markup")
	fr := env.Do("GET", "/v1/blog-posts/"+idOf(m)+"?lang=fr", p.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "fr: Sourdough at Home", fr["title"])
	require.Equal(t, "fr: Sourdough guide", fr["meta_title"])
	evs := events(t, p, "blog_post.translated")
	require.Len(t, evs, 1)
	require.Equal(t, fr, evs[0], "the event carries the post in the language translated")
	require.True(t, strings.HasPrefix(fr["content"].(string), "fr: <h2>Starter</h2>"), fr["content"])
	require.Equal(t, 96, int(query[int32](t, p, `SELECT width FROM images WHERE source = 'ai'`)), "the image's real size")
	for name, n := range map[string]int{"research": 1, "post": 1, "seo": 1, "translations": 2, "/v1/images/generations": 1} {
		require.Equal(t, n, up.count(name), name)
	}
}

// An upstream that keeps failing ends the job failed, refunded, with no
// post and no image.
func TestGenerateUpstreamFailure(t *testing.T) {
	t.Parallel()
	up := newFakeOpenAI(t)
	up.fail = true
	env := apitest.New(t, apitest.WithWorkers(), apitest.WithEnv("PLINTH_AI_PROVIDER", "openai", "OPENAI_BASE_URL", up.URL+"/v1", "OPENAI_API_KEY", "sk-test"))
	p := env.NewProject("build")
	subscribe(t, env, p, "")
	j := env.Do("POST", "/v1/blog-posts", p.Key, map[string]any{"type": "ai", "topic": "Sourdough", "target_languages": []string{"fr"}}).Expect(t, 202).JSON(t)
	job := env.WaitJob(t, p.Key, j["id"].(string))
	require.Equal(t, "failed", job["status"])
	require.Empty(t, events(t, p, "blog_post.translated"), "a failed job fires nothing")
	require.Equal(t, "upstream_unavailable", job["error"].(map[string]any)["code"])
	net := ledger(t, p, j["id"].(string))
	require.Equal(t, int64(0), net["blog_post"]+net["translate_language"], "refunded: %v", net)
	require.Equal(t, int64(0), query[int64](t, p, `SELECT (SELECT count(*) FROM blog_posts) + (SELECT count(*) FROM images)`))
}
