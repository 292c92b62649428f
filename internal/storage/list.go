package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minio/minio-go/v7"
)

// List returns the keys under prefix (a key prefix ending in "/"), sorted:
// a project's media are the objects under "prj_…/", and an export
// (provisioning/archive) or a deletion reads them from here rather than
// from the rows that name them, so an object no row names is not missed.
// Temporary files of writes in progress are left out.
func (f *File) List(_ context.Context, prefix string) ([]string, error) {
	if !ValidKey(strings.TrimSuffix(prefix, "/")) || !strings.HasSuffix(prefix, "/") {
		return nil, errors.New("storage: invalid list prefix " + prefix)
	}
	root := filepath.Join(f.dir, filepath.FromSlash(prefix))
	var keys []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, os.ErrNotExist) && p == root {
			return fs.SkipAll // nothing stored under the prefix yet
		}
		if err != nil || d.IsDir() || strings.Contains(d.Name(), ".tmp-") {
			return err
		}
		rel, err := filepath.Rel(f.dir, p)
		if err != nil {
			return err
		}
		keys = append(keys, filepath.ToSlash(rel))
		return nil
	})
	slices.Sort(keys)
	return keys, err
}

// List returns the keys under prefix, sorted (see File.List).
func (s *S3) List(ctx context.Context, prefix string) ([]string, error) {
	if !ValidKey(strings.TrimSuffix(prefix, "/")) || !strings.HasSuffix(prefix, "/") {
		return nil, errors.New("storage: invalid list prefix " + prefix)
	}
	name, err := s.name(strings.TrimSuffix(prefix, "/"))
	if err != nil {
		return nil, err
	}
	var keys []string
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: name + "/", Recursive: true}) {
		if obj.Err != nil {
			return nil, s3Err(obj.Err)
		}
		key := obj.Key
		if s.prefix != "" {
			key = strings.TrimPrefix(key, s.prefix+"/")
		}
		keys = append(keys, key)
	}
	slices.Sort(keys)
	return keys, nil
}
