package blog

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// createRequest is the body of POST /blog-posts: type manual (the
// default) takes the post's fields, type ai the generation's.
type createRequest struct {
	Type *string `json:"type"`

	textFields
	LanguageCode  *string  `json:"language_code"`
	Slug          *string  `json:"slug"`
	CategoryID    *int64   `json:"category_id"`
	TagIDs        *[]int64 `json:"tag_ids"`
	FeaturedImage *string  `json:"featured_image"`
	Status        *string  `json:"status"`
	ScheduledAt   *string  `json:"scheduled_at"`

	Topic           *string   `json:"topic"`
	TargetLanguages *[]string `json:"target_languages"`
	Keywords        *[]string `json:"keywords"`
	Tone            *string   `json:"tone"`
}

// set lists the fields among names (JSON names) that req has.
func (req *createRequest) set(names ...string) []string {
	present := map[string]bool{
		"title": req.Title != nil, "content": req.Content != nil, "excerpt": req.Excerpt != nil, "slug": req.Slug != nil,
		"category_id": req.CategoryID != nil, "tag_ids": req.TagIDs != nil, "featured_image": req.FeaturedImage != nil,
		"meta_title": req.MetaTitle != nil, "meta_description": req.MetaDescription != nil, "status": req.Status != nil,
		"scheduled_at": req.ScheduledAt != nil, "topic": req.Topic != nil, "target_languages": req.TargetLanguages != nil,
		"keywords": req.Keywords != nil, "tone": req.Tone != nil,
	}
	var out []string
	for _, n := range names {
		if present[n] {
			out = append(out, n)
		}
	}
	return out
}

var (
	manualOnly = []string{"title", "content", "excerpt", "slug", "category_id", "tag_ids", "featured_image", "meta_title", "meta_description", "status", "scheduled_at"}
	aiOnly     = []string{"topic", "target_languages", "keywords", "tone"}
)

func (sv *Service) createPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req createRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	typ := "manual"
	if req.Type != nil {
		typ = *req.Type
	}
	switch typ {
	case "manual":
		if f := req.set(aiOnly...); len(f) > 0 {
			return httpapi.BadRequest(fmt.Sprintf("unknown field %q for a post of type manual", f[0]))
		}
		return sv.createManual(w, r, s, &req)
	case "ai":
		if f := req.set(manualOnly...); len(f) > 0 {
			return httpapi.BadRequest(fmt.Sprintf("unknown field %q for a post of type ai", f[0]))
		}
		return sv.submitGenerate(w, r, s, &req)
	}
	return httpapi.Invalid("type", "must be manual or ai")
}

func (sv *Service) createManual(w http.ResponseWriter, r *http.Request, s *tenant.Scope, req *createRequest) error {
	if req.Title == nil {
		return httpapi.BadRequest(`missing required field "title"`)
	}
	var v httpapi.Validator
	req.textFields.clean(&v)
	lang := s.Project.DefaultLanguage
	if req.LanguageCode != nil {
		lang = *req.LanguageCode
		checkLanguage(&v, "language_code", lang)
	}
	checkSlug(&v, req.Slug)
	if req.FeaturedImage != nil {
		checkImageURL(&v, *req.FeaturedImage)
	}
	var tags []int64
	if req.TagIDs != nil {
		tags = checkTagIDs(&v, *req.TagIDs)
	}
	at := parseTime(&v, "scheduled_at", req.ScheduledAt)
	status := StatusDraft
	if at != nil {
		status = StatusScheduled
	}
	if req.Status != nil {
		status = *req.Status
		v.Check(status == StatusDraft || status == StatusPublished || status == StatusScheduled, "status", "must be draft, published or scheduled")
	}
	v.Check(status != StatusScheduled || req.ScheduledAt != nil, "scheduled_at", "is required with status scheduled")
	v.Check(status == StatusScheduled || req.ScheduledAt == nil, "scheduled_at", "is only for status scheduled")
	checkFuture(&v, at, time.Now())
	if err := v.Err(); err != nil {
		return err
	}
	text := req.onto(Translation{Lang: lang})
	var out Post
	err := s.Tx(r.Context(), func(tx pgx.Tx) (err error) {
		ctx := r.Context()
		if err := checkTerms(ctx, tx, req.CategoryID, tags); err != nil {
			return err
		}
		row := &postRow{Status: status, Language: lang, TagIDs: tags, FeaturedImage: req.FeaturedImage, ScheduledAt: at}
		if req.CategoryID != nil {
			row.Category = &Term{ID: *req.CategoryID}
		}
		if row.Slug, err = pickSlug(ctx, tx, spacePost, req.Slug, text.Title, 0); err != nil {
			return err
		}
		id, err := insertPost(ctx, tx, row, text)
		if err != nil {
			return err
		}
		out, err = sv.finishWrite(ctx, tx, s, id, status == StatusPublished, "")
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, out)
}

// checkTerms answers 422 when the category or a tag does not exist. The
// rows found stay locked (FOR KEY SHARE) until the transaction ends, so a
// concurrent delete of a tag waits and then takes it off this post too.
func checkTerms(ctx context.Context, tx pgx.Tx, categoryID *int64, tagIDs []int64) error {
	var v httpapi.Validator
	check := func(kind, field string, ids []int64) error {
		rows, err := tx.Query(ctx, `SELECT id FROM blog_terms WHERE kind = $1 AND id = ANY($2) FOR KEY SHARE`, kind, ids)
		if err != nil {
			return err
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		for _, id := range ids {
			v.Check(slices.Contains(found, id), field, fmt.Sprintf("no %s has the id %d", kind, id))
		}
		return nil
	}
	if categoryID != nil {
		if err := check(spaceCategory, "category_id", []int64{*categoryID}); err != nil {
			return err
		}
	}
	if len(tagIDs) > 0 {
		if err := check(spaceTag, "tag_ids", tagIDs); err != nil {
			return err
		}
	}
	return v.Err()
}

// finishWrite reloads a written post, emits blog_post.published when the
// write published it, and returns the post in lang.
func (sv *Service) finishWrite(ctx context.Context, tx pgx.Tx, s *tenant.Scope, id int64, published bool, lang string) (Post, error) {
	p, err := loadPost(ctx, tx, strconv.FormatInt(id, 10), false)
	if err != nil {
		return Post{}, err
	}
	if published {
		if err := sv.emit(ctx, tx, s, TopicPublished, toAPIPost(p, p.Language)); err != nil {
			return Post{}, err
		}
	}
	return toAPIPost(p, lang), nil
}

func (sv *Service) listPosts(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return sv.list(w, r, s, true)
}

// list serves the admin list and, with admin false, the public one.
func (sv *Service) list(w http.ResponseWriter, r *http.Request, s *tenant.Scope, admin bool) error {
	page, err := httpapi.ParsePage(r)
	if err != nil {
		return err
	}
	lang, err := langQuery(r)
	if err != nil {
		return err
	}
	f, err := parseFilter(r, admin)
	if err != nil {
		return err
	}
	var rows []*postRow
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		rows, err = listPosts(r.Context(), tx, f, page.Cursor, page.Limit+1)
		return err
	})
	if err != nil {
		return err
	}
	out := make([]Post, len(rows))
	for i, p := range rows {
		out[i] = toAPIPost(p, lang)
	}
	if admin {
		return httpapi.JSON(w, http.StatusOK, httpapi.NewList(out, page.Limit, func(p Post) string { return strconv.FormatInt(p.ID, 10) }))
	}
	return httpapi.PublicJSON(w, r, httpapi.NewList(out, page.Limit, publicCursor))
}

func (sv *Service) getPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	lang, err := langQuery(r)
	if err != nil {
		return err
	}
	p, err := readPost(r.Context(), s, chi.URLParam(r, "ref"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, toAPIPost(p, lang))
}

// readPost reads the post ref names (loadPost) in a transaction of its own.
func readPost(ctx context.Context, s *tenant.Scope, ref string) (*postRow, error) {
	var p *postRow
	err := s.Tx(ctx, func(tx pgx.Tx) error {
		var err error
		p, err = loadPost(ctx, tx, ref, false)
		return err
	})
	return p, err
}

// patchRequest is the body of PATCH /blog-posts/{id_or_slug}: the texts
// are those of the post's original language (other languages: PUT
// .../translations/{lang}); null removes the category or the image.
type patchRequest struct {
	textFields
	Slug          *string          `json:"slug"`
	CategoryID    nullable[int64]  `json:"category_id"`
	TagIDs        *[]int64         `json:"tag_ids"`
	FeaturedImage nullable[string] `json:"featured_image"`
	Status        *string          `json:"status"`
	ScheduledAt   *string          `json:"scheduled_at"`
}

func (sv *Service) patchPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	var req patchRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	req.textFields.clean(&v)
	checkSlug(&v, req.Slug)
	if req.FeaturedImage.Set && !req.FeaturedImage.Null {
		checkImageURL(&v, req.FeaturedImage.V)
	}
	var tags []int64
	if req.TagIDs != nil {
		tags = checkTagIDs(&v, *req.TagIDs)
	}
	at := parseTime(&v, "scheduled_at", req.ScheduledAt)
	if req.Status != nil {
		st := *req.Status
		v.Check(st == StatusDraft || st == StatusPublished || st == StatusScheduled || st == StatusArchived,
			"status", "must be one of draft, published, scheduled, archived")
		v.Check(st != StatusScheduled || req.ScheduledAt != nil, "scheduled_at", "is required with status scheduled")
		v.Check(st == StatusScheduled || req.ScheduledAt == nil, "scheduled_at", "is only for status scheduled")
	} else {
		v.Check(req.ScheduledAt == nil, "scheduled_at", "is set with POST .../schedule or with status scheduled")
	}
	checkFuture(&v, at, time.Now())
	if err := v.Err(); err != nil {
		return err
	}
	var out Post
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		ctx := r.Context()
		p, err := loadPost(ctx, tx, chi.URLParam(r, "ref"), true)
		if err != nil {
			return err
		}
		var cat *int64
		if req.CategoryID.Set && !req.CategoryID.Null {
			cat = &req.CategoryID.V
		}
		if err := checkTerms(ctx, tx, cat, tags); err != nil {
			return err
		}
		if req.Slug != nil && *req.Slug != p.Slug {
			if _, err := pickSlug(ctx, tx, spacePost, req.Slug, "", p.ID); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE blog_posts SET slug = $2 WHERE id = $1`, p.ID, *req.Slug); err != nil {
				return err
			}
		}
		if req.CategoryID.Set {
			if _, err := tx.Exec(ctx, `UPDATE blog_posts SET category_id = $2 WHERE id = $1`, p.ID, cat); err != nil {
				return err
			}
		}
		if req.FeaturedImage.Set {
			var img *string
			if !req.FeaturedImage.Null {
				img = &req.FeaturedImage.V
			}
			if _, err := tx.Exec(ctx, `UPDATE blog_posts SET featured_image = $2 WHERE id = $1`, p.ID, img); err != nil {
				return err
			}
		}
		if req.TagIDs != nil {
			if err := setTags(ctx, tx, p.ID, tags); err != nil {
				return err
			}
		}
		if req.any() {
			if err := putText(ctx, tx, p.ID, req.onto(p.text(p.Language))); err != nil {
				return err
			}
		}
		published := false
		if req.Status != nil {
			if published, err = setStatus(ctx, tx, p, *req.Status, at); err != nil {
				return err
			}
		}
		if err := touch(ctx, tx, p.ID); err != nil {
			return err
		}
		out, err = sv.finishWrite(ctx, tx, s, p.ID, published, "")
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// setStatus moves p to status (at: the time of a schedule) and reports
// whether p became published. Publishing a published post changes
// nothing. scheduled_at is kept only while a post is scheduled and, as a
// record, once the scheduler published it.
func setStatus(ctx context.Context, tx pgx.Tx, p *postRow, status string, at *time.Time) (bool, error) {
	if p.Status == status && status != StatusScheduled {
		return false, nil
	}
	var q string
	args := []any{p.ID}
	switch status {
	case StatusPublished:
		q = `UPDATE blog_posts SET status = 'published', published_at = now(), scheduled_at = NULL, updated_at = now() WHERE id = $1`
	case StatusScheduled:
		q = `UPDATE blog_posts SET status = 'scheduled', scheduled_at = $2, published_at = NULL, updated_at = now() WHERE id = $1`
		args = append(args, *at)
	case StatusArchived:
		q = `UPDATE blog_posts SET status = 'archived', scheduled_at = NULL, updated_at = now() WHERE id = $1`
	case StatusDraft:
		q = `UPDATE blog_posts SET status = 'draft', scheduled_at = NULL, published_at = NULL, updated_at = now() WHERE id = $1`
	default:
		return false, fmt.Errorf("blog: unknown status %q", status)
	}
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		return false, err
	}
	p.Status = status
	return status == StatusPublished, nil
}

// transition serves publish, schedule and archive.
func (sv *Service) transition(w http.ResponseWriter, r *http.Request, s *tenant.Scope, status string, at *time.Time) error {
	var err error
	var out Post
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		p, err := loadPost(r.Context(), tx, chi.URLParam(r, "ref"), true)
		if err != nil {
			return err
		}
		published, err := setStatus(r.Context(), tx, p, status, at)
		if err != nil {
			return err
		}
		out, err = sv.finishWrite(r.Context(), tx, s, p.ID, published, "")
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

func (sv *Service) publishPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return sv.transition(w, r, s, StatusPublished, nil)
}

func (sv *Service) archivePost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return sv.transition(w, r, s, StatusArchived, nil)
}

type scheduleRequest struct {
	ScheduledAt *string `json:"scheduled_at" required:"true"`
}

func (sv *Service) schedulePost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req scheduleRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	at := parseTime(&v, "scheduled_at", req.ScheduledAt)
	checkFuture(&v, at, time.Now())
	if err := v.Err(); err != nil {
		return err
	}
	return sv.transition(w, r, s, StatusScheduled, at)
}

func (sv *Service) deletePost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		p, err := loadPost(r.Context(), tx, chi.URLParam(r, "ref"), true)
		if err != nil {
			return err
		}
		_, err = tx.Exec(r.Context(), `DELETE FROM blog_posts WHERE id = $1`, p.ID)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

// putTranslation writes the post's text in one language (the original
// one included) from a body of textFields, title required, all fields at
// once: an absent field is empty.
func (sv *Service) putTranslation(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	lang := chi.URLParam(r, "lang")
	var req textFields
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if req.Title == nil {
		return httpapi.BadRequest(`missing required field "title"`)
	}
	var v httpapi.Validator
	req.clean(&v)
	checkLanguage(&v, "lang", lang)
	if err := v.Err(); err != nil {
		return err
	}
	t := req.onto(Translation{Lang: lang})
	var out Post
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		p, err := loadPost(r.Context(), tx, chi.URLParam(r, "ref"), true)
		if err != nil {
			return err
		}
		if err := putText(r.Context(), tx, p.ID, t); err != nil {
			return err
		}
		if err := touch(r.Context(), tx, p.ID); err != nil {
			return err
		}
		out, err = sv.finishWrite(r.Context(), tx, s, p.ID, false, lang)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}
