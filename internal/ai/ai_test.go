package ai

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plinth-dev/plinth/internal/config"
)

// fakeAPI speaks the OpenAI HTTP API: each call is recorded and answered
// by reply (status, headers, body).
type fakeAPI struct {
	mu    sync.Mutex
	calls []recorded
	reply func(n int, path string, body map[string]any) (int, map[string]string, string)
}

type recorded struct {
	Path, Auth string
	Body       map[string]any
	At         time.Time
}

func newFake(t *testing.T, reply func(n int, path string, body map[string]any) (int, map[string]string, string)) (*fakeAPI, *OpenAI) {
	f := &fakeAPI{reply: reply}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := &OpenAI{BaseURL: srv.URL + "/v1", APIKey: "sk-test", Model: "gpt-test", ImageModel: "gpt-image-1",
		HTTP: srv.Client(), BaseDelay: 10 * time.Millisecond, MaxDelay: 2 * time.Second}
	return f, c
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &body)
	f.mu.Lock()
	f.calls = append(f.calls, recorded{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body, At: time.Now()})
	n := len(f.calls)
	f.mu.Unlock()
	status, headers, out := f.reply(n, r.URL.Path, body)
	for k, v := range headers {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, out)
}

func (f *fakeAPI) all() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.calls...)
}

func chatAnswer(content string) string {
	b, _ := json.Marshal(map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": content}, "finish_reason": "stop"}}})
	return string(b)
}

func TestOpenAIText(t *testing.T) {
	f, c := newFake(t, func(n int, path string, body map[string]any) (int, map[string]string, string) {
		return 200, nil, chatAnswer("Hello from the model")
	})
	got, err := c.Text(context.Background(), TextRequest{System: "be brief", Prompt: "say hello", MaxTokens: 50})
	if err != nil || got != "Hello from the model" {
		t.Fatalf("Text: %q %v", got, err)
	}
	call := f.all()[0]
	if call.Path != "/v1/chat/completions" || call.Auth != "Bearer sk-test" || call.Body["model"] != "gpt-test" || call.Body["max_tokens"] != float64(50) {
		t.Fatalf("request: %+v", call)
	}
	if msgs := fmt.Sprint(call.Body["messages"]); msgs != "[map[content:be brief role:system] map[content:say hello role:user]]" {
		t.Fatalf("messages: %s", msgs)
	}
}

func TestOpenAIJSONAndTranslate(t *testing.T) {
	f, c := newFake(t, func(n int, path string, body map[string]any) (int, map[string]string, string) {
		if n == 1 {
			return 200, nil, chatAnswer(`{"title":"Plan","count":3}`)
		}
		return 200, nil, chatAnswer(`{"translations":["Bonjour","Merci"]}`)
	})
	var out struct {
		Title string `json:"title"`
		Count int    `json:"count"`
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"title": map[string]any{"type": "string"}, "count": map[string]any{"type": "integer"}}}
	if err := c.JSON(context.Background(), JSONRequest{Prompt: "plan", Name: "plan", Schema: schema}, &out); err != nil || out.Title != "Plan" || out.Count != 3 {
		t.Fatalf("JSON: %+v %v", out, err)
	}
	rf := f.all()[0].Body["response_format"].(map[string]any)
	if rf["type"] != "json_schema" || rf["json_schema"].(map[string]any)["name"] != "plan" {
		t.Fatalf("response_format: %v", rf)
	}
	tr, err := c.Translate(context.Background(), TranslateRequest{From: "en", To: "fr", Texts: []string{"Hello", "Thanks"}})
	if err != nil || strings.Join(tr, "|") != "Bonjour|Merci" {
		t.Fatalf("Translate: %v %v", tr, err)
	}
	if prompt := fmt.Sprint(f.all()[1].Body["messages"]); !strings.Contains(prompt, `["Hello","Thanks"]`) || !strings.Contains(prompt, "fr") {
		t.Fatalf("translate prompt: %s", prompt)
	}
	// A count mismatch is the provider's fault.
	_, err = c.Translate(context.Background(), TranslateRequest{From: "en", To: "fr", Texts: []string{"one"}})
	if !errors.Is(err, ErrUpstream) {
		t.Fatalf("mismatch: %v", err)
	}
}

func TestOpenAIImage(t *testing.T) {
	img, _ := Offline{}.Image(context.Background(), ImageRequest{Prompt: "x", Width: 30, Height: 20})
	f, c := newFake(t, func(n int, path string, body map[string]any) (int, map[string]string, string) {
		return 200, nil, `{"data":[{"b64_json":"` + base64.StdEncoding.EncodeToString(img.Data) + `"}]}`
	})
	got, err := c.Image(context.Background(), ImageRequest{Prompt: "a red kite", Width: 1024, Height: 1024})
	if err != nil || got.ContentType != "image/png" || got.Width != 30 || got.Height != 20 || !bytes.Equal(got.Data, img.Data) {
		t.Fatalf("Image: %+v %v", got, err)
	}
	call := f.all()[0]
	if call.Path != "/v1/images/generations" || call.Body["model"] != "gpt-image-1" || call.Body["size"] != "1024x1024" || call.Body["prompt"] != "a red kite" {
		t.Fatalf("request: %+v", call.Body)
	}
	if _, ok := call.Body["response_format"]; ok {
		t.Fatal("gpt-image models refuse response_format")
	}
}

// A 429 is retried after the Retry-After it names; then success.
func TestOpenAIRetries429HonouringRetryAfter(t *testing.T) {
	f, c := newFake(t, func(n int, path string, body map[string]any) (int, map[string]string, string) {
		if n == 1 {
			return 429, map[string]string{"Retry-After": "1"}, `{"error":{"message":"rate limited"}}`
		}
		return 200, nil, chatAnswer("ok")
	})
	// Retry-After (1 s) is told apart from the cap (MaxDelay, 10 s) and
	// from the backoff (under 10 ms) by margins no loaded machine reaches.
	c.MaxDelay = 10 * time.Second
	got, err := c.Text(context.Background(), TextRequest{Prompt: "hi"})
	calls := f.all()
	if err != nil || got != "ok" || len(calls) != 2 {
		t.Fatalf("got %q %v after %d calls", got, err, len(calls))
	}
	if gap := calls[1].At.Sub(calls[0].At); gap < time.Second || gap > c.MaxDelay/2 {
		t.Fatalf("retried after %s, want the 1 s of Retry-After", gap)
	}
}

// A 500 that persists gives up after MaxAttempts with an upstream error;
// a 400 is not retried.
func TestOpenAIGivesUp(t *testing.T) {
	f, c := newFake(t, func(n int, path string, body map[string]any) (int, map[string]string, string) {
		return 500, nil, `{"error":{"message":"boom"}}`
	})
	c.MaxAttempts = 4
	_, err := c.Text(context.Background(), TextRequest{Prompt: "hi"})
	var ue *UpstreamError
	if !errors.As(err, &ue) || !errors.Is(err, ErrUpstream) || ue.Status != 500 || ue.Attempts != 4 || len(f.all()) != 4 || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err %v after %d calls", err, len(f.all()))
	}

	f, c = newFake(t, func(n int, path string, body map[string]any) (int, map[string]string, string) {
		return 400, nil, `{"error":{"message":"bad model"}}`
	})
	_, err = c.Text(context.Background(), TextRequest{Prompt: "hi"})
	if !errors.As(err, &ue) || ue.Status != 400 || len(f.all()) != 1 {
		t.Fatalf("400: %v after %d calls", err, len(f.all()))
	}

	// A cancelled caller stops the retries and is not an upstream failure.
	f, c = newFake(t, func(n int, path string, body map[string]any) (int, map[string]string, string) {
		return 503, map[string]string{"Retry-After": "30"}, `{}`
	})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = c.Text(ctx, TextRequest{Prompt: "hi"})
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUpstream) || len(f.all()) != 1 {
		t.Fatalf("cancelled: %v after %d calls", err, len(f.all()))
	}
}

// The backoff without Retry-After is full jitter under an exponential cap.
func TestBackoff(t *testing.T) {
	c := &OpenAI{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for attempt := 1; attempt <= 8; attempt++ {
		ceil := min(100*time.Millisecond<<(attempt-1), time.Second)
		for range 50 {
			if d := c.backoff(attempt, -1); d < 0 || d > ceil {
				t.Fatalf("attempt %d: %s above %s", attempt, d, ceil)
			}
		}
	}
	if d := c.backoff(1, 5*time.Second); d != time.Second {
		t.Fatalf("Retry-After is capped at MaxDelay: %s", d)
	}
	if d := c.backoff(3, 0); d != 0 {
		t.Fatalf("Retry-After 0 means now: %s", d)
	}
	if parseRetryAfter("") != -1 || parseRetryAfter("7") != 7*time.Second || parseRetryAfter("soon") != -1 {
		t.Fatal("parseRetryAfter")
	}
}

func TestOfflineIsDeterministicAndDerived(t *testing.T) {
	ctx := context.Background()
	o := Offline{}
	a, _ := o.Text(ctx, TextRequest{Prompt: "Sourdough baking for busy families"})
	b, _ := o.Text(ctx, TextRequest{Prompt: "Sourdough baking for busy families"})
	c, _ := o.Text(ctx, TextRequest{Prompt: "Mountain biking trails in autumn"})
	if a != b || a == c || !strings.Contains(strings.ToLower(a), "sourdough") || !strings.Contains(strings.ToLower(c), "trails") {
		t.Fatalf("text:\n%s\n%s", a, c)
	}
	if n := len(strings.Fields(a)); n < 100 {
		t.Fatalf("text too short: %d words", n)
	}

	schema := map[string]any{"type": "object", "properties": map[string]any{
		"items": map[string]any{"type": "array", "minItems": 4, "items": map[string]any{"type": "object", "properties": map[string]any{
			"title": map[string]any{"type": "string"}, "slug": map[string]any{"type": "string"},
			"keywords": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"tone":     map[string]any{"type": "string", "enum": []any{"warm", "formal"}},
		}}},
	}}
	var plan struct {
		Items []struct {
			Title    string   `json:"title"`
			Slug     string   `json:"slug"`
			Keywords []string `json:"keywords"`
			Tone     string   `json:"tone"`
		} `json:"items"`
	}
	if err := o.JSON(ctx, JSONRequest{Name: "plan", Prompt: "Sourdough baking for busy families", Schema: schema}, &plan); err != nil {
		t.Fatal(err)
	}
	if len(plan.Items) != 4 {
		t.Fatalf("items: %+v", plan)
	}
	for _, it := range plan.Items {
		if it.Title == "" || it.Slug == "" || strings.ContainsAny(it.Slug, " A") || len(it.Keywords) != 3 || (it.Tone != "warm" && it.Tone != "formal") {
			t.Fatalf("item: %+v", it)
		}
	}

	tr, _ := o.Translate(ctx, TranslateRequest{From: "en", To: "de", Texts: []string{"Welcome", ""}})
	if tr[0] != "[de] Welcome" || tr[1] != "" {
		t.Fatalf("translate: %q", tr)
	}

	img1, err := o.Image(ctx, ImageRequest{Prompt: "blue sea", Width: 120, Height: 90})
	if err != nil {
		t.Fatal(err)
	}
	img2, _ := o.Image(ctx, ImageRequest{Prompt: "blue sea", Width: 120, Height: 90})
	img3, _ := o.Image(ctx, ImageRequest{Prompt: "red desert", Width: 120, Height: 90})
	if !bytes.Equal(img1.Data, img2.Data) || bytes.Equal(img1.Data, img3.Data) {
		t.Fatal("images must be deterministic and derived from the prompt")
	}
	decoded, err := png.Decode(bytes.NewReader(img1.Data))
	if err != nil || decoded.Bounds().Dx() != 120 || decoded.Bounds().Dy() != 90 || img1.ContentType != "image/png" {
		t.Fatalf("not a 120x90 PNG: %v", err)
	}
}

func TestNew(t *testing.T) {
	p, err := New(config.Config{}, nil)
	if err != nil || p.Name() != "offline" {
		t.Fatalf("default: %v %v", p, err)
	}
	p, err = New(config.Config{AIProvider: "openai", OpenAIBaseURL: "http://x/v1", AIModel: "m", ImageModel: "i"}, nil)
	if o, ok := p.(*OpenAI); err != nil || !ok || o.BaseURL != "http://x/v1" || o.Model != "m" || o.ImageModel != "i" {
		t.Fatalf("openai: %v %v", p, err)
	}
	if _, err := New(config.Config{AIProvider: "magic"}, nil); err == nil {
		t.Fatal("an unknown provider is an error")
	}
}

// A structured answer that is not JSON or does not match the schema is
// asked for again; one that stays malformed is the provider's failure.
func TestOpenAIJSONValidatesAndRetries(t *testing.T) {
	schema := map[string]any{"type": "object", "additionalProperties": false, "required": []string{"title", "count"},
		"properties": map[string]any{"title": map[string]any{"type": "string", "maxLength": 10}, "count": map[string]any{"type": "integer"}}}
	type answer struct {
		Title string `json:"title"`
		Count int    `json:"count"`
	}
	answers := []string{"Sure! Here is your plan.", `{"title":"Plan"}`, `{"title":"Plan","count":"3"}`, `{"title":"Plan","count":3}`}
	f, c := newFake(t, func(n int, path string, body map[string]any) (int, map[string]string, string) {
		return 200, nil, chatAnswer(answers[min(n, len(answers))-1])
	})
	var out answer
	if err := c.JSON(context.Background(), JSONRequest{Prompt: "plan", Name: "plan", Schema: schema}, &out); err != nil || out != (answer{"Plan", 3}) {
		t.Fatalf("JSON: %+v %v", out, err)
	}
	if n := len(f.all()); n != 4 {
		t.Fatalf("%d calls, want 4 (three malformed answers, then a good one)", n)
	}

	_, c = newFake(t, func(n int, path string, body map[string]any) (int, map[string]string, string) {
		return 200, nil, chatAnswer(`{"title":"Far too long a title","count":1}`)
	})
	c.MaxAttempts = 3
	err := c.JSON(context.Background(), JSONRequest{Prompt: "plan", Name: "plan", Schema: schema}, &out)
	var ue *UpstreamError
	if !errors.Is(err, ErrUpstream) || !errors.As(err, &ue) || ue.Attempts != 3 {
		t.Fatalf("a malformed answer every time: %v", err)
	}
	if !strings.Contains(ue.Public(), "no usable answer after 3 attempt(s)") {
		t.Fatalf("public message: %s", ue.Public())
	}
}

// Offline text about a kind of business uses that trade's words, not only
// the prompt's own; colours asked for as #rrggbb are colours.
func TestOfflineKnowsTrades(t *testing.T) {
	ctx := context.Background()
	o := Offline{}
	bread := []string{"bread", "sourdough", "pastries", "croissants", "oven", "flour", "loaves"}
	has := func(s string, words []string) bool {
		for _, w := range words {
			if strings.Contains(strings.ToLower(s), w) {
				return true
			}
		}
		return false
	}
	bakery, _ := o.Text(ctx, TextRequest{Prompt: "A small family bakery in Lyon"})
	trails, _ := o.Text(ctx, TextRequest{Prompt: "Mountain biking trails in autumn"})
	if !has(bakery, bread) || has(trails, bread) {
		t.Fatalf("bakery:\n%s\ntrails:\n%s", bakery, trails)
	}
	var out struct {
		Colors struct{ Primary string } `json:"colors"`
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"colors": map[string]any{"type": "object",
		"properties": map[string]any{"primary": map[string]any{"type": "string", "pattern": hexColor}}}}}
	if err := o.JSON(ctx, JSONRequest{Name: "brand", Prompt: "A small family bakery", Schema: schema}, &out); err != nil ||
		len(out.Colors.Primary) != 7 || out.Colors.Primary[0] != '#' {
		t.Fatalf("colour: %+v %v", out, err)
	}
}
