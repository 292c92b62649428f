package content_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"flag"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"mime/multipart"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/central/apitest"
	"github.com/plinth-dev/plinth/tenant/credits"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// spent returns the hundredths of credits the project's live pool has
// been charged, net of refunds.
func spent(t testing.TB, p *apitest.Project) int64 {
	t.Helper()
	var n int64
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT COALESCE(sum(amount), 0) FROM credit_ledger WHERE pool = 'live' AND op <> 'topup'`).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// ledgerOps returns how many ledger entries of op exist.
func ledgerOps(t testing.TB, p *apitest.Project, op string) int {
	t.Helper()
	var n int
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), `SELECT count(*) FROM credit_ledger WHERE op = $1`, op).Scan(&n)
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// drain spends all but left whole credits of the project's live pool.
func drain(t testing.TB, p *apitest.Project, left int64) {
	t.Helper()
	ctx := context.Background()
	err := p.Scope.Tx(ctx, func(tx pgx.Tx) error {
		bal, err := credits.Balance(ctx, tx, p.Scope)
		if err != nil {
			return err
		}
		return credits.Charge(ctx, tx, p.Scope, "test_drain", bal-left*credits.Unit, "")
	})
	if err != nil {
		t.Fatal(err)
	}
}

// query runs one scalar query in the project's schema.
func query[T any](t testing.TB, p *apitest.Project, sql string, args ...any) T {
	t.Helper()
	var v T
	err := p.Scope.Tx(context.Background(), func(tx pgx.Tx) error {
		return tx.QueryRow(context.Background(), sql, args...).Scan(&v)
	})
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return v
}

// Test images of each accepted format.
func pngOf(w, h int) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := 0; x < w; x++ {
		img.Set(x, 0, color.RGBA{R: uint8(x), G: 80, B: 160, A: 255})
	}
	var b bytes.Buffer
	_ = png.Encode(&b, img)
	return b.Bytes()
}

func jpegOf(w, h int) []byte {
	var b bytes.Buffer
	_ = jpeg.Encode(&b, image.NewRGBA(image.Rect(0, 0, w, h)), nil)
	return b.Bytes()
}

func gifOf(w, h int) []byte {
	var b bytes.Buffer
	_ = gif.Encode(&b, image.NewPaletted(image.Rect(0, 0, w, h), color.Palette{color.Black, color.White}), nil)
	return b.Bytes()
}

// webp1x1 is a 1×1 lossless WebP (no encoder in the standard library).
func webp1x1() []byte {
	b, _ := base64.StdEncoding.DecodeString("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA==")
	return b
}

// form builds a multipart body: a file part (when data is not nil) and
// text fields, in that order.
func form(filename string, data []byte, fields ...string) apitest.Request {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	if data != nil {
		fw, _ := mw.CreateFormFile("file", filename)
		_, _ = fw.Write(data)
	}
	for i := 0; i+1 < len(fields); i += 2 {
		_ = mw.WriteField(fields[i], fields[i+1])
	}
	_ = mw.Close()
	return apitest.Request{Body: b.Bytes(), Header: map[string]string{"Content-Type": mw.FormDataContentType()}}
}

var (
	timeRe   = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"`)
	prjRe    = regexp.MustCompile(`prj_[0-9A-Za-z]{24}`)
	jobRe    = regexp.MustCompile(`job_[0-9A-Za-z]{24}`)
	hostRe   = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	uploadRe = regexp.MustCompile(`-[0-9a-f]{10}"`)
	cursorRe = regexp.MustCompile(`"next_cursor": "[^"]+"`)
)

// golden compares body, re-indented and normalised (timestamps, project
// and job ids, the test server's address), with testdata/name.golden;
// -update rewrites the file.
func golden(t testing.TB, name string, body []byte) {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: not JSON: %s", name, body)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
	got := timeRe.ReplaceAllString(buf.String(), `"<time>"`)
	got = prjRe.ReplaceAllString(got, "prj_<id>")
	got = jobRe.ReplaceAllString(got, "job_<id>")
	got = hostRe.ReplaceAllString(got, "http://<host>")
	got = uploadRe.ReplaceAllString(got, `-<hash>"`)
	got = cursorRe.ReplaceAllString(got, `"next_cursor": "<cursor>"`)
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if strings.TrimSpace(string(want)) != strings.TrimSpace(got) {
		t.Errorf("%s differs from %s:\n--- got\n%s\n--- want\n%s", name, path, got, want)
	}
}
