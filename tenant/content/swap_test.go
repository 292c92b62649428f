package content_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// origin serves test images over plain HTTP on loopback (reachable with
// PLINTH_DEV=1 only) and counts requests.
func origin(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var hits atomic.Int64
	jpg, png := jpegOf(320, 200), pngOf(50, 40)
	big := append(pngOf(8, 8), make([]byte, 10<<20)...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		switch r.URL.Path {
		case "/new.jpg":
			w.Write(jpg)
		case "/other.png":
			w.Write(png)
		case "/page.html":
			w.Header().Set("Content-Type", "image/png") // a lying header: the content decides
			w.Write([]byte("<html><body>not an image</body></html>"))
		case "/big.png":
			w.Write(big)
		case "/moved":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data", http.StatusFound)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestImageURLSwap(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // PLINTH_DEV=1: loopback origins are allowed
	p := env.NewProject("build")
	ro := p.NewKey(false, "images:read")
	src, _ := origin(t)
	hero := form("hero.png", pngOf(120, 80), "key", "hero", "alt", "Team")
	env.Send(apitest.Request{Method: "POST", Path: "/v1/images", Key: p.Key, Body: hero.Body, Header: hero.Header}).Expect(t, 201)
	var mediaURL string

	run(t, env, p, []apiCase{
		{name: "swap", method: "PUT", path: "/v1/images/hero", body: map[string]any{"url": src.URL + "/new.jpg"}, status: 200, credits: 1,
			golden: "image_swap", check: func(t *testing.T, r *apitest.Resp) {
				m := r.JSON(t)
				mediaURL = m["url"].(string)
				if m["alt"] != "Team" || m["source"] != "url" || m["width"] != float64(320) || m["content_type"] != "image/jpeg" {
					t.Fatalf("swap kept alt, records the new image: %v", m)
				}
				status, h, b := media(t, env, mediaURL, nil)
				if status != 200 || h.Get("Content-Type") != "image/jpeg" || !bytes.Equal(b, jpegOf(320, 200)) {
					t.Fatalf("media after swap: %d %v", status, h)
				}
			}},
		{name: "swap creates a key", method: "PUT", path: "/v1/images/banner", body: map[string]any{"url": src.URL + "/other.png", "alt": "Banner"},
			status: 200, credits: 1, check: body("key:banner", "alt:Banner", "width:50", "source:url")},
		{name: "swap not an image", method: "PUT", path: "/v1/images/hero", body: map[string]any{"url": src.URL + "/page.html"}, status: 422, check: field("url")},
		{name: "swap 404 origin", method: "PUT", path: "/v1/images/hero", body: map[string]any{"url": src.URL + "/gone.png"}, status: 422, check: field("url")},
		{name: "swap redirect not followed", method: "PUT", path: "/v1/images/hero", body: map[string]any{"url": src.URL + "/moved"}, status: 422, check: field("url")},
		{name: "swap too big", method: "PUT", path: "/v1/images/hero", body: map[string]any{"url": src.URL + "/big.png"}, status: 422, check: field("url")},
		{name: "swap not a url", method: "PUT", path: "/v1/images/hero", body: map[string]any{"url": "hero.png"}, status: 422, check: field("url")},
		{name: "swap link-local", method: "PUT", path: "/v1/images/hero", body: map[string]any{"url": "http://169.254.169.254/latest"}, status: 422, check: field("url")},
		{name: "swap bad key", method: "PUT", path: "/v1/images/Bad%20Key", body: map[string]any{"url": src.URL + "/new.jpg"}, status: 422, check: field("key")},
		{name: "swap without url", method: "PUT", path: "/v1/images/hero", body: map[string]any{"alt": "x"}, status: 400},
		{name: "swap bad json", method: "PUT", path: "/v1/images/hero", body: "{", status: 400},
		{name: "swap unknown field", method: "PUT", path: "/v1/images/hero", body: map[string]any{"url": "x", "width": 3}, status: 400},
		{name: "swap without key", method: "PUT", path: "/v1/images/hero", key: noKey, body: map[string]any{"url": "x"}, status: 401},
		{name: "swap read-only", method: "PUT", path: "/v1/images/hero", key: ro, body: map[string]any{"url": "x"}, status: 403, check: body("images:write")},
		{name: "the image is unchanged by refusals", method: "GET", path: "/v1/images/hero", status: 200, check: body("content_type:image/jpeg", "width:320")},
	})
	if n := ledgerOps(t, p, "image_register"); n != 3 {
		t.Fatalf("%d image_register charges, want 3", n)
	}
	poor := env.NewProject("free")
	drain(t, poor, 0)
	run(t, env, poor, []apiCase{
		{name: "swap with no credits", method: "PUT", path: "/v1/images/x", body: map[string]any{"url": src.URL + "/new.jpg"}, status: 402},
		{name: "nothing registered", method: "GET", path: "/v1/images/x", status: 404},
	})
}

// TestImageURLSwapGuard: outside dev mode, loopback and private origins
// are refused before anything is fetched.
func TestImageURLSwapGuard(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithEnv("PLINTH_DEV", "0"))
	p := env.NewProject("build")
	src, hits := origin(t)
	for _, u := range []string{
		src.URL + "/new.jpg", // loopback, and plain http
		strings.Replace(src.URL, "http://", "https://", 1) + "/new.jpg", // loopback over https
		"https://10.0.0.1/x.png", "https://192.168.1.1/x.png", "https://[::1]/x.png", "https://169.254.169.254/x.png",
	} {
		m := env.Do("PUT", "/v1/images/hero", p.Key, map[string]any{"url": u}).Problem(t, 422, "validation_failed")
		if _, ok := m["errors"].(map[string]any)["url"]; !ok {
			t.Fatalf("%s: %v", u, m)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the guard let %d requests reach the origin", hits.Load())
	}
	if spent(t, p) != 0 {
		t.Fatal("refused swaps cost nothing")
	}
}
