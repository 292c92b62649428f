package blog

import (
	"context"
	"errors"
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

// postRow is a blog_posts row with its category, translations and tags.
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
	Tags          []Term
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

const postColumns = `p.id, p.slug, p.status, p.language, p.featured_image, p.published_at, p.scheduled_at, p.created_at, p.updated_at,
	c.id, c.name, c.slug`

const postFrom = ` FROM blog_posts p LEFT JOIN blog_categories c ON c.id = p.category_id`

func scanPost(row pgx.Row) (*postRow, error) {
	var p postRow
	var cid *int64
	var cname, cslug *string
	if err := row.Scan(&p.ID, &p.Slug, &p.Status, &p.Language, &p.FeaturedImage, &p.PublishedAt, &p.ScheduledAt, &p.CreatedAt, &p.UpdatedAt,
		&cid, &cname, &cslug); err != nil {
		return nil, err
	}
	if cid != nil {
		p.Category = &Term{ID: *cid, Name: *cname, Slug: *cslug}
	}
	return &p, nil
}

// fill loads the translations and tags of posts.
func fill(ctx context.Context, tx pgx.Tx, posts []*postRow) error {
	if len(posts) == 0 {
		return nil
	}
	byID := make(map[int64]*postRow, len(posts))
	ids := make([]int64, len(posts))
	for i, p := range posts {
		byID[p.ID], ids[i] = p, p.ID
	}
	rows, err := tx.Query(ctx, `SELECT post_id, lang, title, excerpt, content, meta_title, meta_description
		FROM blog_post_translations WHERE post_id = ANY($1) ORDER BY post_id, lang`, ids)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var t Translation
		if err := rows.Scan(&id, &t.Lang, &t.Title, &t.Excerpt, &t.Content, &t.MetaTitle, &t.MetaDescription); err != nil {
			rows.Close()
			return err
		}
		byID[id].Texts = append(byID[id].Texts, t)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, p := range posts {
		sort.SliceStable(p.Texts, func(i, j int) bool { return p.Texts[i].Lang == p.Language && p.Texts[j].Lang != p.Language })
	}
	rows, err = tx.Query(ctx, `SELECT pt.post_id, t.id, t.name, t.slug FROM blog_post_tags pt JOIN blog_tags t ON t.id = pt.tag_id
		WHERE pt.post_id = ANY($1) ORDER BY pt.post_id, t.name, t.id`, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var t Term
		if err := rows.Scan(&id, &t.ID, &t.Name, &t.Slug); err != nil {
			return err
		}
		byID[id].Tags = append(byID[id].Tags, t)
	}
	return rows.Err()
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
		AND ($4::bigint IS NULL OR EXISTS (SELECT 1 FROM blog_post_tags pt WHERE pt.post_id = p.id AND pt.tag_id = $4))
		AND ($5::text IS NULL OR EXISTS (SELECT 1 FROM blog_post_tags pt JOIN blog_tags t ON t.id = pt.tag_id WHERE pt.post_id = p.id AND t.slug = $5))
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
			before, err := strconv.ParseInt(cursor, 10, 64)
			if err != nil || before <= 0 {
				return nil, badCursor()
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

func badCursor() error { return httpapi.Invalid("cursor", "is not a cursor this API issued") }

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
		return time.Time{}, 0, badCursor()
	}
	return time.UnixMicro(us), id, nil
}

// lockSlugs serialises slug derivation of table within the project, so
// two requests deriving from the same title get -2 and -3, not a 409.
func lockSlugs(ctx context.Context, tx pgx.Tx, table string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '.' || $1 || '.slug', 0))`, table)
	return err
}

// slugTaken reports whether table (a constant of this package) has slug.
func slugTaken(ctx context.Context, tx pgx.Tx, table, s string, except int64) (bool, error) {
	var taken bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{table}.Sanitize()+` WHERE slug = $1 AND id <> $2)`, s, except).Scan(&taken)
	return taken, err
}

// pickSlug returns the slug of a new or renamed row of table: given, when
// it is free (409 conflict when taken), else derived from name and made
// unique with -2, -3, …. It takes the table's slug lock.
func pickSlug(ctx context.Context, tx pgx.Tx, table string, given *string, name string, except int64) (string, error) {
	if err := lockSlugs(ctx, tx, table); err != nil {
		return "", err
	}
	if given != nil {
		taken, err := slugTaken(ctx, tx, table, *given, except)
		if err != nil {
			return "", err
		}
		if taken {
			return "", httpapi.Conflict(httpapi.CodeConflict, "the slug "+*given+" is taken")
		}
		return *given, nil
	}
	return slug.Unique(ctx, deriveSlug(name, kinds[table]), func(ctx context.Context, c string) (bool, error) {
		return slugTaken(ctx, tx, table, c, except)
	})
}

// kinds names what each table holds, to prefix a numeric derived slug.
var kinds = map[string]string{"blog_posts": "post", "blog_categories": "category", "blog_tags": "tag"}

// deriveSlug is slug.Make of name, never all digits: a numeric reference
// (a path segment, a filter) names a post, category or tag by id.
func deriveSlug(name, kind string) string {
	s := slug.Make(name)
	if _, numeric := isID(s); numeric {
		s = kind + "-" + s
	}
	return s
}

// validSlug reports whether a given slug is usable: the slug pattern, and
// not all digits.
func validSlug(s string) bool {
	_, numeric := isID(s)
	return slug.Valid(s) && !numeric
}

// putText writes the post's text in t.Lang.
func putText(ctx context.Context, tx pgx.Tx, postID int64, t Translation) error {
	_, err := tx.Exec(ctx, `INSERT INTO blog_post_translations (post_id, lang, title, excerpt, content, meta_title, meta_description)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (post_id, lang) DO UPDATE SET title = EXCLUDED.title, excerpt = EXCLUDED.excerpt, content = EXCLUDED.content,
			meta_title = EXCLUDED.meta_title, meta_description = EXCLUDED.meta_description, updated_at = now()`,
		postID, t.Lang, t.Title, t.Excerpt, t.Content, t.MetaTitle, t.MetaDescription)
	return err
}

// setTags replaces the tags of a post.
func setTags(ctx context.Context, tx pgx.Tx, postID int64, tagIDs []int64) error {
	if _, err := tx.Exec(ctx, `DELETE FROM blog_post_tags WHERE post_id = $1`, postID); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO blog_post_tags (post_id, tag_id) SELECT $1, unnest($2::bigint[]) ON CONFLICT DO NOTHING`, postID, tagIDs)
	return err
}

// touch bumps a post's updated_at.
func touch(ctx context.Context, tx pgx.Tx, postID int64) error {
	_, err := tx.Exec(ctx, `UPDATE blog_posts SET updated_at = now() WHERE id = $1`, postID)
	return err
}
