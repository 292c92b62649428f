package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/plinth-dev/plinth/internal/id"
)

// ExportsPrefix is the segment export archives are stored under
// (exports/exp_….tar.gz), outside every project's media.
const ExportsPrefix = "exports"

// ProjectMedia is the view of s that the media code (the pillars, a
// project's deletion, an archive's media) is given: keys below a
// project's prefix only, {project id}/…. What else the store holds, the
// export archives under ExportsPrefix above all, is out of its reach: a
// key outside is ErrNotFound to Open and Delete, and an error to Put,
// List and DeletePrefix. So a media row that names a key it should not
// (an imported archive's, issue 33) cannot serve or delete an archive.
func ProjectMedia(s Store) Store { return projectMedia{s} }

// InProject reports whether key is a valid key below projectID's prefix.
func InProject(projectID, key string) bool {
	rest, ok := strings.CutPrefix(key, projectID+"/")
	return ok && rest != "" && id.Valid("prj_", projectID) && ValidKey(key)
}

type projectMedia struct{ s Store }

// mediaKey reports whether key lies below some project's prefix.
func mediaKey(key string) bool {
	pid, _, ok := strings.Cut(key, "/")
	return ok && InProject(pid, key)
}

func (m projectMedia) Put(ctx context.Context, key string, r io.Reader) (int64, error) {
	if !mediaKey(key) {
		return 0, fmt.Errorf("storage: %q is not a project's media key", key)
	}
	return m.s.Put(ctx, key, r)
}

func (m projectMedia) Open(ctx context.Context, key string) (Object, error) {
	if !mediaKey(key) {
		return nil, ErrNotFound
	}
	return m.s.Open(ctx, key)
}

func (m projectMedia) Delete(ctx context.Context, key string) error {
	if !mediaKey(key) {
		return ErrNotFound
	}
	return m.s.Delete(ctx, key)
}

func (m projectMedia) DeletePrefix(ctx context.Context, prefix string) error {
	if !id.Valid("prj_", prefix) {
		return errors.New("storage: " + prefix + " is not a project's media prefix")
	}
	return m.s.DeletePrefix(ctx, prefix)
}

func (m projectMedia) List(ctx context.Context, prefix string) ([]string, error) {
	if !id.Valid("prj_", strings.TrimSuffix(prefix, "/")) || !strings.HasSuffix(prefix, "/") {
		return nil, errors.New("storage: " + prefix + " is not a project's media prefix")
	}
	return m.s.List(ctx, prefix)
}
