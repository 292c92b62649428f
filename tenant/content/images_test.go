package content_test

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plinth-dev/plinth/central/apitest"
)

// media fetches a public media URL and returns its status, content type
// and body.
func media(t *testing.T, env *apitest.Env, url string, header map[string]string) (int, http.Header, []byte) {
	t.Helper()
	_, path, ok := strings.Cut(url, "/v1/")
	if !ok {
		t.Fatalf("not an API URL: %s", url)
	}
	req, _ := http.NewRequest("GET", env.URL+"/v1/"+path, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header, b
}

func TestImagesAPI(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	subscribe(t, env, p)
	ro := p.NewKey(false, "images:read")
	other := p.NewKey(false, "content:*")
	hero := pngOf(120, 80)
	big := append(pngOf(16, 16), make([]byte, 10<<20)...)
	svg := []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`)
	badHeader := append(pngOf(40, 40)[:8], []byte("not an IHDR chunk at all")...)

	up := func(filename string, data []byte, fields ...string) *apitest.Request {
		r := form(filename, data, fields...)
		return &r
	}
	var heroURL string
	run(t, env, p, []apiCase{
		{name: "upload png with key", method: "POST", path: "/v1/images", req: up("Hero Shot.png", hero, "key", "hero", "alt", "Our team"),
			status: 201, credits: 1, golden: "image_upload", check: func(t *testing.T, r *apitest.Resp) {
				heroURL = r.JSON(t)["url"].(string)
				status, h, b := media(t, env, heroURL, nil)
				if status != 200 || h.Get("Content-Type") != "image/png" || !bytes.Equal(b, hero) || h.Get("Cache-Control") != "public, max-age=60" || h.Get("ETag") == "" {
					t.Fatalf("media: %d %v (%d bytes)", status, h, len(b))
				}
				if status, _, _ := media(t, env, heroURL, map[string]string{"If-None-Match": h.Get("ETag")}); status != 304 {
					t.Fatalf("media revalidation: %d", status)
				}
			}},
		{name: "upload jpeg derives key from file name", method: "POST", path: "/v1/images", req: up("Team Photo.JPG", jpegOf(64, 48)),
			status: 201, credits: 1, check: body("key:team-photo", "content_type:image/jpeg", "width:64", "height:48", "source:upload")},
		{name: "upload again derives -2", method: "POST", path: "/v1/images", req: up("team photo.jpg", jpegOf(10, 10)),
			status: 201, credits: 1, check: body("key:team-photo-2")},
		{name: "upload gif", method: "POST", path: "/v1/images", req: up("a.gif", gifOf(3, 5)), status: 201, credits: 1, check: body("content_type:image/gif", "width:3", "height:5")},
		{name: "upload webp", method: "POST", path: "/v1/images", req: up("w.webp", webp1x1()), status: 201, credits: 1, check: body("content_type:image/webp", "width:1")},
		{name: "upload key taken", method: "POST", path: "/v1/images", req: up("x.png", hero, "key", "hero"), status: 409},
		{name: "upload svg refused", method: "POST", path: "/v1/images", req: up("x.svg", svg), status: 422, check: field("file")},
		{name: "upload text refused", method: "POST", path: "/v1/images", req: up("x.png", []byte("hello, world")), status: 422, check: field("file")},
		{name: "upload png with a broken header", method: "POST", path: "/v1/images", req: up("x.png", badHeader), status: 422, check: field("file")},
		{name: "upload empty file", method: "POST", path: "/v1/images", req: up("x.png", []byte{}), status: 422, check: field("file")},
		{name: "upload over 10 MiB", method: "POST", path: "/v1/images", req: up("big.png", big), status: 413},
		{name: "upload bad key", method: "POST", path: "/v1/images", req: up("x.png", hero, "key", "Bad Key"), status: 422, check: field("key")},
		{name: "upload long alt", method: "POST", path: "/v1/images", req: up("x.png", hero, "alt", strings.Repeat("a", 1001)), status: 422, check: field("alt")},
		{name: "upload nul in alt", method: "POST", path: "/v1/images", req: up("x.png", hero, "alt", "a\x00b"), status: 400, check: body(`"alt"`)},
		{name: "upload invalid utf-8 key", method: "POST", path: "/v1/images", req: up("x.png", hero, "key", "\xff"), status: 400, check: body(`"key"`)},
		{name: "upload without file", method: "POST", path: "/v1/images", req: up("", nil, "key", "x"), status: 400},
		{name: "upload unknown field", method: "POST", path: "/v1/images", req: up("x.png", hero, "caption", "x"), status: 400},
		{name: "upload broken multipart", method: "POST", path: "/v1/images", req: &apitest.Request{Body: []byte("--zz\r\nnope"),
			Header: map[string]string{"Content-Type": "multipart/form-data; boundary=zz"}}, status: 400},
		{name: "upload without key", method: "POST", path: "/v1/images", key: noKey, req: up("x.png", hero), status: 401},
		{name: "upload read-only", method: "POST", path: "/v1/images", key: ro, req: up("x.png", hero), status: 403, check: body("images:write")},
		{name: "upload content key", method: "POST", path: "/v1/images", key: other, req: up("x.png", hero), status: 403},

		// POST /images with JSON: image.generate (its own tests run the job).
		{name: "generate", method: "POST", path: "/v1/images", body: map[string]any{"prompt": "a lighthouse"}, status: 202, credits: 10, check: body("type:image.generate", "status:pending")},
		{name: "generate without prompt", method: "POST", path: "/v1/images", body: map[string]any{}, status: 400},
		{name: "generate bad size", method: "POST", path: "/v1/images", body: map[string]any{"prompt": "x", "width": 5}, status: 422, check: field("width")},

		{name: "get", method: "GET", path: "/v1/images/hero", key: ro, status: 200, golden: "image_upload"},
		{name: "get missing", method: "GET", path: "/v1/images/nope", status: 404},
		{name: "get without key", method: "GET", path: "/v1/images/hero", key: noKey, status: 401},
		{name: "get content key", method: "GET", path: "/v1/images/hero", key: other, status: 403, check: body("images:read")},
		{name: "list", method: "GET", path: "/v1/images?limit=2", key: ro, status: 200, check: func(t *testing.T, r *apitest.Resp) {
			m := firstPage(t, r, 2, "key", "w")
			var keys []string
			for c := m["next_cursor"]; c != nil; {
				pg := env.Do("GET", "/v1/images?limit=2&cursor="+c.(string), p.Key, nil).Expect(t, 200).JSON(t)
				for _, it := range pg["data"].([]any) {
					keys = append(keys, it.(map[string]any)["key"].(string))
				}
				c = pg["next_cursor"]
			}
			if strings.Join(keys, ",") != "team-photo-2,team-photo,hero" {
				t.Fatalf("later pages: %v", keys)
			}
		}},
		{name: "list by source", method: "GET", path: "/v1/images?source=url", status: 200, check: body("data:[]")},
		{name: "list bad source", method: "GET", path: "/v1/images?source=x", status: 422, check: field("source")},
		{name: "list without key", method: "GET", path: "/v1/images", key: noKey, status: 401},
		{name: "list content key", method: "GET", path: "/v1/images", key: other, status: 403},

		{name: "delete", method: "DELETE", path: "/v1/images/team-photo-2", status: 204},
		{name: "delete again", method: "DELETE", path: "/v1/images/team-photo-2", status: 404},
		{name: "deleted media is gone", method: "GET", path: "/v1/public/media/" + p.ID + "/team-photo-2", key: noKey, status: 404},
		{name: "delete without key", method: "DELETE", path: "/v1/images/hero", key: noKey, status: 401},
		{name: "delete read-only", method: "DELETE", path: "/v1/images/hero", key: ro, status: 403},
		{name: "media of another project id", method: "GET", path: "/v1/public/media/prj_000000000000000000000000/hero", key: noKey, status: 404},
	})
	if n := ledgerOps(t, p, "image_register"); n != 5 {
		t.Fatalf("%d image_register charges, want 5", n)
	}
	if n := query[int](t, p, `SELECT count(*) FROM images`); n != 4 {
		t.Fatalf("%d images, want 4", n)
	}

	poor := env.NewProject("free")
	drain(t, poor, 0)
	run(t, env, poor, []apiCase{
		{name: "upload with no credits", method: "POST", path: "/v1/images", req: up("x.png", hero, "key", "x"), status: 402, check: body("cost:1", "balance:0")},
		{name: "nothing registered", method: "GET", path: "/v1/images/x", status: 404},
		{name: "generate with no credits", method: "POST", path: "/v1/images", body: map[string]any{"prompt": "x"}, status: 402, check: body("cost:10", "balance:0")},
	})
	// The refused upload's bytes were removed again.
	dir := strings.TrimPrefix(env.Config.Storage, "file://")
	if left, _ := filepath.Glob(filepath.Join(dir, poor.ID, "*", "*")); len(left) != 0 {
		t.Fatalf("a refused upload left %v", left)
	}
	if kept, _ := filepath.Glob(filepath.Join(dir, p.ID, "_u", "hero.*")); len(kept) != 1 {
		t.Fatalf("hero's object: %v", kept)
	}
}

// TestGeneratedImage runs image.generate through the workers: the image is
// registered with source ai, listed, served as media, and image.generated
// is emitted with the Image.
func TestGeneratedImage(t *testing.T) {
	t.Parallel()
	env := apitest.New(t, apitest.WithWorkers())
	p := env.NewProject("build")
	subscribe(t, env, p)
	j := env.Do("POST", "/v1/images", p.Key, map[string]any{"prompt": "A lighthouse at dawn", "width": 96, "height": 64}).Expect(t, 202).JSON(t)
	done := env.WaitJob(t, p.Key, j["id"].(string))
	res, _ := done["result"].(map[string]any)
	if done["status"] != "completed" || res["width"] != float64(96) || res["height"] != float64(64) {
		t.Fatalf("job: %v", done)
	}
	key := res["key"].(string)
	img := env.Do("GET", "/v1/images/"+key, p.Key, nil).Expect(t, 200).JSON(t)
	if img["source"] != "ai" || img["url"] != res["url"] || img["width"] != float64(96) {
		t.Fatalf("image: %v", img)
	}
	status, h, b := media(t, env, img["url"].(string), nil)
	if status != 200 || h.Get("Content-Type") != img["content_type"] || int64(len(b)) != int64(img["size_bytes"].(float64)) {
		t.Fatalf("media: %d %v %d bytes", status, h, len(b))
	}
	if n := events(t, p, topicGenerated); n != 1 {
		t.Fatalf("%d image.generated events, want 1", n)
	}
	if d := lastEvent(t, p, topicGenerated); !strings.Contains(d, `"key": "`+key+`"`) || !strings.Contains(d, `"source": "ai"`) {
		t.Fatalf("event data: %s", d)
	}
	env.Do("DELETE", "/v1/images/"+key, p.Key, nil).Expect(t, 204)
	if status, _, _ := media(t, env, img["url"].(string), nil); status != 404 {
		t.Fatalf("deleted generated media: %d", status)
	}
}
