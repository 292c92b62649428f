package central_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/provisioning/archive"
)

// hostileHTML is blog content an archive may carry that no write stores.
const hostileHTML = `<p onclick="steal()">Hi</p><script>fetch("/central/api/projects")</script><img src="x" onerror="alert(1)">`

// victimMedia is what a crafted archive reaches for: another project's
// uploaded image and logo, and an export archive in the store.
type victimMedia struct {
	project       *apitest.Project
	image, logo   string // object keys
	imageBytes    []byte
	exportArchive string
}

func newVictim(t *testing.T, env *apitest.Env) victimMedia {
	t.Helper()
	v := victimMedia{project: env.NewProject("build"), imageBytes: webp(t),
		exportArchive: storage.ExportsPrefix + "/exp_0000000000000000000000VV.tar.gz"}
	upload(t, env, v.project.Key, "/v1/images", v.imageBytes, "key", "secret").Expect(t, 201)
	upload(t, env, v.project.Key, "/v1/brand/logo", webp(t)).Expect(t, 200)
	ctx := context.Background()
	s := v.project.Schema
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT object FROM `+pgx.Identifier{s, "images"}.Sanitize()+` WHERE key = 'secret'`).Scan(&v.image))
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT logo_object FROM `+pgx.Identifier{s, "brand"}.Sanitize()).Scan(&v.logo))
	_, err := env.Server.Store.Put(ctx, v.exportArchive, strings.NewReader("the victim's whole project"))
	require.NoError(t, err)
	return v
}

// intact checks that the victim's media and the export archive are still
// stored and that the victim still serves its image.
func (v victimMedia) intact(t *testing.T, env *apitest.Env) {
	t.Helper()
	for _, k := range []string{v.image, v.logo, v.exportArchive} {
		o, err := env.Server.Store.Open(context.Background(), k)
		require.NoError(t, err, "object %s", k)
		o.Close()
	}
	require.Equal(t, v.imageBytes, env.Do("GET", "/v1/public/media/"+v.project.ID+"/secret", "", nil).Expect(t, 200).Body)
}

// sourceArchive is a real export of a free project with an uploaded
// image (key hero), a logo and a blog post: the base of the crafted
// archives, split into its manifest and its other entries.
type sourceArchive struct {
	id    string
	m     archive.Manifest
	files []entry
}

func newSource(t *testing.T, env *apitest.Env) sourceArchive {
	t.Helper()
	src := env.NewProject("free")
	upload(t, env, src.Key, "/v1/images", webp(t), "key", "hero", "alt", "Hero").Expect(t, 201)
	upload(t, env, src.Key, "/v1/brand/logo", webp(t)).Expect(t, 200)
	env.Do("POST", "/v1/blog-posts", src.Key, map[string]any{"title": "Post", "content": "<p>Post</p>"}).Expect(t, 201)
	var buf bytes.Buffer
	_, err := env.Server.Central.ExportProject(context.Background(), src.ID, &buf)
	require.NoError(t, err)
	files := untar(t, buf.Bytes())
	var m archive.Manifest
	require.NoError(t, json.Unmarshal(files[0].data, &m))
	return sourceArchive{id: src.ID, m: m, files: files[1:]}
}

// with returns the archive with edit applied to a copy of its entries,
// the manifest's row counts and media sizes made to agree with them.
func (a sourceArchive) with(t *testing.T, edit func(m *archive.Manifest, files map[string][]byte)) []byte {
	t.Helper()
	m := a.m
	m.Tables, m.Media = append([]archive.Table{}, a.m.Tables...), append([]archive.Media{}, a.m.Media...)
	files := map[string][]byte{}
	for _, e := range a.files {
		files[e.name] = e.data
	}
	if edit != nil {
		edit(&m, files)
	}
	out := []entry{{}}
	for i, tb := range m.Tables {
		m.Tables[i].Rows = int64(bytes.Count(files[tb.File], []byte("\n")))
		out = append(out, entry{tb.File, files[tb.File]})
	}
	for i, md := range m.Media {
		m.Media[i].Size = int64(len(files[md.File]))
		out = append(out, entry{md.File, files[md.File]})
	}
	mb, err := json.Marshal(m)
	require.NoError(t, err)
	out[0] = entry{archive.ManifestName, mb}
	return retar(t, out)
}

// editRows rewrites every row of a table's file.
func editRows(t *testing.T, files map[string][]byte, table string, edit func(row map[string]any)) {
	t.Helper()
	var out []byte
	for _, line := range bytes.Split(bytes.TrimSpace(files["tables/"+table+".ndjson"]), []byte("\n")) {
		var row map[string]any
		require.NoError(t, json.Unmarshal(line, &row))
		edit(row)
		b, err := json.Marshal(row)
		require.NoError(t, err)
		out = append(append(out, b...), '\n')
	}
	files["tables/"+table+".ndjson"] = out
}

// crafted is an archive made to attack an import, and its answer.
type crafted struct {
	name    string
	archive []byte
	status  int
	detail  string // in the 422's errors.file or the 403's detail
}

// craftedArchives are the archives of the review (issue 33) and the
// bounds of an import, built from a real export of a free project: rows
// that name another project's media, an export archive or a path that
// climbs out of the project's prefix; a logo outside it; a media object
// that is HTML; a media object larger than an upload, a row larger than
// the row limit, entries inflating far past the archive's size; a plan
// other than free (403 without projects:admin). The neutralised ones (a
// text/html content type, script in the blog) are in
// TestImportNeutralisesCraftedRows.
func craftedArchives(t *testing.T, a sourceArchive, v victimMedia) []crafted {
	t.Helper()
	object := func(o string) func(*archive.Manifest, map[string][]byte) {
		return func(_ *archive.Manifest, files map[string][]byte) {
			editRows(t, files, "images", func(row map[string]any) { row["object"] = o })
		}
	}
	var out []crafted
	refused := func(name string, archive []byte, detail string) {
		out = append(out, crafted{name, archive, 422, detail})
	}
	refused("another project's image", a.with(t, object(v.image)), "image hero: its object")
	refused("an export archive", a.with(t, object(v.exportArchive)), "image hero: its object")
	refused("climbing out of the prefix", a.with(t, object(a.id+"/../"+v.image)), "image hero: its object")
	refused("the source's id spelled as another's", a.with(t, func(m *archive.Manifest, files map[string][]byte) {
		m.Project.ID = "prj_" + strings.Repeat("Z", 24) // the rows' id is then not replaced
	}), "image hero: its object")
	refused("a logo outside the prefix", a.with(t, func(_ *archive.Manifest, files map[string][]byte) {
		editRows(t, files, "brand", func(row map[string]any) { row["logo_object"] = v.logo })
	}), "brand: its logo object")
	refused("a media object that is HTML", a.with(t, func(m *archive.Manifest, files map[string][]byte) {
		files[m.Media[0].File] = []byte(`<!doctype html><script>fetch("/central/api/projects")</script>`)
	}), "must be a PNG, JPEG, GIF or WebP image (the content is text/html)")
	refused("a media object larger than an upload", a.with(t, func(m *archive.Manifest, files map[string][]byte) {
		files[m.Media[0].File] = append(files[m.Media[0].File], make([]byte, 10<<20)...)
	}), "more than the 10485760 an image may have")
	refused("a row larger than the limit", a.with(t, func(m *archive.Manifest, files map[string][]byte) {
		editRows(t, files, "images", func(row map[string]any) { row["alt"] = strings.Repeat(" ", 9<<20) })
	}), "row 1 is larger than 8388608 bytes")
	refused("entries inflating past the ratio", a.with(t, func(m *archive.Manifest, files map[string][]byte) {
		var rows []byte
		for _, k := range []string{"k1", "k2", "k3"} { // 21 MiB from some 21 KiB
			row, _ := json.Marshal(map[string]any{"key": k, "lang": "en", "value": strings.Repeat(" ", 7<<20), "updated_at": "2026-01-01T00:00:00Z"})
			rows = append(append(rows, row...), '\n')
		}
		files["tables/content_values.ndjson"] = rows
	}), "inflates to more than 16777216 bytes")
	out = append(out, crafted{"a plan other than free", a.with(t, func(m *archive.Manifest, _ map[string][]byte) { m.Project.Plan = "scale" }),
		403, "projects:admin"})
	return out
}

// TestImportRefusesCraftedArchives: each crafted archive of the review is
// refused with its reason (issue 33): a 422 on file, or the 403 of a plan
// the token may not choose; no project is created, and the other
// project's media and the export archive are still stored and served.
func TestImportRefusesCraftedArchives(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	v := newVictim(t, env)
	a := newSource(t, env)
	// exports and projects, not projects:admin: a plan other than free
	// is refused, as on create.
	admin := &adminAPI{env: env, token: adminToken(t, env, "exports:write", "projects:write")}
	projects := func() int { return projectCount(t, env) }
	before := projects()
	tenant := fmt.Sprint(env.TenantID())
	for _, c := range craftedArchives(t, a, v) {
		t.Run(c.name, func(t *testing.T) {
			body, ct := importForm(c.archive, "tenant_id", tenant)
			res := admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct)
			if c.status == 403 {
				require.Contains(t, res.Problem(t, 403, "forbidden")["detail"], c.detail)
				return
			}
			p := res.Problem(t, 422, "validation_failed")
			require.Contains(t, fmt.Sprint(p["errors"].(map[string]any)["file"]), c.detail)
		})
	}
	require.Equal(t, before, projects())
	v.intact(t, env)

	// The plan the token may not choose, with projects:admin.
	owner := &adminAPI{env: env, token: adminToken(t, env, "exports:write", "projects:write", "projects:admin")}
	body, ct := importForm(a.with(t, func(m *archive.Manifest, _ map[string][]byte) { m.Project.Plan = "scale" }), "tenant_id", tenant)
	require.Equal(t, "scale", owner.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Expect(t, 201).JSON(t)["plan"])
	// And a free one without it.
	body, ct = importForm(a.with(t, nil), "tenant_id", tenant)
	require.Equal(t, "free", admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Expect(t, 201).JSON(t)["plan"])
}

// TestImportNeutralisesCraftedRows: what an archive states of its media
// and its blog is not kept as stated. An image row that says text/html
// (over the bytes of a WebP) and names a URL elsewhere gets the type and
// size the import found in its bytes and this server's media URL (under
// PLINTH_MEDIA_URL, a separate origin), and is served as image/webp in a
// sandbox; the logo's URL too; the blog's HTML and texts go through the
// sanitisers of a write. Uploads answer URLs under PLINTH_MEDIA_URL.
func TestImportNeutralisesCraftedRows(t *testing.T) {
	t.Parallel()
	const mediaBase = "https://media.plinth-usercontent.test"
	env := apitest.New(t, apitest.WithEnv("PLINTH_MEDIA_URL", mediaBase+"/"))
	ctx := context.Background()
	a := newSource(t, env)
	p := env.NewProject("free")
	require.Equal(t, mediaBase+"/v1/public/media/"+p.ID+"/x", upload(t, env, p.Key, "/v1/images", webp(t), "key", "x").Expect(t, 201).JSON(t)["url"])
	require.Equal(t, mediaBase+"/v1/public/media/"+p.ID+"/_logo", upload(t, env, p.Key, "/v1/brand/logo", webp(t)).Expect(t, 200).JSON(t)["logo_url"])

	crafted := a.with(t, func(_ *archive.Manifest, files map[string][]byte) {
		editRows(t, files, "images", func(row map[string]any) {
			row["content_type"], row["url"], row["size_bytes"], row["width"] = "text/html", "https://evil.example/x", 1, 99999
		})
		editRows(t, files, "brand", func(row map[string]any) { row["logo_url"] = "https://evil.example/logo" })
		files["tables/blog_terms.ndjson"] = []byte(`{"id":7,"kind":"category","name":"<script>alert(1)</script>Food","slug":"food","created_at":"2026-01-01T00:00:00+00:00"}` + "\n")
		editRows(t, files, "blog_posts", func(row map[string]any) {
			for _, text := range row["texts"].(map[string]any) {
				text := text.(map[string]any)
				text["content"], text["title"], text["excerpt"] = hostileHTML, "<script>alert(1)</script>Title", `<img src=x onerror=alert(1)>Short`
			}
		})
	})
	admin := &adminAPI{env: env, token: adminToken(t, env, "exports:write", "projects:write")}
	body, ct := importForm(crafted, "tenant_id", fmt.Sprint(env.TenantID()))
	copyID := admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Expect(t, 201).JSON(t)["id"].(string)
	key, err := env.Server.Central.MintKey(ctx, copyID, "test", []string{"*"}, nil, false)
	require.NoError(t, err)

	img := env.Do("GET", "/v1/images/hero", key.Secret, nil).Expect(t, 200).JSON(t)
	require.Equal(t, "image/webp", img["content_type"])
	require.Equal(t, mediaBase+"/v1/public/media/"+copyID+"/hero", img["url"])
	require.EqualValues(t, len(webp(t)), img["size_bytes"])
	require.EqualValues(t, 1, img["width"])
	require.Equal(t, mediaBase+"/v1/public/media/"+copyID+"/_logo", env.Do("GET", "/v1/brand", key.Secret, nil).Expect(t, 200).JSON(t)["logo_url"])
	for _, k := range []string{"hero", "_logo"} {
		res := env.Do("GET", "/v1/public/media/"+copyID+"/"+k, "", nil).Expect(t, 200)
		require.Equal(t, "image/webp", res.Header.Get("Content-Type"))
		require.Equal(t, "sandbox; default-src 'none'", res.Header.Get("Content-Security-Policy"))
		require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	}

	posts := env.Do("GET", "/v1/blog-posts", key.Secret, nil).Expect(t, 200).JSON(t)["data"].([]any)
	require.Len(t, posts, 1)
	post := posts[0].(map[string]any)
	copied, err := env.Server.Central.Project(ctx, copyID)
	require.NoError(t, err)
	stored := fmt.Sprint(importedRow(t, env, copied.Schema, "blog_posts", "true")["texts"])
	for _, bad := range []string{"<script", "onerror", "onclick", "<img src=x"} {
		require.NotContains(t, strings.ToLower(stored), strings.ToLower(bad))
	}
	require.Contains(t, stored, "<p>Hi</p>")
	require.Equal(t, "Title", post["title"])
	require.Equal(t, "Short", post["excerpt"])
	cats := env.Do("GET", "/v1/categories", key.Secret, nil).Expect(t, 200).JSON(t)["data"].([]any)
	require.Len(t, cats, 1)
	require.Equal(t, "Food", cats[0].(map[string]any)["name"])
}

// importedRow reads one row of a table of the project as JSON.
func importedRow(t *testing.T, env *apitest.Env, schema, table, where string) map[string]any {
	t.Helper()
	var b []byte
	require.NoError(t, env.DB.Pool.QueryRow(context.Background(), `SELECT row_to_json(t)::text FROM `+pgx.Identifier{schema, table}.Sanitize()+` t WHERE `+where).Scan(&b))
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}
