package blog

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// publicList serves GET /v1/public/blog-posts: published posts, newest
// publication first, with the filters of the admin list but status.
func (sv *Service) publicList(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return sv.list(w, r, s, false)
}

// publicGet serves GET /v1/public/blog-posts/{slug}: a published post.
func (sv *Service) publicGet(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	lang, err := langQuery(r)
	if err != nil {
		return err
	}
	ref := chi.URLParam(r, "slug")
	if _, numeric := isID(ref); numeric {
		return httpapi.NotFound("no published post has this slug")
	}
	p, err := readPost(r.Context(), s, ref, false)
	if err == nil && p.Status != StatusPublished {
		err = httpapi.ErrNotFound
	}
	if err != nil {
		return err
	}
	return httpapi.PublicJSON(w, r, toAPIPost(p, s.Project.ChainFor(lang)))
}
