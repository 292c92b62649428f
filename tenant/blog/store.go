package blog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// postRow is a blog_posts row with its category and tags.
type postRow struct {
	ID            int64
	Slug          string
	Status        string
	Language      string
	FeaturedImage *string
	PublishedAt   *time.Time
	ScheduledAt   *time.Time
	CreatedAt     time.Time
	UpdatedAt     time.Time
	Category      *Term
	Texts         []Translation // the original language first, then by language code
	TagIDs        []int64
	Tags          []Term // by name
	// HasDraft says whether the post has a draft: set by authenticated
	// reads only (markPosts, readPost's admin read), never by public ones.
	HasDraft *bool
}

// text returns the post's texts in the language of chain[0]: those of
// the first language of chain the post has a text in (its Lang), each
// field empty there taken from the next language of chain that has it,
// and the post's original language ending the chain. fallback says which
// field came from another language than chain[0]; nil when none did.
// A nil chain is the original language alone.
func (p *postRow) text(chain []string) (t Translation, fallback tenant.Provenance) {
	if !slices.Contains(chain, p.Language) {
		chain = append(slices.Clip(chain), p.Language)
	}
	in := make(map[string]Translation, len(p.Texts)) // a language without one: the zero value
	for _, x := range p.Texts {
		in[x.Lang] = x
	}
	t, from := tenant.Pick(chain, func(l string) (Translation, bool) { x, ok := in[l]; return x, ok })
	if from == "" {
		return t, nil
	}
	l := tenant.Localizer{Chain: chain, Fallback: &fallback}
	l.Text("title", &t.Title, func(lang string) string { return in[lang].Title })
	l.Text("excerpt", &t.Excerpt, func(lang string) string { return in[lang].Excerpt })
	l.Text("content", &t.Content, func(lang string) string { return in[lang].Content })
	l.Text("meta_title", &t.MetaTitle, func(lang string) string { return in[lang].MetaTitle })
	l.Text("meta_description", &t.MetaDescription, func(lang string) string { return in[lang].MetaDescription })
	return t, fallback
}

// original is the post's text in its original language.
func (p *postRow) original() Translation {
	t, _ := p.text(nil)
	return t
}

const postColumns = `p.id, p.slug, p.status, p.language, p.texts, p.tag_ids, p.featured_image, p.published_at, p.scheduled_at,
	p.created_at, p.updated_at, c.id, c.name, c.slug`

const postFrom = ` FROM blog_posts p LEFT JOIN blog_terms c ON c.id = p.category_id`

// scanPost reads a row of postColumns, then into extra the columns after
// them.
func scanPost(row pgx.Row, extra ...any) (*postRow, error) {
	var p postRow
	var texts map[string]Translation
	var cid *int64
	var cname, cslug *string
	dest := append([]any{&p.ID, &p.Slug, &p.Status, &p.Language, &texts, &p.TagIDs, &p.FeaturedImage, &p.PublishedAt, &p.ScheduledAt,
		&p.CreatedAt, &p.UpdatedAt, &cid, &cname, &cslug}, extra...)
	if err := row.Scan(dest...); err != nil {
		return nil, err
	}
	if cid != nil {
		p.Category = &Term{ID: *cid, Name: *cname, Slug: *cslug}
	}
	for lang, t := range texts {
		t.Lang = lang
		p.Texts = append(p.Texts, t)
	}
	sort.Slice(p.Texts, func(i, j int) bool {
		a, b := p.Texts[i].Lang, p.Texts[j].Lang
		if (a == p.Language) != (b == p.Language) {
			return a == p.Language
		}
		return a < b
	})
	return &p, nil
}

// fill loads the tags of posts.
func fill(ctx context.Context, tx tenant.Querier, posts []*postRow) (err error) {
	defer httpapi.Wrap(&err, "fill")
	var ids []int64
	for _, p := range posts {
		ids = append(ids, p.TagIDs...)
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT `+termColumns+` FROM blog_terms WHERE kind = 'tag' AND id = ANY($1) ORDER BY name, id`, ids)
	if err != nil {
		return err
	}
	tags, err := pgx.CollectRows(rows, scanTerm)
	if err != nil {
		return err
	}
	for _, p := range posts {
		for _, t := range tags {
			if slices.Contains(p.TagIDs, t.ID) {
				p.Tags = append(p.Tags, t)
			}
		}
	}
	return nil
}

// isID reports whether ref names a post by id (numeric) rather than slug.
func isID(ref string) (int64, bool) {
	if ref == "" || strings.TrimLeft(ref, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseInt(ref, 10, 64)
	return id, err == nil
}

// postWhere is the condition (on blog_posts p) and its argument that
// select the post ref names: a numeric id or a slug.
func postWhere(ref string) (string, any) {
	if id, ok := isID(ref); ok {
		return `p.id = $1`, id
	}
	return `p.slug = $1`, ref
}

// loadPost reads the post ref names (a numeric id or a slug), with lock
// FOR UPDATE when forUpdate; httpapi.ErrNotFound when absent.
func loadPost(ctx context.Context, tx tenant.Querier, ref string, forUpdate bool) (_ *postRow, err error) {
	defer httpapi.Wrap(&err, "loadPost(%q)", ref)
	where, arg := postWhere(ref)
	q := `SELECT ` + postColumns + postFrom + ` WHERE ` + where
	if forUpdate {
		q += ` FOR UPDATE OF p`
	}
	p, err := scanPost(tx.QueryRow(ctx, q, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, httpapi.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	return p, fill(ctx, tx, []*postRow{p})
}

// postTags is the column of a post's tags, by name, as a JSON list of
// terms (NULL when it has none): the second query of loadPost, joined to
// the first for readPost.
const postTags = `, (SELECT jsonb_agg(jsonb_build_object('id', t.id, 'name', t.name, 'slug', t.slug) ORDER BY t.name, t.id)
	FROM blog_terms t WHERE t.kind = 'tag' AND t.id = ANY (p.tag_ids))`

// postRead is the query of readPost but its condition.
const postRead = `SELECT ` + postColumns + postTags + postFrom + ` WHERE `

// postAdminRead is postRead with, last, whether the post has a draft ($2:
// drafts.Post): the authenticated read, still one round trip. The public
// read never touches the drafts table.
const postAdminRead = `SELECT ` + postColumns + postTags +
	`, EXISTS (SELECT 1 FROM drafts d WHERE d.type = $2 AND d.ref = p.id::text)` + postFrom + ` WHERE `

// PostBySlugSQL is the query GET /blog-posts/{slug} runs, for benchmarks
// comparing it with a bare handler.
const PostBySlugSQL = postRead + `p.slug = $1`

// readPost reads the post ref names, as loadPost does, outside a
// transaction and in one round trip (Scope.Read): the read of GET
// /blog-posts/{ref} (admin: with HasDraft) and of its public counterpart.
func readPost(ctx context.Context, s *tenant.Scope, ref string, admin bool) (_ *postRow, err error) {
	defer httpapi.Wrap(&err, "readPost(%q)", ref)
	where, arg := postWhere(ref)
	q, args := postRead+where, []any{arg}
	if admin {
		q, args = postAdminRead+where, []any{arg, drafts.Post}
	}
	var p *postRow
	err = s.Read(ctx, q, args, func(rows pgx.Rows) error {
		if !rows.Next() {
			return rows.Err()
		}
		var tags []Term
		var hasDraft bool
		extra := []any{&tags}
		if admin {
			extra = append(extra, &hasDraft)
		}
		var err error
		if p, err = scanPost(rows, extra...); err != nil {
			return err
		}
		p.Tags = tags
		if admin {
			p.HasDraft = &hasDraft
		}
		return nil
	})
	if err == nil && p == nil {
		err = httpapi.ErrNotFound
	}
	return p, err
}

// loadPostID is loadPost of the post with id.
func loadPostID(ctx context.Context, tx pgx.Tx, id int64, forUpdate bool) (_ *postRow, err error) {
	defer httpapi.Wrap(&err, "loadPostID(%d)", id)
	return loadPost(ctx, tx, strconv.FormatInt(id, 10), forUpdate)
}

// postFilter selects posts of a list.
type postFilter struct {
	Status       *string
	CategoryID   *int64
	CategorySlug *string
	TagID        *int64
	TagSlug      *string
	IDs          []int64
	// Public lists published posts by publication, newest first; the
	// admin list reads by id, newest first.
	Public bool
}

// postCursor is the last post of the previous page: its id and, in the
// public list, its publication time.
type postCursor struct {
	PublishedAt time.Time
	ID          int64
}

// listPosts returns up to limit posts after the post of cursor (nil: from
// the first).
func listPosts(ctx context.Context, tx tenant.Querier, f postFilter, after *postCursor, limit int) (_ []*postRow, err error) {
	defer httpapi.Wrap(&err, "listPosts")
	args := []any{f.Status, f.CategoryID, f.CategorySlug, f.TagID, f.TagSlug, f.IDs, limit}
	// The authenticated list says has_draft in the same statement.
	draftCol := `, false`
	if !f.Public {
		draftCol = `, EXISTS (SELECT 1 FROM drafts d WHERE d.type = 'blog_post' AND d.ref = p.id::text)`
	}
	q := `SELECT ` + postColumns + draftCol + postFrom + `
		WHERE ($1::text IS NULL OR p.status = $1)
		AND ($2::bigint IS NULL OR p.category_id = $2)
		AND ($3::text IS NULL OR c.slug = $3)
		AND ($4::bigint IS NULL OR $4 = ANY (p.tag_ids))
		AND ($5::text IS NULL OR EXISTS (SELECT 1 FROM blog_terms t WHERE t.kind = 'tag' AND t.slug = $5 AND t.id = ANY (p.tag_ids)))
		AND ($6::bigint[] IS NULL OR p.id = ANY($6))`
	if f.Public {
		q += ` AND p.status = 'published'`
		if after != nil {
			q += ` AND (p.published_at, p.id) < ($8, $9)`
			args = append(args, after.PublishedAt, after.ID)
		}
		q += ` ORDER BY p.published_at DESC, p.id DESC LIMIT $7`
	} else {
		if after != nil {
			q += ` AND p.id < $8`
			args = append(args, after.ID)
		}
		q += ` ORDER BY p.id DESC LIMIT $7`
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	posts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*postRow, error) {
		var hasDraft bool
		p, err := scanPost(r, &hasDraft)
		if err == nil && !f.Public {
			p.HasDraft = &hasDraft
		}
		return p, err
	})
	if err != nil {
		return nil, err
	}
	return posts, fill(ctx, tx, posts)
}

// Slug spaces: posts, and categories and tags apart.
const (
	spacePost     = "post"
	spaceCategory = "category"
	spaceTag      = "tag"
)

// lockSlugs serialises slug derivation in a space of the project, so two
// requests deriving from the same title get -2 and -3, not a 409.
func lockSlugs(ctx context.Context, tx pgx.Tx, space string) (err error) {
	defer httpapi.Wrap(&err, "lockSlugs")
	_, err = tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.blog.' || $1 || '.slug', 0))`, space)
	return err
}

// slugTaken reports whether another row (not except) of space has slug s.
func slugTaken(ctx context.Context, tx pgx.Tx, space, s string, except int64) (taken bool, err error) {
	defer httpapi.Wrap(&err, "slugTaken")
	if space == spacePost {
		err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM blog_posts WHERE slug = $1 AND id <> $2)`, s, except).Scan(&taken)
	} else {
		err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM blog_terms WHERE kind = $3 AND slug = $1 AND id <> $2)`, s, except, space).Scan(&taken)
	}
	return taken, err
}

// pickSlug returns the slug of a new or renamed row of space: given, when
// it is free (409 conflict when taken), else derived from name and made
// unique with -2, -3, …. It takes the space's slug lock.
func pickSlug(ctx context.Context, tx pgx.Tx, space string, given *string, name string, except int64) (_ string, err error) {
	defer httpapi.Wrap(&err, "pickSlug")
	if err := lockSlugs(ctx, tx, space); err != nil {
		return "", err
	}
	if given != nil {
		taken, err := slugTaken(ctx, tx, space, *given, except)
		if err != nil {
			return "", err
		}
		if taken {
			return "", httpapi.Conflict(httpapi.CodeConflict, "the slug "+*given+" is taken")
		}
		return *given, nil
	}
	return slug.Unique(ctx, deriveSlug(name, space), func(ctx context.Context, c string) (bool, error) {
		return slugTaken(ctx, tx, space, c, except)
	})
}

// deriveSlug is slug.Make of name, never all digits: a numeric reference
// (a path segment, a filter) names a post, category or tag by id.
func deriveSlug(name, space string) string {
	s := slug.Make(name)
	if _, numeric := isID(s); numeric {
		s = space + "-" + s
	}
	return s
}

// validSlug reports whether a given slug is usable: the slug pattern, and
// not all digits.
func validSlug(s string) bool {
	_, numeric := isID(s)
	return slug.Valid(s) && !numeric
}

// textJSON is a post's text as stored in texts, under its language.
func textJSON(t Translation) map[string]any {
	return map[string]any{t.Lang: map[string]string{"title": t.Title, "excerpt": t.Excerpt, "content": t.Content,
		"meta_title": t.MetaTitle, "meta_description": t.MetaDescription}}
}

// insertPost inserts a post with its text in its original language, under
// the slug given or else one derived from its title (pickSlug), and
// returns its id; p.Slug is set to the slug.
func insertPost(ctx context.Context, tx pgx.Tx, p *postRow, given *string, text Translation) (id int64, err error) {
	defer httpapi.Wrap(&err, "insertPost")
	if p.Slug, err = pickSlug(ctx, tx, spacePost, given, text.Title, 0); err != nil {
		return 0, err
	}
	var catID *int64
	if p.Category != nil {
		catID = &p.Category.ID
	}
	if p.TagIDs == nil {
		p.TagIDs = []int64{}
	}
	err = tx.QueryRow(ctx, `INSERT INTO blog_posts (slug, status, language, texts, category_id, tag_ids, featured_image, published_at, scheduled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $2 = 'published' THEN now() END, $8) RETURNING id`,
		p.Slug, p.Status, p.Language, textJSON(text), catID, p.TagIDs, p.FeaturedImage, p.ScheduledAt).Scan(&id)
	return id, err
}

// putText writes the post's text in t.Lang.
func putText(ctx context.Context, tx pgx.Tx, postID int64, t Translation) (err error) {
	defer httpapi.Wrap(&err, "putText(%d)", postID)
	_, err = tx.Exec(ctx, `UPDATE blog_posts SET texts = texts || $2, updated_at = now() WHERE id = $1`, postID, textJSON(t))
	return err
}

// putContent makes c the content of the live post p (its slug, image,
// category, tags and texts; c's terms exist); a slug another post has is
// a 409.
func putContent(ctx context.Context, tx pgx.Tx, p *postRow, c postDraft) (err error) {
	defer httpapi.Wrap(&err, "putContent(%d)", p.ID)
	if c.Slug != p.Slug {
		if _, err := pickSlug(ctx, tx, spacePost, &c.Slug, "", p.ID); err != nil {
			return err
		}
	}
	texts := map[string]any{}
	for _, t := range c.Translations {
		maps.Copy(texts, textJSON(t))
	}
	_, err = tx.Exec(ctx, `UPDATE blog_posts SET slug = $2, featured_image = $3, category_id = $4, tag_ids = $5, texts = $6, updated_at = now()
		WHERE id = $1`, p.ID, c.Slug, c.FeaturedImage, c.CategoryID, c.TagIDs, texts)
	return err
}

// postChange is what a PATCH changes of a post besides its texts and
// status: nil and unset fields are left as they are.
type postChange struct {
	Slug     *string
	Category nullable[int64]
	Image    nullable[string]
	TagIDs   []int64
}

// updatePost applies c to the post with id and bumps its updated_at.
func updatePost(ctx context.Context, tx pgx.Tx, id int64, c postChange) (err error) {
	defer httpapi.Wrap(&err, "updatePost(%d)", id)
	_, err = tx.Exec(ctx, `UPDATE blog_posts SET slug = COALESCE($2::text, slug),
			category_id = CASE WHEN $3::boolean THEN $4::bigint ELSE category_id END,
			featured_image = CASE WHEN $5::boolean THEN $6::text ELSE featured_image END,
			tag_ids = COALESCE($7::bigint[], tag_ids), updated_at = now()
		WHERE id = $1`, id, c.Slug, c.Category.Set, c.Category.ptr(), c.Image.Set, c.Image.ptr(), c.TagIDs)
	return err
}

// setStatus moves p to status (at: the time of a schedule) and returns
// the status it moved p to, "" when it changed nothing: moving a post to
// the status it has changes nothing, except a schedule, which takes the
// new time. scheduled_at is kept only while a post is scheduled and, as a
// record, once its scheduled job published it.
func setStatus(ctx context.Context, tx pgx.Tx, p *postRow, status string, at *time.Time) (moved string, err error) {
	defer httpapi.Wrap(&err, "setStatus(%s)", status)
	if p.Status == status && status != StatusScheduled {
		return "", nil
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
		return "", fmt.Errorf("blog: unknown status %q", status)
	}
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		return "", err
	}
	p.Status = status
	return status, nil
}

// deletePost deletes the post ref names, its draft and its versions;
// httpapi.ErrNotFound when absent.
func deletePost(ctx context.Context, tx pgx.Tx, ref string) (err error) {
	defer httpapi.Wrap(&err, "deletePost(%q)", ref)
	where, arg := postWhere(ref)
	var id int64
	err = tx.QueryRow(ctx, `DELETE FROM blog_posts p WHERE `+where+` RETURNING p.id`, arg).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return httpapi.ErrNotFound
	}
	if err != nil {
		return err
	}
	return drafts.Forget(ctx, tx, drafts.Post, postRef(id))
}

// claimScheduled publishes the post with id if it is scheduled at at, and
// reports whether it did. scheduled_at stays as a record of the schedule.
func claimScheduled(ctx context.Context, tx pgx.Tx, id int64, at time.Time) (_ bool, err error) {
	defer httpapi.Wrap(&err, "claimScheduled(%d)", id)
	tag, err := tx.Exec(ctx, `UPDATE blog_posts SET status = 'published', published_at = now(), updated_at = now()
		WHERE id = $1 AND status = 'scheduled' AND scheduled_at = $2`, id, at)
	return tag.RowsAffected() == 1, err
}

// scheduledPostsSQL reads the id and scheduled time of every scheduled
// post, for their publish jobs (EnqueueScheduled).
const scheduledPostsSQL = `SELECT id, scheduled_at FROM blog_posts WHERE status = 'scheduled' ORDER BY id`

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

// postText is a post's id and its texts by language, as stored.
type postText struct {
	id    int64
	texts map[string]map[string]any
}

// postTexts reads up to limit posts' texts by id, after the id after.
func postTexts(ctx context.Context, tx pgx.Tx, after int64, limit int) (_ []postText, err error) {
	defer httpapi.Wrap(&err, "postTexts(%d)", after)
	rows, err := tx.Query(ctx, `SELECT id, texts FROM blog_posts WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (postText, error) {
		var p postText
		err := r.Scan(&p.id, &p.texts)
		return p, err
	})
}

// setPostTexts replaces post id's texts.
func setPostTexts(ctx context.Context, tx pgx.Tx, id int64, texts map[string]map[string]any) (err error) {
	defer httpapi.Wrap(&err, "setPostTexts(%d)", id)
	b, err := json.Marshal(texts)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE blog_posts SET texts = $2 WHERE id = $1`, id, b)
	return err
}
