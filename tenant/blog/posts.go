package blog

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// Post statuses.
const (
	StatusDraft     = "draft"
	StatusPublished = "published"
	StatusScheduled = "scheduled"
	StatusArchived  = "archived"
)

// Post is the Blog post resource. The flat texts are those of Lang: the
// language asked for with ?lang when the post has it, else the post's
// original language (LanguageCode).
type Post struct {
	ID              int64         `json:"id"`
	Slug            string        `json:"slug"`
	Status          string        `json:"status"`
	FeaturedImage   *string       `json:"featured_image"`
	PublishedAt     *time.Time    `json:"published_at"`
	ScheduledAt     *time.Time    `json:"scheduled_at"`
	Lang            string        `json:"lang"`
	LanguageCode    string        `json:"language_code"`
	Title           string        `json:"title"`
	Excerpt         string        `json:"excerpt"`
	Content         string        `json:"content"`
	MetaTitle       string        `json:"meta_title"`
	MetaDescription string        `json:"meta_description"`
	Category        *Term         `json:"category"`
	Tags            []Term        `json:"tags"`
	Translations    []Translation `json:"translations"`
	CreatedAt       time.Time     `json:"created_at"`
	UpdatedAt       time.Time     `json:"updated_at"`
	// HasDraft says whether the post has unpublished changes (a draft);
	// authenticated answers only, the public surface omits it.
	HasDraft *bool `json:"has_draft,omitempty"`
	// Fallback says, for a read in a language (?lang), which text came
	// from another language of its chain ({"title": "fr"}); omitted when
	// none did.
	Fallback tenant.Provenance `json:"fallback,omitempty"`
}

// Translation is a post's text in one language.
type Translation struct {
	Lang            string `json:"lang"`
	Title           string `json:"title"`
	Excerpt         string `json:"excerpt"`
	Content         string `json:"content"`
	MetaTitle       string `json:"meta_title"`
	MetaDescription string `json:"meta_description"`
}

// toAPIPost is the resource of p with its flat texts in the language of
// chain[0], following chain (postRow.text; nil: the original language).
func toAPIPost(p *postRow, chain []string) Post {
	t, fallback := p.text(chain)
	out := Post{
		ID: p.ID, Slug: p.Slug, Status: p.Status, FeaturedImage: p.FeaturedImage,
		PublishedAt: utc(p.PublishedAt), ScheduledAt: utc(p.ScheduledAt),
		Lang: t.Lang, LanguageCode: p.Language,
		Title: t.Title, Excerpt: t.Excerpt, Content: t.Content, MetaTitle: t.MetaTitle, MetaDescription: t.MetaDescription,
		Category: p.Category, Tags: p.Tags, Translations: p.Texts,
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC(), HasDraft: p.HasDraft, Fallback: fallback,
	}
	if out.Tags == nil {
		out.Tags = []Term{}
	}
	if out.Translations == nil {
		out.Translations = []Translation{}
	}
	return out
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

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
	if draft, _, err := drafts.Mode(r, nil, nil); err != nil || draft {
		return cmp.Or(err, error(httpapi.Invalid("draft", "a new post is created live (status draft until published); draft writes edit an existing post")))
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
	row := &postRow{Status: status, Language: lang, TagIDs: tags, FeaturedImage: req.FeaturedImage, ScheduledAt: at}
	if req.CategoryID != nil {
		row.Category = &Term{ID: *req.CategoryID}
	}
	text := req.onto(Translation{Lang: lang})
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Post, error) {
		return sv.create(r.Context(), tx, s, row, req.Slug, text)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, out)
}

// create stores a new post, its slug given or derived from its title, and
// returns it.
func (sv *Service) create(ctx context.Context, tx pgx.Tx, s *tenant.Scope, row *postRow, slug *string, text Translation) (Post, error) {
	var catID *int64
	if row.Category != nil {
		catID = &row.Category.ID
	}
	if err := checkTerms(ctx, tx, catID, row.TagIDs); err != nil {
		return Post{}, err
	}
	id, err := insertPost(ctx, tx, row, slug, text)
	if err != nil {
		return Post{}, err
	}
	return sv.finishWrite(ctx, tx, s, id, row.Status, "")
}

// checkTerms answers 422 when the category or a tag does not exist. The
// rows found stay locked (FOR KEY SHARE) until the transaction ends, so a
// concurrent delete of a tag waits and then takes it off this post too.
func checkTerms(ctx context.Context, tx pgx.Tx, categoryID *int64, tagIDs []int64) error {
	var v httpapi.Validator
	check := func(kind, field string, ids []int64) error {
		found, err := lockTerms(ctx, tx, kind, ids)
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

// finishWrite reloads a written post (with has_draft), follows up the status the write
// moved it to (moved; "" when none), and returns the post in lang: a
// post published emits blog_post.published, a post scheduled gets the
// job that publishes it at its time. The job is given scheduled_at as
// reloaded, that is as stored (microseconds), for it to match the row.
func (sv *Service) finishWrite(ctx context.Context, tx pgx.Tx, s *tenant.Scope, id int64, moved, lang string) (Post, error) {
	p, err := loadPostID(ctx, tx, id, false)
	if err != nil {
		return Post{}, err
	}
	if err := markPosts(ctx, tx, []*postRow{p}); err != nil {
		return Post{}, err
	}
	switch moved {
	case StatusPublished:
		err = sv.emit(ctx, tx, s, TopicPublished, toAPIPost(p, nil))
	case StatusScheduled:
		err = sv.scheduled.Enqueue(ctx, tx, s, p.ID, *p.ScheduledAt) // its publish job, at its time
	}
	if err != nil {
		return Post{}, err
	}
	return toAPIPost(p, s.Project.ChainFor(lang)), nil
}

func (sv *Service) listPosts(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return sv.list(w, r, s, true)
}

// list serves the admin list and, with admin false, the public one.
func (sv *Service) list(w http.ResponseWriter, r *http.Request, s *tenant.Scope, admin bool) error {
	lang, err := langQuery(r)
	if err != nil {
		return err
	}
	f, err := parseFilter(r, admin)
	if err != nil {
		return err
	}
	decode, cursorOf := adminCursor, func(p Post) string { return httpapi.IDText(p.ID) }
	if !admin {
		decode, cursorOf = parsePublicCursor, publicCursor
	}
	list, err := httpapi.ListOf(r, decode, func(after *postCursor, limit int) ([]Post, error) {
		rows, err := listPosts(r.Context(), s.Reader(), f, after, limit)
		out := make([]Post, len(rows))
		for i, p := range rows {
			out[i] = toAPIPost(p, s.Project.ChainFor(lang))
		}
		return out, err
	}, cursorOf)
	if err != nil {
		return err
	}
	if admin {
		return httpapi.JSON(w, http.StatusOK, list)
	}
	return httpapi.PublicJSON(w, r, list)
}

// adminCursor reads the admin list's cursor: the last post's id.
func adminCursor(c string) (*postCursor, error) {
	id, err := httpapi.CursorID(c)
	if err != nil {
		return nil, err
	}
	return &postCursor{ID: id}, nil
}

// The public list's cursor is the last post's publication time (Unix
// microseconds, the database's precision) and id.
func publicCursor(p Post) string {
	return strconv.FormatInt(p.PublishedAt.UnixMicro(), 10) + ":" + strconv.FormatInt(p.ID, 10)
}

func parsePublicCursor(c string) (*postCursor, error) {
	a, b, ok := strings.Cut(c, ":")
	us, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return nil, httpapi.BadCursor()
	}
	return &postCursor{PublishedAt: time.UnixMicro(us), ID: id}, nil
}

// getPost answers the live post, or with ?draft=true its draft view.
func (sv *Service) getPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	lang, err := langQuery(r)
	if err != nil {
		return err
	}
	draft, err := drafts.ReadDraft(r)
	if err != nil {
		return err
	}
	p, err := readPost(r.Context(), s, chi.URLParam(r, "ref"), true)
	if err != nil {
		return err
	}
	if draft && *p.HasDraft {
		out, err := viewPost(r.Context(), s.Reader(), p, s.Project.ChainFor(lang))
		if err != nil {
			return err
		}
		return httpapi.JSON(w, http.StatusOK, out)
	}
	return httpapi.JSON(w, http.StatusOK, toAPIPost(p, s.Project.ChainFor(lang)))
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
	// Draft and Autosave: as the query parameters of the same names
	// (drafts.Mode).
	Draft    *bool `json:"draft"`
	Autosave *bool `json:"autosave"`
}

func (sv *Service) patchPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req patchRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	draft, autosave, err := drafts.Mode(r, req.Draft, req.Autosave)
	if err != nil {
		return err
	}
	const noStatus = "a draft has no status of its own: publish, schedule, archive and unpublish set it"
	if draft && req.Status != nil {
		return httpapi.Invalid("status", noStatus)
	}
	if draft && req.ScheduledAt != nil {
		return httpapi.Invalid("scheduled_at", noStatus)
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
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Post, error) {
		if draft {
			return patchDraft(r.Context(), tx, s, chi.URLParam(r, "ref"), &req, tags, autosave)
		}
		return sv.patch(r.Context(), tx, s, chi.URLParam(r, "ref"), &req, tags, at)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// patch applies a checked PATCH to the post ref names (tags: the tag ids
// without duplicates, at: the schedule time) and returns the post.
func (sv *Service) patch(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, req *patchRequest, tags []int64, at *time.Time) (Post, error) {
	p, err := loadPost(ctx, tx, ref, true)
	if err != nil {
		return Post{}, err
	}
	if err := checkTerms(ctx, tx, req.CategoryID.ptr(), tags); err != nil {
		return Post{}, err
	}
	if req.Slug != nil && *req.Slug != p.Slug {
		if _, err := pickSlug(ctx, tx, spacePost, req.Slug, "", p.ID); err != nil {
			return Post{}, err
		}
	}
	if err := updatePost(ctx, tx, p.ID, postChange{Slug: req.Slug, Category: req.CategoryID, Image: req.FeaturedImage, TagIDs: tags}); err != nil {
		return Post{}, err
	}
	if req.any() {
		if err := putText(ctx, tx, p.ID, req.onto(p.original())); err != nil {
			return Post{}, err
		}
	}
	moved := ""
	if req.Status != nil {
		if moved, err = setStatus(ctx, tx, p, *req.Status, at); err != nil {
			return Post{}, err
		}
	}
	return sv.finishWrite(ctx, tx, s, p.ID, moved, "")
}

// transition serves schedule, archive and unpublish.
func (sv *Service) transition(w http.ResponseWriter, r *http.Request, s *tenant.Scope, status string, at *time.Time) error {
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Post, error) {
		return sv.moveTo(r.Context(), tx, s, chi.URLParam(r, "ref"), status, at)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// moveTo moves the post ref names to status (setStatus) and returns it.
func (sv *Service) moveTo(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref, status string, at *time.Time) (Post, error) {
	p, err := loadPost(ctx, tx, ref, true)
	if err != nil {
		return Post{}, err
	}
	moved, err := setStatus(ctx, tx, p, status, at)
	if err != nil {
		return Post{}, err
	}
	return sv.finishWrite(ctx, tx, s, p.ID, moved, "")
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
	ref := chi.URLParam(r, "ref")
	if err := s.Tx(r.Context(), func(tx pgx.Tx) error { return deletePost(r.Context(), tx, ref) }); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

// translationRequest is the body of PUT .../translations/{lang}.
type translationRequest struct {
	textFields
	// Draft and Autosave: as the query parameters of the same names
	// (drafts.Mode).
	Draft    *bool `json:"draft"`
	Autosave *bool `json:"autosave"`
}

// putTranslation writes the post's text in one language (the original
// one included) from a body of textFields, title required, all fields at
// once: an absent field is empty. A draft write writes it into the
// post's draft.
func (sv *Service) putTranslation(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	lang := chi.URLParam(r, "lang")
	var req translationRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	draft, autosave, err := drafts.Mode(r, req.Draft, req.Autosave)
	if err != nil {
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
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Post, error) {
		if draft {
			return saveDraft(r.Context(), tx, s, chi.URLParam(r, "ref"), autosave, lang, func(_ *postRow, d postDraft) (postDraft, []string, error) {
				return withText(d, t), []string{lang}, nil
			})
		}
		return sv.writeText(r.Context(), tx, s, chi.URLParam(r, "ref"), t)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// writeText writes the text t of the post ref names and returns the post
// in t's language.
func (sv *Service) writeText(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, t Translation) (Post, error) {
	p, err := loadPost(ctx, tx, ref, true)
	if err != nil {
		return Post{}, err
	}
	if err := putText(ctx, tx, p.ID, t); err != nil {
		return Post{}, err
	}
	return sv.finishWrite(ctx, tx, s, p.ID, "", t.Lang)
}
