package main

import (
	"bufio"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestRelease: make release builds a static, stripped binary for each
// platform, named by VERSION, and SHA256SUMS of exactly them; the one
// for this machine says that version to plinth version and --version.
// It builds this machine's platform only: each other one is a build of
// the whole standard library and every module for it, minutes on a
// cold cache (16 on CI's two cores, beside the other tests), for what
// the Go toolchain guarantees of a program without cgo; the dry run
// shows the three a plain make release builds.
func TestRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a release binary")
	}
	t.Parallel()
	if _, err := exec.LookPath("make"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("no make in PATH")
		}
		t.Skip("no make in PATH")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	const version = "v0.0.0-test"
	dir := t.TempDir() // not bin/release, which a make release of the checkout writes
	dry, err := exec.Command("make", "-n", "-C", root, "release", "VERSION="+version, "RELEASE_DIR="+dir).CombinedOutput()
	if err != nil {
		t.Fatalf("make -n release: %v\n%s", err, dry)
	}
	for _, p := range []string{"linux/amd64", "linux/arm64", "darwin/arm64"} {
		if !strings.Contains(string(dry), p) {
			t.Errorf("make release does not build %s:\n%s", p, dry)
		}
	}
	host := runtime.GOOS + "/" + runtime.GOARCH
	cmd := exec.Command("make", "-C", root, "release", "VERSION="+version, "RELEASE_DIR="+dir, "RELEASE_PLATFORMS="+host)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}

	platforms := []string{runtime.GOOS + "-" + runtime.GOARCH}
	var want []string
	for _, p := range platforms {
		want = append(want, "plinth-"+version+"-"+p)
	}
	f, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var listed []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sha256sum's format: the hex digest, two spaces, the file name.
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Fatalf("SHA256SUMS: line %q is not <sha256>  <file>", sc.Text())
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("SHA256SUMS lists %s: %v", name, err)
		}
		if got := sha256.Sum256(b); hex.EncodeToString(got[:]) != sum {
			t.Fatalf("SHA256SUMS: %s is %x, listed as %s", name, got, sum)
		}
		listed = append(listed, name)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Fatalf("SHA256SUMS lists %v, want %v", listed, want)
	}

	for _, name := range want {
		if !strings.Contains(name, "-linux-") {
			continue
		}
		e, err := elf.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, p := range e.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s asks for a dynamic loader: not static", name)
			}
		}
		if e.Section(".symtab") != nil {
			t.Errorf("%s has a symbol table: not built with -s", name)
		}
		e.Close()
	}

	bin := filepath.Join(dir, want[0])
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(bin, arg).Output()
		if err != nil || string(out) != "plinth "+version+"\n" {
			t.Fatalf("%s %s: %v, %q", want[0], arg, err, out)
		}
	}
}
