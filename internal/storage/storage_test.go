package storage

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFileStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open("file://"+dir, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.Put(ctx, "prj_1/hero.png", strings.NewReader("first"))
	if err != nil || n != 5 {
		t.Fatalf("put: %d %v", n, err)
	}
	if _, err := s.Put(ctx, "prj_1/hero.png", strings.NewReader("second!")); err != nil {
		t.Fatal(err)
	}
	o, err := s.Open(ctx, "prj_1/hero.png")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(o)
	o.Close()
	if string(b) != "second!" || o.Size() != 7 || o.ModTime().IsZero() {
		t.Fatalf("open: %q size %d", b, o.Size())
	}
	if _, err := os.Stat(filepath.Join(dir, "prj_1", "hero.png")); err != nil {
		t.Fatalf("file layout: %v", err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "prj_1", "*.tmp-*"))
	if len(matches) != 0 {
		t.Fatalf("temporary files left: %v", matches)
	}
	if err := s.Delete(ctx, "prj_1/hero.png"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(ctx, "prj_1/hero.png"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("open after delete: %v", err)
	}
	if err := s.Delete(ctx, "prj_1/hero.png"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete twice: %v", err)
	}
	for _, bad := range []string{"", "../x", "a/../../x", "/abs", "a//b", "a/./b", `a\b`, "a b", "prj_1/"} {
		if _, err := s.Put(ctx, bad, strings.NewReader("x")); err == nil {
			t.Errorf("key %q accepted", bad)
		}
		if _, err := s.Open(ctx, bad); !errors.Is(err, ErrNotFound) {
			t.Errorf("open %q: %v", bad, err)
		}
	}
	if _, err := s.Open(ctx, "prj_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a directory is not an object: %v", err)
	}
}

func TestOpenSpec(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	s, err := Open("file://./.plinth/media", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(wd, ".plinth", "media"); s.(*File).Dir() != want {
		t.Fatalf("dir %s, want %s", s.(*File).Dir(), want)
	}
	if _, err := Open("s4://bucket", os.Getenv); err == nil {
		t.Fatal("unknown scheme accepted")
	}
}

func TestFileList(t *testing.T) {
	ctx := context.Background()
	s, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"prj_1/_u/b.x", "prj_1/a", "prj_10/c", "exports/e.tar.gz"} {
		if _, err := s.Put(ctx, k, strings.NewReader(k)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List(ctx, "prj_1/")
	if err != nil || strings.Join(got, ",") != "prj_1/_u/b.x,prj_1/a" {
		t.Fatalf("list prj_1/: %q %v", got, err)
	}
	if got, err := s.List(ctx, "prj_2/"); err != nil || len(got) != 0 {
		t.Fatalf("list of an absent prefix: %q %v", got, err)
	}
	if _, err := s.List(ctx, "../"); err == nil {
		t.Fatal("an invalid prefix is refused")
	}
}

// TestProjectMedia: the media view reaches the keys below a project's
// prefix and nothing else of the store: an export archive beside them is
// neither opened, deleted, listed nor overwritten through it.
func TestProjectMedia(t *testing.T) {
	ctx := context.Background()
	raw, err := NewFile(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const pid = "prj_0123456789ABCDEFGHIJKLMN"
	archive := ExportsPrefix + "/exp_0123456789ABCDEFGHIJKLMN.tar.gz"
	if _, err := raw.Put(ctx, archive, strings.NewReader("archive")); err != nil {
		t.Fatal(err)
	}
	m := ProjectMedia(raw)
	if _, err := m.Put(ctx, pid+"/_u/hero.x", strings.NewReader("img")); err != nil {
		t.Fatalf("put below the project: %v", err)
	}
	o, err := m.Open(ctx, pid+"/_u/hero.x")
	if err != nil {
		t.Fatalf("open below the project: %v", err)
	}
	o.Close()
	for _, key := range []string{archive, "exports/x", pid, "prj_1/hero", "other/" + pid + "/x", pid + "/../exports/x"} {
		if _, err := m.Open(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Errorf("open %q through the media view: %v", key, err)
		}
		if err := m.Delete(ctx, key); !errors.Is(err, ErrNotFound) {
			t.Errorf("delete %q through the media view: %v", key, err)
		}
		if _, err := m.Put(ctx, key, strings.NewReader("x")); err == nil {
			t.Errorf("put %q through the media view", key)
		}
	}
	if _, err := m.List(ctx, ExportsPrefix+"/"); err == nil {
		t.Error("list of exports/ through the media view")
	}
	if err := m.DeletePrefix(ctx, ExportsPrefix); err == nil {
		t.Error("delete of exports/ through the media view")
	}
	if keys, err := m.List(ctx, pid+"/"); err != nil || len(keys) != 1 {
		t.Fatalf("list of the project: %v %v", keys, err)
	}
	if o, err := raw.Open(ctx, archive); err != nil {
		t.Fatalf("the archive is gone: %v", err)
	} else {
		o.Close()
	}
	if !InProject(pid, pid+"/_u/hero.x") || InProject(pid, pid+"/") || InProject(pid, "prj_0123456789ABCDEFGHIJKLMO/x") || InProject("prj_1", "prj_1/x") {
		t.Error("InProject")
	}
}
