package central_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central"
	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/provisioning"
	"github.com/plinth-dev/plinth/provisioning/archive"
)

// adminAPI sends requests to the server's admin API with an admin token
// holding what exports and imports need (projects:admin: the archives'
// projects are not on the free plan), and checks every exchange against
// the OpenAPI document.
type adminAPI struct {
	env   *apitest.Env
	token string
}

func newAdminAPI(t *testing.T, env *apitest.Env) *adminAPI {
	t.Helper()
	return &adminAPI{env: env, token: adminToken(t, env, "exports:read", "exports:write", "projects:write", "projects:admin")}
}

func (a *adminAPI) adminSend(t *testing.T, method, path string, body []byte, contentType string) *apitest.Resp {
	t.Helper()
	req, err := http.NewRequest(method, a.env.URL+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+a.token)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := a.env.HTTP.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	for _, msg := range a.env.Contract.Check(apitest.Exchange{Method: method, Path: path, ReqHeader: req.Header, ReqBody: body,
		Status: res.StatusCode, RespHeader: res.Header, RespBody: b, Routed: true}) {
		t.Errorf("OpenAPI contract: %s", msg)
	}
	return &apitest.Resp{Status: res.StatusCode, Header: res.Header, Body: b}
}

// importForm is the multipart body of POST /admin/api/projects/import.
func importForm(archive []byte, fields ...string) ([]byte, string) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", "project.tar.gz")
	_, _ = fw.Write(archive)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	_ = mw.Close()
	return b.Bytes(), mw.FormDataContentType()
}

// webp is a 1x1 WebP image.
func webp(t *testing.T) []byte {
	b, err := base64.StdEncoding.DecodeString("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")
	require.NoError(t, err)
	return b
}

func upload(t *testing.T, env *apitest.Env, key, path string, data []byte, fields ...string) *apitest.Resp {
	t.Helper()
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	fw, _ := mw.CreateFormFile("file", "hero.webp")
	_, _ = fw.Write(data)
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	_ = mw.Close()
	return env.Send(apitest.Request{Method: "POST", Path: path, Key: key, Body: b.Bytes(), Header: map[string]string{"Content-Type": mw.FormDataContentType()}})
}

// fillProject gives p data in every pillar an export carries, through
// the API: content values, a page, blog posts with translations, an
// uploaded image in a gallery, the brand logo, products, a booking and
// form submissions; and a webhook endpoint, which an import leaves out.
func fillProject(t *testing.T, env *apitest.Env, p *apitest.Project) {
	t.Helper()
	k := p.Key
	env.Do("PUT", "/v1/content/hero.title", k, map[string]any{"value": "Hello\nworld \\ \"quoted\""}).Expect(t, 200)
	env.Do("PUT", "/v1/content/hero.title", k, map[string]any{"value": "Bonjour", "lang": "fr"}).Expect(t, 200)
	env.Do("POST", "/v1/pages", k, map[string]any{"title": "About Us", "sections": []any{map[string]any{"type": "hero", "heading": "Who we are"}},
		"translations": []any{map[string]any{"lang": "fr", "title": "À propos"}}}).Expect(t, 201)
	cat := env.Do("POST", "/v1/categories", k, map[string]any{"name": "Food"}).Expect(t, 201).JSON(t)
	for _, title := range []string{"First", "Second"} {
		post := env.Do("POST", "/v1/blog-posts", k, map[string]any{"title": title, "content": "<p>" + title + "</p>", "category_id": cat["id"]}).Expect(t, 201).JSON(t)
		env.Do("PUT", fmt.Sprintf("/v1/blog-posts/%v/translations/fr", post["id"]), k, map[string]any{"title": title + " (fr)"}).Expect(t, 200)
	}
	img := upload(t, env, k, "/v1/images", webp(t), "key", "hero", "alt", "Hero").Expect(t, 201).JSON(t)
	env.Do("POST", "/v1/galleries", k, map[string]any{"name": "Shop", "items": []any{map[string]any{"url": img["url"], "alt": "Hero"}}}).Expect(t, 201)
	upload(t, env, k, "/v1/brand/logo", webp(t)).Expect(t, 200)
	pc := env.Do("POST", "/v1/product-categories", k, map[string]any{"name": "Mugs"}).Expect(t, 201).JSON(t)
	prod := env.Do("POST", "/v1/products", k, map[string]any{"name": "Blue Mug", "price": 1299, "currency": "usd", "status": "active",
		"category_id": pc["id"]}).Expect(t, 201).JSON(t)
	env.Do("POST", fmt.Sprintf("/v1/products/%v/variants", prod["id"]), k, map[string]any{"name": "Large", "price": 1499}).Expect(t, 201)
	env.Do("PATCH", "/v1/booking/settings", k, map[string]any{"timezone": "UTC", "min_notice_minutes": 0, "max_days_ahead": 30, "auto_confirm": true,
		"weekly_hours": map[string]any{"mon": [][]string{{"09:00", "17:00"}}, "tue": [][]string{{"09:00", "17:00"}}, "wed": [][]string{{"09:00", "17:00"}},
			"thu": [][]string{{"09:00", "17:00"}}, "fri": [][]string{{"09:00", "17:00"}}, "sat": [][]string{{"09:00", "17:00"}}, "sun": [][]string{{"09:00", "17:00"}}}}).Expect(t, 200)
	svc := env.Do("POST", "/v1/booking/services", k, map[string]any{"name": "Massage", "duration_minutes": 60}).Expect(t, 201).JSON(t)
	day := time.Now().UTC().AddDate(0, 0, 2).Format("2006-01-02")
	env.Do("POST", "/v1/bookings", k, map[string]any{"service_id": svc["id"], "start_at": day + "T10:00:00Z",
		"customer": map[string]any{"name": "Ada Lovelace", "email": "ada@example.com"}}).Expect(t, 201)
	pub := map[string]string{"X-Service-Project-Key": p.ID}
	env.Send(apitest.Request{Method: "POST", Path: "/v1/public/forms/newsletter", Body: map[string]any{"email": "ann@example.com"}, Header: pub}).Expect(t, 201)
	env.Send(apitest.Request{Method: "POST", Path: "/v1/public/forms/contact", Header: pub,
		Body: map[string]any{"email": "bob@example.com", "name": "Bob", "message": "Hi"}}).Expect(t, 201)
	env.Do("POST", "/v1/webhook-endpoints", k, map[string]any{"url": "https://example.com/hook", "events": []string{"order.paid"}}).Expect(t, 201)
}

// tableDigests maps every table of schema to its row count and a hash of
// its rows (row_to_json, sorted), with from replaced by to in each row.
func tableDigests(t *testing.T, env *apitest.Env, schema, from, to string) map[string]string {
	t.Helper()
	return tableDigestsOn(t, env.DB.Pool, schema, from, to)
}

// tableDigestsOn is tableDigests of a schema on the shard of pool.
func tableDigestsOn(t *testing.T, pool *pgxpool.Pool, schema, from, to string) map[string]string {
	t.Helper()
	ctx := context.Background()
	rows, err := pool.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = $1`, schema)
	require.NoError(t, err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	out := map[string]string{}
	for _, tb := range tables {
		var n int64
		var sum string
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*), COALESCE(md5(string_agg(j, E'\n' ORDER BY j)), '')
			FROM (SELECT replace(row_to_json(t)::text, $1, $2) j FROM `+pgx.Identifier{schema, tb}.Sanitize()+` t) x`, from, to).Scan(&n, &sum))
		out[tb] = fmt.Sprintf("%d rows %s", n, sum)
	}
	return out
}

// mediaOf reads every media object of a project, by key below its prefix.
func mediaOf(t *testing.T, env *apitest.Env, projectID string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	keys, err := env.Server.Media.List(ctx, projectID+"/")
	require.NoError(t, err)
	out := map[string][]byte{}
	for _, k := range keys {
		o, err := env.Server.Media.Open(ctx, k)
		require.NoError(t, err)
		b, err := io.ReadAll(o)
		o.Close()
		require.NoError(t, err)
		out[strings.TrimPrefix(k, projectID+"/")] = b
	}
	return out
}

func exportStatus(t *testing.T, env *apitest.Env, id string) string {
	t.Helper()
	e, err := env.Server.Central.Export(context.Background(), id)
	require.NoError(t, err)
	return e.Status
}

func waitExport(t *testing.T, env *apitest.Env, id, status string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for exportStatus(t, env, id) != status {
		if time.Now().After(deadline) {
			e, _ := env.Server.Central.Export(context.Background(), id)
			t.Fatalf("export %s: still %s, want %s (error %v)", id, e.Status, status, deref(e.Error))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestExportImportRoundTrip: an export goes pending → running →
// completed as a River job, its archive downloads, and an import of it
// creates a project whose every table holds the same rows (count and
// hash, the source's project id replaced by the copy's) and whose media
// are the same bytes; the skipped tables are empty, no key of the source
// reaches the copy, and the copy serves its media.
func TestExportImportRoundTrip(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers yet: the export stays pending
	admin := newAdminAPI(t, env)
	src := env.NewProject("build")
	fillProject(t, env, src)
	ctx := context.Background()

	created := admin.adminSend(t, "POST", "/admin/api/projects/"+src.ID+"/exports", nil, "").Expect(t, 202).JSON(t)
	id := created["id"].(string)
	require.Equal(t, "pending", created["status"])
	require.Equal(t, src.ID, created["project_id"])
	require.Equal(t, "pending", admin.adminSend(t, "GET", "/admin/api/exports/"+id, nil, "").Expect(t, 200).JSON(t)["status"])
	admin.adminSend(t, "GET", "/admin/api/exports/"+id+"/download", nil, "").Problem(t, 409, "conflict")

	// A lock on one of the project's tables holds the job in running.
	lock, err := env.DB.Pool.Begin(ctx)
	require.NoError(t, err)
	_, err = lock.Exec(ctx, `LOCK TABLE `+pgx.Identifier{src.Schema, "pages"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	env.Instance(apitest.WithWorkers())
	waitExport(t, env, id, "running")
	// The job is blocked on the lock (not merely not there yet), and stays
	// running while it waits.
	pages := pgx.Identifier{src.Schema, "pages"}.Sanitize()
	deadline := time.Now().Add(30 * time.Second)
	for waiting := 0; waiting == 0; time.Sleep(20 * time.Millisecond) {
		require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE relation = to_regclass($1) AND NOT granted`, pages).Scan(&waiting))
		require.False(t, time.Now().After(deadline), "the export job never waited for the lock on %s", pages)
	}
	require.Equal(t, "running", admin.adminSend(t, "GET", "/admin/api/exports/"+id, nil, "").Expect(t, 200).JSON(t)["status"])
	require.NoError(t, lock.Rollback(ctx))
	waitExport(t, env, id, "completed")

	done := admin.adminSend(t, "GET", "/admin/api/exports/"+id, nil, "").Expect(t, 200).JSON(t)
	counts := done["row_counts"].(map[string]any)
	for table, n := range map[string]float64{"content_values": 2, "pages": 1, "blog_posts": 2, "blog_terms": 1, "images": 1, "galleries": 1,
		"products": 1, "product_variants": 1, "product_categories": 1, "booking_services": 1, "bookings": 1, "form_submissions": 2, "brand": 1} {
		require.Equal(t, n, counts[table], "rows of %s", table)
	}
	for table := range archive.Skipped {
		require.NotContains(t, counts, table)
	}
	dl := admin.adminSend(t, "GET", "/admin/api/exports/"+id+"/download", nil, "").Expect(t, 200)
	require.Equal(t, "application/gzip", dl.Header.Get("Content-Type"))
	require.Equal(t, fmt.Sprintf(`attachment; filename="%s-%s.tar.gz"`, src.ID, id), dl.Header.Get("Content-Disposition"))
	require.EqualValues(t, done["size_bytes"], len(dl.Body))
	m := readManifest(t, dl.Body)
	require.Equal(t, archive.FormatName, m.Format)
	latest, err := provisioning.LatestTenantVersion()
	require.NoError(t, err)
	require.Equal(t, latest, m.Migrations.Version)
	for table, n := range m.RowCounts() {
		require.EqualValues(t, counts[table], n)
	}

	before := tableDigests(t, env, src.Schema, "", "")
	body, ct := importForm(dl.Body, "tenant_id", fmt.Sprint(env.TenantID()), "name", "Preview copy")
	cp := admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Expect(t, 201).JSON(t)
	copyID := cp["id"].(string)
	require.NotEqual(t, src.ID, copyID)
	require.Equal(t, "Preview copy", cp["name"])
	require.Equal(t, src.ID, cp["source_project_id"])
	require.Equal(t, src.Plan, cp["plan"])
	copied, err := env.Server.Central.Project(ctx, copyID)
	require.NoError(t, err)

	// Every table: the same rows, the project id aside; the skipped
	// ones empty; the source untouched.
	want := tableDigests(t, env, src.Schema, src.ID, copyID)
	got := tableDigests(t, env, copied.Schema, "", "")
	require.Equal(t, before, tableDigests(t, env, src.Schema, "", ""))
	for table, digest := range want {
		if _, skip := archive.Skipped[table]; skip {
			if table != "goose_db_version" {
				require.True(t, strings.HasPrefix(got[table], "0 rows"), "%s of the copy: %s", table, got[table])
			}
			continue
		}
		require.Equal(t, digest, got[table], "table %s", table)
		require.False(t, strings.HasPrefix(digest, "0 rows") && counts[table] != nil && counts[table] != float64(0), table)
	}
	require.Len(t, got, len(want))
	require.Equal(t, mediaOf(t, env, src.ID), mediaOf(t, env, copyID))
	require.Len(t, mediaOf(t, env, copyID), 2) // the image and the logo

	// Ids go on from the copied ones.
	var next int64
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT nextval(pg_get_serial_sequence($1, 'id'))`, copied.Schema+".products").Scan(&next))
	require.EqualValues(t, 2, next)

	// No key of the source reaches the copy: it has none, and the
	// source's key still answers as the source.
	var keys int
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM central.api_keys WHERE project_id = $1`, copyID).Scan(&keys))
	require.Zero(t, keys)
	me := env.Do("GET", "/v1/projects/me", src.Key, nil).Expect(t, 200).JSON(t)
	require.Equal(t, src.ID, me["id"])
	// The copy's own key reads its rows, and its media are served under
	// its id.
	cpKey, err := env.Server.Central.MintKey(ctx, copyID, "test", []string{"*"}, nil, false)
	require.NoError(t, err)
	require.Equal(t, "Bonjour", env.Do("GET", "/v1/content/hero.title?lang=fr", cpKey.Secret, nil).Expect(t, 200).JSON(t)["value"])
	img := env.Do("GET", "/v1/images/hero", cpKey.Secret, nil).Expect(t, 200).JSON(t)
	require.Contains(t, img["url"], "/v1/public/media/"+copyID+"/hero")
	_, mediaPath, _ := strings.Cut(img["url"].(string), "/v1/public/media/")
	require.Equal(t, webp(t), env.Do("GET", "/v1/public/media/"+mediaPath, "", nil).Expect(t, 200).Body)
	env.Do("GET", "/v1/webhook-endpoints", cpKey.Secret, nil).Expect(t, 200)
}

// readManifest reads manifest.json of an archive.
func readManifest(t *testing.T, b []byte) archive.Manifest {
	t.Helper()
	files := untar(t, b)
	var m archive.Manifest
	require.NoError(t, json.Unmarshal(files[0].data, &m))
	return m
}

type entry struct {
	name string
	data []byte
}

func untar(t *testing.T, b []byte) []entry {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	require.NoError(t, err)
	tr := tar.NewReader(gz)
	var out []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		out = append(out, entry{h.Name, data})
	}
}

func retar(t *testing.T, entries []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		require.NoError(t, tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e.name, Size: int64(len(e.data)), Mode: 0o644}))
		_, err := tw.Write(e.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, gz.Close())
	return b.Bytes()
}

// TestImportOlderArchiveIsMigrated: an archive written at an older
// migration level (a real export cut back to the tables and columns of
// tenant migration 0400) is restored into a schema at that level and then
// migrated to this release's.
func TestImportOlderArchiveIsMigrated(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	admin := newAdminAPI(t, env)
	src := env.NewProject("build")
	ctx := context.Background()
	env.Do("PUT", "/v1/content/hero.title", src.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	env.Do("PUT", "/v1/content/hero.title", src.Key, map[string]any{"value": "Bonjour", "lang": "fr"}).Expect(t, 200)
	upload(t, env, src.Key, "/v1/images", webp(t), "key", "hero").Expect(t, 201)
	var buf bytes.Buffer
	_, err := env.Server.Central.ExportProject(ctx, src.ID, &buf)
	require.NoError(t, err)

	// Cut back to level 0400: content_values and images without the
	// object column of 0401; no media.
	const level = 400
	var old []entry
	var m archive.Manifest
	for i, e := range untar(t, buf.Bytes()) {
		if i == 0 {
			require.NoError(t, json.Unmarshal(e.data, &m))
			continue
		}
		switch e.name {
		case "tables/content_values.ndjson":
			old = append(old, e)
		case "tables/images.ndjson":
			var rows []byte
			for _, line := range bytes.Split(bytes.TrimSpace(e.data), []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				var row map[string]any
				require.NoError(t, json.Unmarshal(line, &row))
				require.Contains(t, row, "object")
				delete(row, "object")
				b, _ := json.Marshal(row)
				rows = append(append(rows, b...), '\n')
			}
			old = append(old, entry{e.name, rows})
		}
	}
	var applied []int64
	for _, v := range m.Migrations.Applied {
		if v <= level {
			applied = append(applied, v)
		}
	}
	m.Migrations = archive.Migrations{Version: level, Applied: applied}
	var tables []archive.Table
	for _, tb := range m.Tables {
		if tb.Name == "content_values" || tb.Name == "images" {
			tables = append(tables, tb)
		}
	}
	m.Tables, m.Media = tables, []archive.Media{}
	mb, err := json.Marshal(m)
	require.NoError(t, err)
	body, ct := importForm(retar(t, append([]entry{{archive.ManifestName, mb}}, old...)), "tenant_id", fmt.Sprint(env.TenantID()))
	cp := admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Expect(t, 201).JSON(t)
	require.Equal(t, src.Name, cp["name"]) // the archive's name when none is given
	copied, err := env.Server.Central.Project(ctx, cp["id"].(string))
	require.NoError(t, err)

	latest, count, err := provisioning.TenantVersion()
	require.NoError(t, err)
	var version int64
	var appliedN int
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT schema_version, migrations_applied FROM central.placements WHERE project_id = $1`,
		copied.ID).Scan(&version, &appliedN))
	require.Equal(t, latest, version)
	require.Equal(t, count, appliedN)
	got, err := provisioning.AppliedVersions(ctx, env.DB.Pool, copied.Schema)
	require.NoError(t, err)
	require.Len(t, got, count)
	// The migrated schema serves the old rows and the newer pillars.
	key, err := env.Server.Central.MintKey(ctx, copied.ID, "test", []string{"*"}, nil, false)
	require.NoError(t, err)
	require.Equal(t, "Bonjour", env.Do("GET", "/v1/content/hero.title?lang=fr", key.Secret, nil).Expect(t, 200).JSON(t)["value"])
	require.Equal(t, "hero", env.Do("GET", "/v1/images/hero", key.Secret, nil).Expect(t, 200).JSON(t)["key"])
	env.Do("POST", "/v1/pages", key.Secret, map[string]any{"title": "New"}).Expect(t, 201)
	env.Do("GET", "/v1/blog-posts", key.Secret, nil).Expect(t, 200)
}

// TestImportRefusesBadArchives: what is not an archive of this format,
// or holds an entry outside its place, is a 422 on file, and no project
// is created.
func TestImportRefusesBadArchives(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	admin := newAdminAPI(t, env)
	good := exportedArchive(t, env)
	with := func(extra ...entry) []byte { return retar(t, append(append([]entry{}, good...), extra...)) }
	manifest := func(edit func(m map[string]any)) []byte {
		var m map[string]any
		require.NoError(t, json.Unmarshal(good[0].data, &m))
		edit(m)
		b, _ := json.Marshal(m)
		return retar(t, append([]entry{{archive.ManifestName, b}}, good[1:]...))
	}
	// A row the schema refuses is found only while restoring, after the
	// project was created: the import removes it again.
	badRow := append([]entry{}, good...)
	for i, e := range badRow {
		if e.name == "tables/content_values.ndjson" {
			badRow[i] = entry{e.name, []byte(`{"key":"Not A Key","lang":"en","value":"x","updated_at":"2026-01-01T00:00:00+00:00"}` + "\n")}
		}
	}
	projects := func() int { return projectCount(t, env) }
	before := projects()
	tenant := fmt.Sprint(env.TenantID())
	for name, c := range map[string]struct {
		archive []byte
		detail  string
	}{
		"not gzip":           {[]byte("just some text"), "not a gzip file"},
		"gzip of no tar":     {gzipOf(t, []byte("just some text")), "not a tar archive"},
		"path traversal":     {with(entry{"../../etc/cron.d/evil", []byte("x")}), "must be relative"},
		"absolute path":      {with(entry{"/etc/passwd", []byte("x")}), "must be relative"},
		"dot segment":        {with(entry{"media/./x", []byte("x")}), "must be relative"},
		"unlisted entry":     {with(entry{"media/extra", []byte("x")}), "not in the manifest"},
		"manifest not first": {retar(t, append(append([]entry{}, good[1:]...), good[0])), "first entry must be manifest.json"},
		"unknown format":     {manifest(func(m map[string]any) { m["format"] = "zip" }), "unknown format"},
		"newer format":       {manifest(func(m map[string]any) { m["format_version"] = 2 }), "unknown format version"},
		"newer migrations":   {manifest(func(m map[string]any) { m["migrations"] = map[string]any{"version": 99999, "applied": []int{1, 99999}} }), "newer than"},
		"skipped table": {manifest(func(m map[string]any) {
			m["tables"] = []any{map[string]any{"name": "payment_account", "file": "tables/payment_account.ndjson", "rows": 0}}
		}), "never imported"},
		"missing table file":     {retar(t, good[:1]), "missing entries"},
		"row count mismatch":     {manifest(func(m map[string]any) { setRows(m, "content_values", 5) }), "rows, the manifest says 5"},
		"row the schema refuses": {retar(t, badRow), "rows of content_values"},
		"media path in media": {manifest(func(m map[string]any) {
			m["media"] = []any{map[string]any{"key": "../x", "file": "media/../x", "size": 1}}
		}), "media key"},
	} {
		t.Run(name, func(t *testing.T) {
			body, ct := importForm(c.archive, "tenant_id", tenant)
			p := admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Problem(t, 422, "validation_failed")
			require.Contains(t, fmt.Sprint(p["errors"].(map[string]any)["file"]), c.detail)
		})
	}
	archive := retar(t, good)
	body, ct := importForm(archive, "tenant_id", "999999")
	admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Problem(t, 404, "not_found")
	body, ct = importForm(archive, "tenant_id", "x")
	admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Problem(t, 422, "validation_failed")
	body, ct = importForm(archive)
	admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Problem(t, 400, "bad_request")
	require.Equal(t, before, projects())
	admin.adminSend(t, "POST", "/admin/api/projects/prj_000000000000000000000000/exports", nil, "").Problem(t, 404, "not_found")
	admin.adminSend(t, "GET", "/admin/api/exports/exp_000000000000000000000000", nil, "").Problem(t, 404, "not_found")
}

func setRows(m map[string]any, table string, rows int) {
	for _, tb := range m["tables"].([]any) {
		if tb := tb.(map[string]any); tb["name"] == table {
			tb["rows"] = rows
		}
	}
}

func gzipOf(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	gz := gzip.NewWriter(&out)
	_, err := gz.Write(b)
	require.NoError(t, err)
	require.NoError(t, gz.Close())
	return out.Bytes()
}

// TestAdminAPIRefusedWithoutAdminToken: until admin tokens exist the
// routes are mounted but refuse everyone, a project key included.
func TestAdminAPIRefusedWithoutAdminToken(t *testing.T) {
	t.Parallel()
	env := apitest.New(t)
	p := env.NewProject("build")
	env.Do("POST", "/admin/api/projects/"+p.ID+"/exports", p.Key, nil).Problem(t, 401, "unauthorized")
	env.Do("GET", "/admin/api/exports/exp_000000000000000000000000", "", nil).Problem(t, 401, "unauthorized")
}

// TestDeleteWithExport: DELETE with export=true starts an export of the
// project in the delete's transaction; the export reads the schema under
// the name it waits under, the drop (now=true) waits for it, and the
// archive outlives the project and imports to the same rows and media.
// export=true needs exports:write besides projects:admin.
func TestDeleteWithExport(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers yet: the export and the drop wait
	admin := &adminAPI{env: env, token: adminToken(t, env, "projects:*", "exports:*")}
	src := env.NewProject("build")
	fillProject(t, env, src)
	ctx := context.Background()
	const copyID = "prj_COPY"
	want := tableDigests(t, env, src.Schema, src.ID, copyID)
	wantMedia := mediaOf(t, env, src.ID)
	require.Len(t, wantMedia, 2)

	noExport := &adminAPI{env: env, token: adminToken(t, env, "projects:admin")}
	noExport.adminSend(t, "DELETE", "/admin/api/projects/"+src.ID+"?now=true&export=true", nil, "").Problem(t, 403, "forbidden")
	admin.adminSend(t, "DELETE", "/admin/api/projects/"+src.ID+"?export=maybe", nil, "").Problem(t, 422, "validation_failed")
	env.Do("GET", "/v1/projects/me", src.Key, nil).Expect(t, 200)

	got := admin.adminSend(t, "DELETE", "/admin/api/projects/"+src.ID+"?now=true&export=true", nil, "").Expect(t, 202).JSON(t)
	require.Equal(t, "deleting", got["status"])
	exp := got["export"].(map[string]any)
	require.Equal(t, "pending", exp["status"])
	require.Equal(t, src.ID, exp["project_id"])
	id := exp["id"].(string)
	env.Do("GET", "/v1/projects/me", src.Key, nil).Problem(t, 401, "unauthorized")

	// A lock on one of its tables (under the schema's new name) holds
	// the export in running: the drop, due now, waits for it.
	lock, err := env.DB.Pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = lock.Rollback(ctx) }() // a failure must not leave the pool waiting on it
	_, err = lock.Exec(ctx, `LOCK TABLE `+pgx.Identifier{"deleted_" + src.Schema, "pages"}.Sanitize()+` IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	env.Instance(apitest.WithWorkers())
	waitExport(t, env, id, "running")
	// The drop was due at once: once it has been tried, it waits again.
	deadline := time.Now().Add(30 * time.Second)
	for {
		jobs := env.RiverJobs(t, "project_drop", map[string]any{"deleted_project": src.ID})
		require.Len(t, jobs, 1)
		if jobs[0].ScheduledAt.After(time.Now()) {
			break
		}
		require.True(t, time.Now().Before(deadline), "the drop was never tried")
		time.Sleep(50 * time.Millisecond)
	}
	var schemas int
	require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = 'deleted_' || $1`, src.Schema).Scan(&schemas))
	require.Equal(t, 1, schemas, "the drop did not wait for the export")
	require.Equal(t, "running", exportStatus(t, env, id))
	require.NoError(t, lock.Rollback(ctx))
	waitExport(t, env, id, "completed")
	waitGone(t, env, adminToken(t, env, "projects:read"), src.ID)

	// The archive outlives the project: the same rows and media.
	dl := admin.adminSend(t, "GET", "/admin/api/exports/"+id+"/download", nil, "").Expect(t, 200)
	body, ct := importForm(dl.Body, "tenant_id", fmt.Sprint(env.TenantID()), "name", "Restored")
	cp := admin.adminSend(t, "POST", "/admin/api/projects/import", body, ct).Expect(t, 201).JSON(t)
	copied, err := env.Server.Central.Project(ctx, cp["id"].(string))
	require.NoError(t, err)
	restored := tableDigests(t, env, copied.Schema, copied.ID, copyID)
	for table, digest := range want {
		if _, skip := archive.Skipped[table]; skip {
			continue
		}
		require.Equal(t, digest, restored[table], "table %s", table)
	}
	require.Equal(t, wantMedia, mediaOf(t, env, copied.ID))
}

// TestDropKeepsDataOfFailedExport: when the export asked for with a
// delete has failed, the drop fails too and keeps the schema; once a
// later export of the project completes, the drop goes ahead.
func TestDropKeepsDataOfFailedExport(t *testing.T) {
	t.Parallel()
	env := apitest.New(t) // no workers: the test runs the drop itself
	admin := &adminAPI{env: env, token: adminToken(t, env, "projects:*", "exports:*")}
	p := env.NewProject("build")
	ctx := context.Background()
	got := admin.adminSend(t, "DELETE", "/admin/api/projects/"+p.ID+"?now=true&export=true", nil, "").Expect(t, 202).JSON(t)
	first := got["export"].(map[string]any)["id"].(string)
	jobs := env.RiverJobs(t, "project_drop", map[string]any{"deleted_project": p.ID})
	require.Len(t, jobs, 1)
	require.Equal(t, first, jobs[0].Args["export_id"])
	args := central.DropArgs{DeletedProject: p.ID, Shard: jobs[0].Args["shard"].(string), Schema: p.Schema, ExportID: first}
	drop := &central.DropWorker{Central: env.Server.Central}
	run := func() error {
		return drop.Work(ctx, &river.Job[central.DropArgs]{JobRow: &rivertype.JobRow{ID: jobs[0].ID, Attempt: 1, MaxAttempts: 25}, Args: args})
	}
	schemaLeft := func() bool {
		var n int
		require.NoError(t, env.DB.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = 'deleted_' || $1`, p.Schema).Scan(&n))
		return n == 1
	}
	setStatus := func(id, status string) {
		_, err := env.DB.Pool.Exec(ctx, `UPDATE central.exports SET status = $2 WHERE id = $1`, id, status)
		require.NoError(t, err)
	}

	var snooze *river.JobSnoozeError
	require.ErrorAs(t, run(), &snooze, "pending export")
	setStatus(first, "failed") // as after its last attempt
	require.ErrorContains(t, run(), "failed")
	require.True(t, schemaLeft())

	again := admin.adminSend(t, "POST", "/admin/api/projects/"+p.ID+"/exports", nil, "").Expect(t, 202).JSON(t)["id"].(string)
	require.ErrorAs(t, run(), &snooze, "export started after it, pending")
	require.True(t, schemaLeft())
	setStatus(again, "completed")
	require.NoError(t, run())
	require.False(t, schemaLeft())
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// exportedArchive is the archive of a new project of env holding one
// content value (hero.title), as entries: what the import tests edit.
func exportedArchive(t *testing.T, env *apitest.Env) []entry {
	t.Helper()
	src := env.NewProject("build")
	env.Do("PUT", "/v1/content/hero.title", src.Key, map[string]any{"value": "Hello"}).Expect(t, 200)
	var buf bytes.Buffer
	_, err := env.Server.Central.ExportProject(context.Background(), src.ID, &buf)
	require.NoError(t, err)
	return untar(t, buf.Bytes())
}

// projectCount is how many projects the control plane holds, all
// workspaces and states together.
func projectCount(t *testing.T, env *apitest.Env) int {
	t.Helper()
	var n int
	require.NoError(t, env.DB.Pool.QueryRow(context.Background(), `SELECT count(*) FROM central.projects`).Scan(&n))
	return n
}
