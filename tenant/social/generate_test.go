package social_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/social"
)

func TestGenerateCost(t *testing.T) {
	for _, c := range []struct{ images, videos, premium, want int }{
		{0, 0, 0, 5}, {1, 0, 0, 8}, {4, 0, 0, 17}, {0, 1, 0, 45}, {0, 0, 1, 305}, {2, 1, 1, 351},
	} {
		if got := social.GenerateCost(c.images, c.videos, c.premium); got != int64(c.want)*100 {
			t.Errorf("GenerateCost(%d, %d, %d) = %d hundredths, want %d credits", c.images, c.videos, c.premium, got, c.want)
		}
	}
}

// An AI post: 202 with the job, 5 credits plus 3 per image under
// social_post, the post created at completion with its generated images.
func TestGenerate(t *testing.T) {
	t.Parallel()
	env, _ := setup(t, nil, apitest.WithWorkers())
	p := env.NewProject("build")
	at := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Second)
	job := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{
		"type": "ai", "topic": "Our new sourdough bakery opening downtown", "tone": "warm",
		"platforms": []string{"twitter", "instagram"}, "images": 2, "scheduled_at": at.Format(time.RFC3339),
	}).Expect(t, 202).JSON(t)
	if job["type"] != "social_post.generate" || job["status"] != "pending" ||
		jsonString(job["steps"]) != `[{"active":false,"completed":false,"name":"write"},{"active":false,"completed":false,"name":"images"}]` {
		t.Fatalf("job: %v", job)
	}
	var charged int64
	var op string
	query(t, p, `SELECT sum(amount), min(op) FROM credit_ledger WHERE ref = $1`, []any{job["id"]}, &charged, &op)
	if charged != 1100 || op != "social_post" {
		t.Fatalf("charged %d under %s, want 11 credits (5 + 2 images x 3) under social_post", charged, op)
	}
	done := env.WaitJob(t, p.Key, job["id"].(string))
	res, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || len(res) != 3 || res["title"] == "" || jsonString(res["platforms"]) != `["instagram","twitter"]` {
		t.Fatalf("job: %v", done)
	}
	post := env.Do("GET", fmt.Sprintf("/v1/social-posts/%v", res["social_post_id"]), p.Key, nil).Expect(t, 200).JSON(t)
	if post["title"] != res["title"] || post["status"] != "scheduled" || post["scheduled_at"] != at.Format(time.RFC3339) ||
		post["content"] == "" || utf8.RuneCountInString(post["content"].(string)) > 280 {
		t.Fatalf("post: %v", post)
	}
	media := post["media"].([]any)
	if len(media) != 2 {
		t.Fatalf("media: %v", media)
	}
	for _, m := range media {
		u := m.(string)
		if !strings.HasPrefix(u, env.Config.PublicURL+"/v1/public/media/"+p.ID+"/") {
			t.Fatalf("media url: %s", u)
		}
		img := env.Do("GET", strings.TrimPrefix(u, env.Config.PublicURL), "", nil).Expect(t, 200)
		if img.Header.Get("Content-Type") != "image/png" || len(img.Body) < 100 {
			t.Fatalf("image %s: %v %d bytes", u, img.Header, len(img.Body))
		}
	}
	var images int
	query(t, p, `SELECT count(*) FROM images WHERE source = 'ai'`, nil, &images)
	if images != 2 {
		t.Fatalf("%d generated images registered, want 2", images)
	}

	// No images: 5 credits, one step.
	job = env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"type": "ai", "topic": "Weekend hours", "platforms": []string{"linkedin"}}).Expect(t, 202).JSON(t)
	query(t, p, `SELECT sum(amount) FROM credit_ledger WHERE ref = $1`, []any{job["id"]}, &charged)
	if charged != 500 {
		t.Fatalf("charged %d, want 500", charged)
	}
	if done := env.WaitJob(t, p.Key, job["id"].(string)); done["status"] != "completed" {
		t.Fatalf("job: %v", done)
	}
}

func TestGenerateValidation(t *testing.T) {
	t.Parallel()
	env, _ := setup(t, nil)
	p := env.NewProject("free")
	for _, c := range []struct {
		name   string
		body   map[string]any
		status int
		field  string
	}{
		{"no topic", map[string]any{"platforms": []string{"twitter"}}, 400, ""},
		{"empty topic", map[string]any{"topic": " ", "platforms": []string{"twitter"}}, 422, "topic"},
		{"title given", map[string]any{"topic": "x", "title": "y", "platforms": []string{"twitter"}}, 422, "title"},
		{"no target", map[string]any{"topic": "x"}, 422, "platforms"},
		{"too many images", map[string]any{"topic": "x", "platforms": []string{"twitter"}, "images": 5}, 422, "images"},
		{"negative images", map[string]any{"topic": "x", "platforms": []string{"twitter"}, "images": -1}, 422, "images"},
		{"videos need a provider", map[string]any{"topic": "x", "platforms": []string{"twitter"}, "videos": 1}, 422, "videos"},
		{"premium videos too", map[string]any{"topic": "x", "platforms": []string{"twitter"}, "premium_videos": 1}, 422, "premium_videos"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.body["type"] = "ai"
			code := map[int]string{400: "bad_request", 422: "validation_failed"}[c.status]
			m := env.Do("POST", "/v1/social-posts", p.Key, c.body).Problem(t, c.status, code)
			if c.field != "" {
				if _, ok := m["errors"].(map[string]any)[c.field]; !ok {
					t.Fatalf("errors: %v", m["errors"])
				}
			}
		})
	}
	// Scope: social:write; the free plan's 100 credits run out at 402.
	env.Do("POST", "/v1/social-posts", p.NewKey(false, "social:read"), map[string]any{"type": "ai", "topic": "x", "platforms": []string{"twitter"}}).Problem(t, 403, "forbidden")
	for range 5 { // 5 x 17 = 85 credits
		env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"type": "ai", "topic": "x", "platforms": []string{"twitter"}, "images": 4}).Expect(t, 202)
	}
	m := env.Do("POST", "/v1/social-posts", p.Key, map[string]any{"type": "ai", "topic": "x", "platforms": []string{"twitter"}, "images": 4}).Problem(t, 402, "insufficient_credits")
	if m["cost"] != float64(17) || m["balance"] != float64(15) {
		t.Fatalf("402: %v", m)
	}
}
