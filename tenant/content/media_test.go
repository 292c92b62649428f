package content_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant/content"
)

// exec runs statements in the project's schema: rows written as a bad
// import or a bad migration could have left them, not as the API does.
func exec(t *testing.T, p *apitest.Project, sql string, args ...any) {
	t.Helper()
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		_, err := tx.Exec(context.Background(), sql, args...)
		return err
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// stored reads an object of the whole store ("" when absent).
func stored(t *testing.T, env *apitest.Env, key string) string {
	t.Helper()
	o, err := env.Server.Store.Open(context.Background(), key)
	if errors.Is(err, storage.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	b, _ := io.ReadAll(o)
	return string(b)
}

// TestMediaNeverServedAsHTML: media are served with a type of the fixed
// list their bytes show, never the type a row states, and in a sandbox:
// an image whose row says text/html is served as the image it is, and
// HTML stored as media (under an image's key, as an upload's object or
// as the logo) is served as application/octet-stream with
// Content-Security-Policy: sandbox and nosniff, so a browser never runs
// it in the API's origin.
func TestMediaNeverServedAsHTML(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	ctx := context.Background()
	hero := pngOf(20, 10)
	up := form("hero.png", hero, "key", "hero")
	env.Send(apitest.Request{Method: "POST", Path: "/v1/images", Key: p.Key, Body: up.Body, Header: up.Header}).Expect(t, 201)
	exec(t, p, `UPDATE images SET content_type = 'text/html' WHERE key = 'hero'`)

	page := []byte(`<!doctype html><html><body><script>fetch("/central/api/projects")</script></body></html>`)
	for _, k := range []string{p.ID + "/_u/page.x", p.ID + "/generated", p.ID + "/_u/logo.x"} {
		if _, err := env.Server.Media.Put(ctx, k, bytes.NewReader(page)); err != nil {
			t.Fatal(err)
		}
	}
	exec(t, p, `INSERT INTO images (key, url, content_type, source, object) VALUES ('page', 'x', 'text/html', 'upload', $1),
		('generated', 'x', 'text/html; charset=utf-8', 'ai', NULL)`, p.ID+"/_u/page.x")
	exec(t, p, `UPDATE brand SET logo_object = $1`, p.ID+"/_u/logo.x")

	for key, want := range map[string]struct {
		ct   string
		body []byte
	}{
		"hero": {"image/png", hero}, "page": {"application/octet-stream", page}, "generated": {"application/octet-stream", page},
		content.LogoKey: {"application/octet-stream", page},
	} {
		for _, header := range []map[string]string{nil, {"Range": "bytes=0-4"}} {
			status, h, b := media(t, env, env.URL+"/v1/public/media/"+p.ID+"/"+key, header)
			body := want.body
			if header != nil {
				body = body[:5]
			}
			if status/100 != 2 || h.Get("Content-Type") != want.ct || !bytes.Equal(b, body) {
				t.Fatalf("%s %v: %d %q %q", key, header, status, h.Get("Content-Type"), b)
			}
			if h.Get("Content-Security-Policy") != "sandbox; default-src 'none'" || h.Get("X-Content-Type-Options") != "nosniff" {
				t.Fatalf("%s: headers %v", key, h)
			}
		}
	}
}

// TestMediaOfAnotherProject: a row that names an object outside its
// project's prefix (another project's image or logo, an export archive,
// a path that climbs out) serves nothing, and deleting or replacing it
// deletes nothing of the other's: the victim's media and the archive are
// still stored and served.
func TestMediaOfAnotherProject(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	ctx := context.Background()
	victim, attacker := env.NewProject("build"), env.NewProject("build")
	secret := jpegOf(30, 20)
	up := form("secret.jpg", secret, "key", "secret")
	env.Send(apitest.Request{Method: "POST", Path: "/v1/images", Key: victim.Key, Body: up.Body, Header: up.Header}).Expect(t, 201)
	logo := form("logo.png", pngOf(8, 8))
	env.Send(apitest.Request{Method: "POST", Path: "/v1/brand/logo", Key: victim.Key, Body: logo.Body, Header: logo.Header}).Expect(t, 200)
	secretObject := query[string](t, victim, `SELECT object FROM images WHERE key = 'secret'`)
	logoObject := query[string](t, victim, `SELECT logo_object FROM brand`)
	archive := storage.ExportsPrefix + "/exp_0000000000000000000000AA.tar.gz"
	if _, err := env.Server.Store.Put(ctx, archive, strings.NewReader("the victim's whole project")); err != nil {
		t.Fatal(err)
	}

	foreign := map[string]string{
		"stolen":  secretObject,
		"archive": archive,
		"climb":   attacker.ID + "/../" + secretObject,
		"bare":    victim.ID,
	}
	for key, object := range foreign {
		exec(t, attacker, `INSERT INTO images (key, url, content_type, source, object) VALUES ($1, 'x', 'image/jpeg', 'upload', $2)`, key, object)
	}
	exec(t, attacker, `UPDATE brand SET logo_object = $1`, logoObject)

	base := env.URL + "/v1/public/media/" + attacker.ID + "/"
	for key := range foreign {
		if status, _, b := media(t, env, base+key, nil); status != http.StatusNotFound {
			t.Fatalf("%s: %d %q", key, status, b)
		}
	}
	if status, _, _ := media(t, env, base+content.LogoKey, nil); status != http.StatusNotFound {
		t.Fatalf("logo: %d", status)
	}

	// Replacing an image by URL and the logo (each drops the object it
	// replaces) and deleting the rows leave the other's objects alone.
	src, _ := origin(t)
	env.Do("PUT", "/v1/images/stolen", attacker.Key, map[string]any{"url": src.URL + "/other.png"}).Expect(t, 200)
	for key := range foreign {
		env.Do("DELETE", "/v1/images/"+key, attacker.Key, nil).Expect(t, 204)
	}
	newLogo := form("logo.png", pngOf(4, 4))
	env.Send(apitest.Request{Method: "POST", Path: "/v1/brand/logo", Key: attacker.Key, Body: newLogo.Body, Header: newLogo.Header}).Expect(t, 200)
	if stored(t, env, secretObject) != string(secret) || stored(t, env, logoObject) == "" || stored(t, env, archive) != "the victim's whole project" {
		t.Fatal("another project's object was deleted")
	}
	if status, _, b := media(t, env, env.URL+"/v1/public/media/"+victim.ID+"/secret", nil); status != 200 || !bytes.Equal(b, secret) {
		t.Fatalf("the victim's image: %d", status)
	}
	if status, _, _ := media(t, env, env.URL+"/v1/public/media/"+victim.ID+"/"+content.LogoKey, nil); status != 200 {
		t.Fatalf("the victim's logo: %d", status)
	}
}
