package blog

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

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
	p, err := readPost(r.Context(), s, ref)
	if err == nil && p.Status != StatusPublished {
		err = httpapi.ErrNotFound
	}
	if err != nil {
		return err
	}
	return httpapi.PublicJSON(w, r, toAPIPost(p, lang))
}

// SitemapPost is a published post as a sitemap lists it.
type SitemapPost struct {
	Slug      string
	Lang      string   // the language it was written in
	Langs     []string // every language it is in, its own included
	UpdatedAt time.Time
}

// QueueSitemapPosts queues on b the read of up to limit published posts,
// newest publication first, into out: the sitemap reads them in one
// batch with the pages.
func QueueSitemapPosts(b *tenant.ReadBatch, limit int, out *[]SitemapPost) {
	b.Queue(`SELECT slug, language, updated_at, ARRAY(SELECT jsonb_object_keys(texts) ORDER BY 1)
		FROM blog_posts WHERE status = 'published' ORDER BY published_at DESC, id DESC LIMIT $1`, []any{limit}, func(rows pgx.Rows) error {
		*out = nil
		for rows.Next() {
			var p SitemapPost
			if err := rows.Scan(&p.Slug, &p.Lang, &p.UpdatedAt, &p.Langs); err != nil {
				return err
			}
			*out = append(*out, p)
		}
		return rows.Err()
	})
}
