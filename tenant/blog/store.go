package blog

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
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
}

// Term is a category or a tag.
type Term struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
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
}

// text returns the post's text in lang, else in its original language.
func (p *postRow) text(lang string) Translation {
	var orig Translation
	for _, t := range p.Texts {
		if t.Lang == lang {
			return t
		}
		if t.Lang == p.Language {
			orig = t
		}
	}
	return orig
}

// toAPIPost is the resource of p with its flat texts in lang.
func toAPIPost(p *postRow, lang string) Post {
	t := p.text(lang)
	out := Post{
		ID: p.ID, Slug: p.Slug, Status: p.Status, FeaturedImage: p.FeaturedImage,
		PublishedAt: utc(p.PublishedAt), ScheduledAt: utc(p.ScheduledAt),
		Lang: t.Lang, LanguageCode: p.Language,
		Title: t.Title, Excerpt: t.Excerpt, Content: t.Content, MetaTitle: t.MetaTitle, MetaDescription: t.MetaDescription,
		Category: p.Category, Tags: p.Tags, Translations: p.Texts,
		CreatedAt: p.CreatedAt.UTC(), UpdatedAt: p.UpdatedAt.UTC(),
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

const postColumns = `p.id, p.slug, p.status, p.language, p.texts, p.tag_ids, p.featured_image, p.published_at, p.scheduled_at,
	p.created_at, p.updated_at, c.id, c.name, c.slug`

const postFrom = ` FROM blog_posts p LEFT JOIN blog_terms c ON c.id = p.category_id`

func scanPost(row pgx.Row) (*postRow, error) {
	var p postRow
	var texts map[string]Translation
	var cid *int64
	var cname, cslug *string
	if err := row.Scan(&p.ID, &p.Slug, &p.Status, &p.Language, &texts, &p.TagIDs, &p.FeaturedImage, &p.PublishedAt, &p.ScheduledAt,
		&p.CreatedAt, &p.UpdatedAt, &cid, &cname, &cslug); err != nil {
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
func fill(ctx context.Context, tx pgx.Tx, posts []*postRow) error {
	var ids []int64
	for _, p := range posts {
		ids = append(ids, p.TagIDs...)
	}
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT id, name, slug FROM blog_terms WHERE kind = 'tag' AND id = ANY($1) ORDER BY name, id`, ids)
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

func scanTerm(row pgx.CollectableRow) (Term, error) {
	var t Term
	err := row.Scan(&t.ID, &t.Name, &t.Slug)
	return t, err
}

// isID reports whether ref names a post by id (numeric) rather than slug.
func isID(ref string) (int64, bool) {
	if ref == "" || strings.TrimLeft(ref, "0123456789") != "" {
		return 0, false
	}
	id, err := strconv.ParseInt(ref, 10, 64)
	return id, err == nil
}

// loadPost reads the post ref names (a numeric id or a slug), with lock
// FOR UPDATE when forUpdate; httpapi.ErrNotFound when absent.
func loadPost(ctx context.Context, tx pgx.Tx, ref string, forUpdate bool) (*postRow, error) {
	q := `SELECT ` + postColumns + postFrom
	var arg any
	if id, ok := isID(ref); ok {
		q, arg = q+` WHERE p.id = $1`, id
	} else {
		q, arg = q+` WHERE p.slug = $1`, ref
	}
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

// listPosts returns up to limit posts after cursor (the cursor text of
// the last post of the previous page).
func listPosts(ctx context.Context, tx pgx.Tx, f postFilter, cursor string, limit int) ([]*postRow, error) {
	args := []any{f.Status, f.CategoryID, f.CategorySlug, f.TagID, f.TagSlug, f.IDs, limit}
	q := `SELECT ` + postColumns + postFrom + `
		WHERE ($1::text IS NULL OR p.status = $1)
		AND ($2::bigint IS NULL OR p.category_id = $2)
		AND ($3::text IS NULL OR c.slug = $3)
		AND ($4::bigint IS NULL OR $4 = ANY (p.tag_ids))
		AND ($5::text IS NULL OR EXISTS (SELECT 1 FROM blog_terms t WHERE t.kind = 'tag' AND t.slug = $5 AND t.id = ANY (p.tag_ids)))
		AND ($6::bigint[] IS NULL OR p.id = ANY($6))`
	if f.Public {
		q += ` AND p.status = 'published'`
		if cursor != "" {
			at, id, err := parsePublicCursor(cursor)
			if err != nil {
				return nil, err
			}
			q += ` AND (p.published_at, p.id) < ($8, $9)`
			args = append(args, at, id)
		}
		q += ` ORDER BY p.published_at DESC, p.id DESC LIMIT $7`
	} else {
		if cursor != "" {
			before, err := httpapi.CursorID(cursor)
			if err != nil {
				return nil, err
			}
			q += ` AND p.id < $8`
			args = append(args, before)
		}
		q += ` ORDER BY p.id DESC LIMIT $7`
	}
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	posts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*postRow, error) { return scanPost(r) })
	if err != nil {
		return nil, err
	}
	return posts, fill(ctx, tx, posts)
}

// The public list's cursor is the last post's publication time (Unix
// microseconds, the database's precision) and id.
func publicCursor(p Post) string {
	return strconv.FormatInt(p.PublishedAt.UnixMicro(), 10) + ":" + strconv.FormatInt(p.ID, 10)
}

func parsePublicCursor(c string) (time.Time, int64, error) {
	a, b, ok := strings.Cut(c, ":")
	us, err1 := strconv.ParseInt(a, 10, 64)
	id, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil {
		return time.Time{}, 0, httpapi.BadCursor()
	}
	return time.UnixMicro(us), id, nil
}

// Slug spaces: posts, and categories and tags apart.
const (
	spacePost     = "post"
	spaceCategory = "category"
	spaceTag      = "tag"
)

// lockSlugs serialises slug derivation in a space of the project, so two
// requests deriving from the same title get -2 and -3, not a 409.
func lockSlugs(ctx context.Context, tx pgx.Tx, space string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.blog.' || $1 || '.slug', 0))`, space)
	return err
}

// slugTaken reports whether another row (not except) of space has slug s.
func slugTaken(ctx context.Context, tx pgx.Tx, space, s string, except int64) (bool, error) {
	var taken bool
	var err error
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
func pickSlug(ctx context.Context, tx pgx.Tx, space string, given *string, name string, except int64) (string, error) {
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

// insertPost inserts a post with its text in its original language and
// returns its id.
func insertPost(ctx context.Context, tx pgx.Tx, p *postRow, text Translation) (int64, error) {
	var catID *int64
	if p.Category != nil {
		catID = &p.Category.ID
	}
	if p.TagIDs == nil {
		p.TagIDs = []int64{}
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO blog_posts (slug, status, language, texts, category_id, tag_ids, featured_image, published_at, scheduled_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $2 = 'published' THEN now() END, $8) RETURNING id`,
		p.Slug, p.Status, p.Language, textJSON(text), catID, p.TagIDs, p.FeaturedImage, p.ScheduledAt).Scan(&id)
	return id, err
}

// putText writes the post's text in t.Lang.
func putText(ctx context.Context, tx pgx.Tx, postID int64, t Translation) error {
	_, err := tx.Exec(ctx, `UPDATE blog_posts SET texts = texts || $2, updated_at = now() WHERE id = $1`, postID, textJSON(t))
	return err
}

// setTags replaces the tags of a post.
func setTags(ctx context.Context, tx pgx.Tx, postID int64, tagIDs []int64) error {
	_, err := tx.Exec(ctx, `UPDATE blog_posts SET tag_ids = $2 WHERE id = $1`, postID, tagIDs)
	return err
}

// touch bumps a post's updated_at.
func touch(ctx context.Context, tx pgx.Tx, postID int64) error {
	_, err := tx.Exec(ctx, `UPDATE blog_posts SET updated_at = now() WHERE id = $1`, postID)
	return err
}
