package blog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// publicList serves GET /v1/public/blog-posts: published posts, newest
// publication first, with the filters of the admin list but status.
func (sv *Service) publicList(w http.ResponseWriter, r *http.Request) error {
	return sv.list(w, r, false)
}

// publicGet serves GET /v1/public/blog-posts/{slug}: a published post.
func (sv *Service) publicGet(w http.ResponseWriter, r *http.Request) error {
	s, err := tenant.From(r)
	if err != nil {
		return err
	}
	lang, err := langQuery(r)
	if err != nil {
		return err
	}
	ref := chi.URLParam(r, "slug")
	if _, numeric := isID(ref); numeric {
		return httpapi.NotFound("no published post has this slug")
	}
	var p *postRow
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		p, err = loadPost(r.Context(), tx, ref, false)
		return err
	})
	if err == nil && p.Status != StatusPublished {
		err = httpapi.ErrNotFound
	}
	if err != nil {
		return err
	}
	return publicJSON(w, r, toAPIPost(p, lang))
}

// publicJSON writes v as a 200 of the public read surface: cacheable for
// 60 s, with a strong ETag over the body; a request whose If-None-Match
// names it gets 304 and no body.
func publicJSON(w http.ResponseWriter, r *http.Request, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	sum := sha256.Sum256(buf.Bytes())
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	h := w.Header()
	h.Set("Cache-Control", "public, max-age=60")
	h.Set("ETag", etag)
	if noneMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
	return nil
}

// noneMatch compares If-None-Match weakly, as RFC 9110 prescribes.
func noneMatch(header, etag string) bool {
	for _, t := range strings.Split(header, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == etag {
			return true
		}
	}
	return false
}
