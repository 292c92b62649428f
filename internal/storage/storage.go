// Package storage keeps media files (uploaded and generated images) under
// keys such as "prj_…/hero". One interface, with a file backend (the
// default, PLINTH_STORAGE=file://DIR) and an S3-compatible backend
// (PLINTH_STORAGE=s3://bucket[/prefix], see S3ConfigFromEnv).
package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotFound is returned by Open and Delete for an absent key.
var ErrNotFound = errors.New("storage: object not found")

// Object is an opened stored file.
type Object interface {
	io.ReadSeekCloser
	Size() int64
	ModTime() time.Time
}

// Store keeps media by key. Keys are slash-separated segments of letters,
// digits, '.', '_' and '-' (never "." or ".."). Put of an existing key
// replaces it, so a re-run job writes the same object again harmlessly.
type Store interface {
	Put(ctx context.Context, key string, r io.Reader) (size int64, err error)
	Open(ctx context.Context, key string) (Object, error)
	Delete(ctx context.Context, key string) error
	// DeletePrefix removes every object whose key starts with the
	// segment prefix followed by "/" (a deleted project's media, under
	// its id); none is no error.
	DeletePrefix(ctx context.Context, prefix string) error
	// List returns the keys under a prefix ending in "/", sorted.
	List(ctx context.Context, prefix string) ([]string, error)
}

// Open returns the store that spec names: file://DIR (a relative DIR is
// relative to the working directory) or s3://bucket[/prefix], configured
// from getenv (S3ConfigFromEnv).
func Open(spec string, getenv func(string) string) (Store, error) {
	u, err := url.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("PLINTH_STORAGE: %w", err)
	}
	switch u.Scheme {
	case "file":
		// file://./x parses as host "." and path "/x"; file:///abs as path "/abs".
		dir := u.Host + u.Path
		if dir == "" {
			return nil, fmt.Errorf("PLINTH_STORAGE: file:// needs a directory")
		}
		return NewFile(dir)
	case "s3":
		c, err := S3ConfigFromEnv(u, getenv)
		if err != nil {
			return nil, err
		}
		return NewS3(c)
	}
	return nil, fmt.Errorf("PLINTH_STORAGE: unsupported scheme %q (want file://DIR or s3://bucket)", u.Scheme)
}

// ValidKey reports whether key is a usable object key.
func ValidKey(key string) bool {
	if key == "" || len(key) > 512 {
		return false
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return false
			}
		}
	}
	return true
}

// File stores objects as files under a directory.
type File struct{ dir string }

// NewFile returns a file store rooted at dir, creating it.
func NewFile(dir string) (*File, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return &File{dir: abs}, nil
}

// Dir is the root directory.
func (f *File) Dir() string { return f.dir }

func (f *File) path(key string) (string, error) {
	if !ValidKey(key) {
		return "", fmt.Errorf("storage: invalid key %q", key)
	}
	return filepath.Join(f.dir, filepath.FromSlash(key)), nil
}

// Put writes r to key atomically: a temporary file renamed into place.
func (f *File) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	p, err := f.path(key)
	if err != nil {
		return 0, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return 0, err
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	tmp := p + ".tmp-" + hex.EncodeToString(suffix[:])
	out, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(out, ctxReader{ctx, r})
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return 0, err
	}
	return n, nil
}

// Open opens key for reading.
func (f *File) Open(_ context.Context, key string) (Object, error) {
	p, err := f.path(key)
	if err != nil {
		return nil, ErrNotFound
	}
	fh, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil || st.IsDir() {
		fh.Close()
		return nil, ErrNotFound
	}
	return &fileObject{File: fh, size: st.Size(), mod: st.ModTime()}, nil
}

// Delete removes key.
func (f *File) Delete(_ context.Context, key string) error {
	p, err := f.path(key)
	if err != nil {
		return ErrNotFound
	}
	if err := os.Remove(p); errors.Is(err, os.ErrNotExist) {
		return ErrNotFound
	} else if err != nil {
		return err
	}
	return nil
}

// DeletePrefix removes the directory of prefix and everything in it.
func (f *File) DeletePrefix(_ context.Context, prefix string) error {
	p, err := f.path(prefix)
	if err != nil {
		return err
	}
	return os.RemoveAll(p)
}

type fileObject struct {
	*os.File
	size int64
	mod  time.Time
}

func (o *fileObject) Size() int64        { return o.size }
func (o *fileObject) ModTime() time.Time { return o.mod }

// ctxReader stops a copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
