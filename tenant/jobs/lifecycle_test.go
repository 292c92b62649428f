package jobs_test

import (
	"bytes"
	"fmt"
	"image/png"
	"strconv"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/id"
)

// The image.generate job from submit to result: 202 pending, then on SSE
// the progress and step events in order and done last, the result, the
// charge, the stored image, and the stream of a finished job.
func TestLifecycleImageJob(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	before := p.Balance(t)

	sub := env.Do("POST", "/v1/images", p.Key, map[string]any{"prompt": "A lighthouse at dawn", "width": 320, "height": 200}).Expect(t, 202).JSON(t)
	jobID, _ := sub["id"].(string)
	if !id.Valid("job_", jobID) || sub["type"] != "image.generate" || sub["status"] != "pending" || sub["progress"] != float64(0) {
		t.Fatalf("submit: %v", sub)
	}
	if _, ok := sub["result"]; ok {
		t.Fatalf("a pending job has no result: %v", sub)
	}
	steps := fmt.Sprint(sub["steps"])
	if steps != "[map[active:false completed:false name:generate] map[active:false completed:false name:store]]" {
		t.Fatalf("steps: %s", steps)
	}
	if !strings.HasSuffix(sub["created_at"].(string), "Z") {
		t.Fatalf("created_at must be UTC: %v", sub["created_at"])
	}

	// Last-Event-ID 0 replays the job's every event, then follows it live.
	evs := streamAll(t, env.URL, p.Key, jobID, "0")
	var got []string
	prev := 0
	for _, e := range evs {
		n, err := strconv.Atoi(e.ID)
		if err != nil || n != prev+1 {
			t.Fatalf("event ids must count up from 1: %q after %d", e.ID, prev)
		}
		prev = n
		m := e.json(t)
		switch e.Type {
		case "progress":
			got = append(got, fmt.Sprintf("progress %v %v", m["progress"], m["message"]))
		case "step":
			got = append(got, fmt.Sprintf("step %v completed=%v active=%v", m["name"], m["completed"], m["active"]))
		case "done":
			got = append(got, "done "+fmt.Sprint(m["status"]))
		default:
			got = append(got, e.Type)
		}
	}
	want := []string{
		"progress 0 Started",
		"step generate completed=false active=true",
		"progress 10 Generating the image",
		"step generate completed=true active=false",
		"step store completed=false active=true",
		"progress 80 Storing the image",
		"step store completed=true active=false",
		"progress 100 Completed",
		"done completed",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	done := evs[len(evs)-1].json(t)

	job := env.Do("GET", "/v1/jobs/"+jobID, p.Key, nil).Expect(t, 200).JSON(t)
	if job["status"] != "completed" || job["progress"] != float64(100) || job["message"] != "Completed" {
		t.Fatalf("job: %v", job)
	}
	if fmt.Sprint(job) != fmt.Sprint(done) {
		t.Fatalf("done must carry the job:\n%v\n%v", done, job)
	}
	res := job["result"].(map[string]any)
	key, _ := res["key"].(string)
	url, _ := res["url"].(string)
	if res["width"] != float64(320) || res["height"] != float64(200) || !strings.HasPrefix(key, "a-lighthouse-at-dawn-") ||
		!strings.HasSuffix(url, "/v1/public/media/"+p.ID+"/"+key) {
		t.Fatalf("result: %v", res)
	}
	if _, ok := job["error"]; ok {
		t.Fatalf("a completed job has no error: %v", job)
	}

	// Charged 10 credits once, under the job id.
	if net, rows := ledger(t, p, jobID); net != 1000 || rows != 1 {
		t.Fatalf("ledger: net %d in %d rows, want 1000 in 1", net, rows)
	}
	if after := p.Balance(t); before-after != 1000 {
		t.Fatalf("balance went from %d to %d", before, after)
	}
	if s := riverState(t, env, p, jobID); s != "completed" {
		t.Fatalf("river job %s", s)
	}

	// The image is served on the public surface, a real PNG of that size.
	path := url[strings.Index(url, "/v1/"):]
	r := env.Do("GET", path, "", nil).Expect(t, 200)
	if r.Header.Get("Content-Type") != "image/png" || r.Header.Get("Cache-Control") != "public, max-age=60" || r.Header.Get("ETag") == "" {
		t.Fatalf("media headers: %v", r.Header)
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(r.Body))
	if err != nil || cfg.Width != 320 || cfg.Height != 200 {
		t.Fatalf("media is not a 320x200 PNG: %v %v", cfg, err)
	}
	env.Send(apitest.Request{Method: "GET", Path: path, Header: map[string]string{"If-None-Match": r.Header.Get("ETag")}}).Expect(t, 304)
	env.Do("GET", "/v1/public/media/"+p.ID+"/no-such-image", "", nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/public/media/prj_000000000000000000000000/"+key, "", nil).Problem(t, 404, "not_found")

	// A finished job's stream sends done at once, and only done.
	evs = streamAll(t, env.URL, p.Key, jobID, "")
	if len(evs) != 1 || evs[0].Type != "done" || evs[0].ID != strconv.Itoa(prev) || evs[0].json(t)["status"] != "completed" {
		t.Fatalf("stream of a finished job: %+v", evs)
	}
	// A reconnect after done (an EventSource does that) gets done at once.
	evs = streamAll(t, env.URL, p.Key, jobID, strconv.Itoa(prev))
	if len(evs) != 1 || evs[0].Type != "done" {
		t.Fatalf("stream resumed after done: %+v", evs)
	}
	// Last-Event-ID resumes after that event.
	evs = streamAll(t, env.URL, p.Key, jobID, strconv.Itoa(prev-2))
	if len(evs) != 2 || evs[0].Type != "progress" || evs[1].Type != "done" {
		t.Fatalf("resumed stream: %+v", evs)
	}

	// The list: newest first, with pagination and filters.
	second := env.Do("POST", "/v1/images", p.Key, map[string]any{"prompt": "Second"}).Expect(t, 202).JSON(t)
	env.WaitJob(t, p.Key, second["id"].(string))
	l := env.Do("GET", "/v1/jobs?limit=1", p.Key, nil).Expect(t, 200).JSON(t)
	data := l["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["id"] != second["id"] || l["has_more"] != true {
		t.Fatalf("list page 1: %v", l)
	}
	l = env.Do("GET", "/v1/jobs?limit=1&cursor="+l["next_cursor"].(string), p.Key, nil).Expect(t, 200).JSON(t)
	data = l["data"].([]any)
	if len(data) != 1 || data[0].(map[string]any)["id"] != jobID || l["has_more"] != false || l["next_cursor"] != nil {
		t.Fatalf("list page 2: %v", l)
	}
	l = env.Do("GET", "/v1/jobs?status=failed", p.Key, nil).Expect(t, 200).JSON(t)
	if len(l["data"].([]any)) != 0 {
		t.Fatalf("status filter: %v", l)
	}
	env.Do("GET", "/v1/jobs?status=done", p.Key, nil).Problem(t, 422, "validation_failed")

	// Jobs are per project.
	other := env.NewProject("build")
	env.Do("GET", "/v1/jobs/"+jobID, other.Key, nil).Problem(t, 404, "not_found")
	env.Do("GET", "/v1/jobs/"+jobID+"/stream", other.Key, nil).Problem(t, 404, "not_found")
	if l := env.Do("GET", "/v1/jobs", other.Key, nil).Expect(t, 200).JSON(t); len(l["data"].([]any)) != 0 {
		t.Fatalf("another project's list: %v", l)
	}
}

func TestImageSubmitValidation(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	cases := []struct {
		name   string
		body   any
		status int
		code   string
	}{
		{"no prompt", map[string]any{"width": 100}, 400, "bad_request"},
		{"unknown field", map[string]any{"prompt": "x", "style": "y"}, 400, "bad_request"},
		{"empty prompt", map[string]any{"prompt": "  "}, 422, "validation_failed"},
		{"too wide", map[string]any{"prompt": "x", "width": 5000}, 422, "validation_failed"},
		{"too small", map[string]any{"prompt": "x", "height": 10}, 422, "validation_failed"},
		{"wrong type", map[string]any{"prompt": "x", "width": "big"}, 422, "validation_failed"},
		{"not json", "prompt=x", 400, "bad_request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env.Do("POST", "/v1/images", p.Key, c.body).Problem(t, c.status, c.code)
		})
	}
	// Scopes: images:write submits; jobs:read alone cannot.
	env.Do("POST", "/v1/images", p.NewKey(false, "jobs:read"), map[string]any{"prompt": "x"}).Problem(t, 403, "forbidden")
	env.Do("POST", "/v1/images", p.NewKey(false, "images:write"), map[string]any{"prompt": "x"}).Expect(t, 202)
	env.Do("GET", "/v1/jobs", p.NewKey(false, "images:write"), nil).Problem(t, 403, "forbidden")

	// 402 with cost and balance when the balance is short; nothing is queued.
	poor := env.NewProject("free") // 100 credits
	for range 10 {
		env.Do("POST", "/v1/images", poor.Key, map[string]any{"prompt": "x"}).Expect(t, 202)
	}
	m := env.Do("POST", "/v1/images", poor.Key, map[string]any{"prompt": "x"}).Problem(t, 402, "insufficient_credits")
	if m["cost"] != float64(10) || m["balance"] != float64(0) {
		t.Fatalf("402: %v", m)
	}
	if l := env.Do("GET", "/v1/jobs?limit=100", poor.Key, nil).Expect(t, 200).JSON(t); len(l["data"].([]any)) != 10 {
		t.Fatalf("jobs after a 402: %d", len(l["data"].([]any)))
	}
}
