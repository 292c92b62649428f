package archive

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/plinth-dev/plinth/tenant"
)

// TestRowWriter: COPY's CSV rows become NDJSON lines; a row quoted for
// its line breaks (json whitespace) loses the quotes and the breaks.
func TestRowWriter(t *testing.T) {
	var out bytes.Buffer
	bw := bufio.NewWriter(&out)
	rw := &rowWriter{w: bw}
	in := "{\"a\":\"x\\\\n\"}\n\x01{\"j\":{\r\n \"b\": 1}}\x01\n{\"c\":2}\n"
	// Written in pieces that split the quoted row.
	for _, part := range []string{in[:5], in[5:14], in[14:]} {
		if _, err := rw.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	_ = bw.Flush()
	want := "{\"a\":\"x\\\\n\"}\n{\"j\":{   \"b\": 1}}\n{\"c\":2}\n"
	if out.String() != want || rw.rows != 3 || rw.n != int64(len(want)) {
		t.Fatalf("got %q (%d rows, %d bytes), want %q", out.String(), rw.rows, rw.n, want)
	}
}

// refuse is a Creator that fails the test when an import gets as far as
// creating a project.
type refuse struct{ t *testing.T }

func (r refuse) Project(context.Context, string) (*tenant.Project, error) {
	return nil, errors.New("unused")
}
func (r refuse) ShardPool(string) (*pgxpool.Pool, error)     { return nil, errors.New("unused") }
func (r refuse) Pool() *pgxpool.Pool                         { return nil }
func (r refuse) DiscardImport(context.Context, string) error { return nil }
func (r refuse) CreateForImport(context.Context, Spec, []int64) (*tenant.Project, error) {
	// Error, not Fatal: the import may run off the test goroutine.
	r.t.Error("a refused archive created a project")
	return nil, errors.New("a refused archive reached project creation")
}

func tarGz(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, h := range entries {
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.Copy(tw, io.LimitReader(zeros{}, h.Size)); err != nil {
				t.Fatal(err)
			}
		}
	}
	_ = tw.Close()
	_ = gz.Close()
	return b.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// archiveWith is an archive of manifest m followed by entries of zeros
// with the headers rest.
func archiveWith(t *testing.T, m Manifest, rest ...*tar.Header) []byte {
	t.Helper()
	mb, _ := json.Marshal(m)
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: ManifestName, Size: int64(len(mb)), Mode: 0o644})
	_, _ = tw.Write(mb)
	for _, h := range rest {
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		_ = tw.WriteHeader(h)
		if h.Typeflag == tar.TypeReg {
			_, _ = io.Copy(tw, io.LimitReader(zeros{}, h.Size))
		}
	}
	_ = tw.Close()
	_ = gz.Close()
	return b.Bytes()
}

// TestImportRefusals: a crafted archive is refused before any project is
// created: one that inflates past the limit (a gzip bomb), a link, and a
// path that would leave the archive.
func TestImportRefusals(t *testing.T) {
	m := Manifest{Format: FormatName, FormatVersion: FormatVersion, Project: Project{ID: "prj_" + strings.Repeat("a", 24)},
		Migrations: Migrations{Version: 1, Applied: []int64{1}}, Media: []Media{{Key: "big", File: "media/big", Size: 64 << 20}}}
	lim := Limits{Archive: 1 << 20, Expanded: 1 << 20, Manifest: 1 << 20, Media: 64 << 20, Row: 1 << 20}
	for name, c := range map[string]struct {
		archive []byte
		want    string
	}{
		"gzip bomb": {archiveWith(t, m, &tar.Header{Name: "media/big", Size: 64 << 20}), "inflates to more than 1048576 bytes"},
		"symlink": {archiveWith(t, m, &tar.Header{Name: "media/big", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}),
			`entry "media/big" is not a plain file`},
		"dot dot":        {archiveWith(t, m, &tar.Header{Name: "media/../../x", Size: 1}), "must be relative"},
		"backslash":      {archiveWith(t, m, &tar.Header{Name: `media\..\x`, Size: 1}), "must be relative"},
		"no manifest":    {tarGz(t, &tar.Header{Name: "media/big", Size: 1}), "first entry must be manifest.json"},
		"empty":          {tarGz(t), "empty archive"},
		"too large":      {bytes.Repeat([]byte{1}, 2<<20), "larger than 1048576 bytes"},
		"bad row":        {rowsArchive(t, "{\"a\":1}\nnot json\n", 2), "row 2 is not a JSON object"},
		"row not object": {rowsArchive(t, "[1]\n", 1), "row 1 is not a JSON object"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := Import(context.Background(), refuse{t}, nil, 1, "", bytes.NewReader(c.archive), Options{Limits: lim, Inspect: noImage})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an ErrInvalid saying %q", err, c.want)
			}
		})
	}
}

func rowsArchive(t *testing.T, rows string, n int64) []byte {
	t.Helper()
	m := Manifest{Format: FormatName, FormatVersion: FormatVersion, Project: Project{ID: "prj_" + strings.Repeat("a", 24)},
		Migrations: Migrations{Version: 1, Applied: []int64{1}}, Tables: []Table{{Name: "pages", File: "tables/pages.ndjson", Rows: n}}}
	mb, _ := json.Marshal(m)
	var b bytes.Buffer
	gz := gzip.NewWriter(&b)
	tw := tar.NewWriter(gz)
	for _, e := range [][2]string{{ManifestName, string(mb)}, {"tables/pages.ndjson", rows}} {
		_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e[0], Size: int64(len(e[1])), Mode: 0o644})
		_, _ = tw.Write([]byte(e[1]))
	}
	_ = tw.Close()
	_ = gz.Close()
	return b.Bytes()
}

// noImage is an Options.Inspect that accepts nothing.
func noImage([]byte) (MediaInfo, error) { return MediaInfo{}, errors.New("is not an image") }

// TestImportBounds: what a crafted archive can make the server read,
// hold and store is bounded (issue 33), each refused before any project
// is created: a media object larger than an upload, or not an image; a
// row larger than the row limit; entries that inflate to more than the
// ratio to the archive's size; and a manifest the caller refuses (the
// plan), with the caller's error.
func TestImportBounds(t *testing.T) {
	id := "prj_" + strings.Repeat("a", 24)
	base := Manifest{Format: FormatName, FormatVersion: FormatVersion, Project: Project{ID: id, Plan: "scale"},
		Migrations: Migrations{Version: 1, Applied: []int64{1}}}
	withMedia := func(size int64) Manifest {
		m := base
		m.Media = []Media{{Key: "_u/hero.x", File: "media/_u/hero.x", Size: size}}
		return m
	}
	lim := Limits{Archive: 1 << 30, Expanded: 1 << 40, Manifest: 1 << 20, Media: 1 << 20, Row: 1 << 20}
	ratio := lim
	ratio.Ratio, ratio.MinExpanded = 100, 1<<20
	forbidden := errors.New("the plan needs projects:admin")
	for name, c := range map[string]struct {
		archive []byte
		opts    Options
		want    string
	}{
		"media larger than an upload": {archiveWith(t, withMedia(1<<20+1), &tar.Header{Name: "media/_u/hero.x", Size: 1<<20 + 1}),
			Options{Limits: lim, Inspect: noImage}, "media _u/hero.x: 1048577 bytes, more than the 1048576 an image may have"},
		"media not an image": {archiveWith(t, withMedia(100), &tar.Header{Name: "media/_u/hero.x", Size: 100}),
			Options{Limits: lim, Inspect: noImage}, "media/_u/hero.x: is not an image"},
		"row larger than the limit": {rowsArchive(t, `{"a":"`+strings.Repeat(" ", 1<<20)+`"}`+"\n", 1),
			Options{Limits: lim}, "tables/pages.ndjson: row 1 is larger than 1048576 bytes"},
		"row larger than the limit, no line break": {rowsArchive(t, `{"a":"`+strings.Repeat(" ", 1<<20)+`"}`, 1),
			Options{Limits: lim}, "row 1 is larger than 1048576 bytes"},
		"inflated past the ratio": {rowsArchive(t, strings.Repeat(`{"a":"`+strings.Repeat(" ", 1000)+`"}`+"\n", 2000), 2000),
			Options{Limits: ratio}, "inflates to more than 1048576 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := Import(context.Background(), refuse{t}, nil, 1, "", bytes.NewReader(c.archive), c.opts)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an ErrInvalid saying %q", err, c.want)
			}
		})
	}
	// The same rows within the ratio's floor pass the checks.
	big := ratio
	big.MinExpanded = 4 << 20
	rows := rowsArchive(t, strings.Repeat(`{"a":"`+strings.Repeat(" ", 1000)+`"}`+"\n", 2000), 2000)
	if _, _, err := check(spoolOf(t, rows), big, nil); err != nil {
		t.Fatalf("within the floor: %v", err)
	}
	_, _, err := Import(context.Background(), refuse{t}, nil, 1, "", bytes.NewReader(rows), Options{Limits: big,
		Authorize: func(m Manifest) error {
			if m.Project.Plan != "free" {
				return forbidden
			}
			return nil
		}})
	if !errors.Is(err, forbidden) {
		t.Fatalf("a manifest the caller refuses: %v", err)
	}
}

// TestImportRowMemory: one enormous row (32 MiB of spaces in a string,
// 32 KiB compressed) is refused once the row limit is read, never held
// whole: the import allocates a small part of it. (Reading it whole, as
// a line, allocated twice its size and more.)
func TestImportRowMemory(t *testing.T) {
	archive := rowsArchive(t, `{"a":"`+strings.Repeat(" ", 32<<20)+`"}`+"\n", 1)
	lim := Limits{Archive: 1 << 30, Expanded: 1 << 40, Manifest: 1 << 20, Media: 1 << 20, Row: 1 << 20}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := Import(context.Background(), refuse{t}, nil, 1, "", bytes.NewReader(archive), Options{Limits: lim})
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "row 1 is larger than 1048576 bytes") {
		t.Fatalf("got %v", err)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("the refused row allocated %d MiB", alloc>>20)
	} else {
		t.Logf("the refused row allocated %d KiB", alloc>>10)
	}
}

func spoolOf(t *testing.T, b []byte) *os.File {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "archive")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	return f
}
