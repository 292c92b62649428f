package content

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// Failures of the page store.
var (
	errNoPage    = httpapi.NotFound("no such page")
	errPageTaken = httpapi.Conflict(httpapi.CodeConflict, "another page has this slug or path")
)

// pageCols end with has_draft, in the same statement (a read is one
// round trip); public reads drop it.
const pageCols = `id, slug, path, title, status, sections, seo, translations, created_at, updated_at, published_at,
	EXISTS (SELECT 1 FROM drafts d WHERE d.type = 'page' AND d.ref = pages.id::text)`

func scanPage(row pgx.Row) (Page, error) {
	var p Page
	var sections, seo, tr []byte
	var hasDraft bool
	if err := row.Scan(&p.ID, &p.Slug, &p.Path, &p.Title, &p.Status, &sections, &seo, &tr, &p.CreatedAt, &p.UpdatedAt, &p.PublishedAt, &hasDraft); err != nil {
		return p, err
	}
	p.HasDraft = &hasDraft
	for _, f := range []struct {
		raw []byte
		dst any
	}{{sections, &p.Sections}, {seo, &p.SEO}, {tr, &p.Translations}} {
		if err := json.Unmarshal(f.raw, f.dst); err != nil {
			return p, err
		}
	}
	if p.Sections == nil {
		p.Sections = []json.RawMessage{}
	}
	if p.Translations == nil {
		p.Translations = []PageTranslation{}
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	if p.PublishedAt != nil {
		t := p.PublishedAt.UTC()
		p.PublishedAt = &t
	}
	return p, nil
}

// encodePage returns p's JSON columns.
func encodePage(p Page) (sections, seo, tr []byte) {
	sections, _ = json.Marshal(p.Sections)
	seo, _ = json.Marshal(p.SEO)
	tr, _ = json.Marshal(p.Translations)
	return
}

// findPage reads the page named by id_or_slug: a number is an id first,
// then a slug of digits. lock holds the row until tx ends.
func findPage(ctx context.Context, tx tenant.Querier, ref string, lock bool) (_ Page, err error) {
	defer httpapi.Wrap(&err, "findPage(%q)", ref)
	id, err := strconv.ParseInt(ref, 10, 64)
	if err != nil {
		id = 0
	}
	if id == 0 && !slug.Valid(ref) {
		return Page{}, errNoPage
	}
	q := `SELECT ` + pageCols + ` FROM pages WHERE id = $1 OR slug = $2 ORDER BY id = $1 DESC LIMIT 1`
	if lock {
		q += ` FOR UPDATE`
	}
	p, err := scanPage(tx.QueryRow(ctx, q, id, ref))
	return p, noRows(err, errNoPage)
}

// publishedPage reads the published page of slug.
func publishedPage(ctx context.Context, tx tenant.Querier, s string) (_ Page, err error) {
	defer httpapi.Wrap(&err, "publishedPage")
	if !slug.Valid(s) {
		return Page{}, errNoPage
	}
	p, err := scanPage(tx.QueryRow(ctx, `SELECT `+pageCols+` FROM pages WHERE slug = $1 AND status = 'published'`, s))
	return p, noRows(err, errNoPage)
}

// listPages reads up to limit pages of status (any when empty) before the
// id before (0: from the newest).
func listPages(ctx context.Context, tx tenant.Querier, before int64, status string, limit int) (_ []Page, err error) {
	defer httpapi.Wrap(&err, "listPages(%s)", status)
	return queryAll(ctx, tx, scanPage, `SELECT `+pageCols+` FROM pages WHERE ($1 = 0 OR id < $1) AND ($2 = '' OR status = $2)
		ORDER BY id DESC LIMIT $3`, before, status, limit)
}

// insertPage creates p. An empty slug is derived from the title, and an
// empty path is then /{slug}.
func insertPage(ctx context.Context, tx pgx.Tx, p Page) (_ Page, err error) {
	defer httpapi.Wrap(&err, "insertPage(%q)", p.Title)
	var explicit *string
	if p.Slug != "" {
		explicit = &p.Slug
	}
	if p.Slug, err = pickSlug(ctx, tx, "pages", explicit, p.Title); err != nil {
		return Page{}, err
	}
	if p.Path == "" {
		p.Path = "/" + p.Slug
	}
	sections, seo, tr := encodePage(p)
	out, err := scanPage(tx.QueryRow(ctx, `INSERT INTO pages (slug, path, title, status, sections, seo, translations, published_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $4 = 'published' THEN now() END) RETURNING `+pageCols,
		p.Slug, p.Path, p.Title, p.Status, sections, seo, tr))
	return out, unique(err, errPageTaken)
}

// updatePage writes p over the stored page of its id; published_at is set
// on the first publication and cleared by a return to draft.
func updatePage(ctx context.Context, tx pgx.Tx, p Page) (_ Page, err error) {
	defer httpapi.Wrap(&err, "updatePage(%d)", p.ID)
	sections, seo, tr := encodePage(p)
	out, err := scanPage(tx.QueryRow(ctx, `UPDATE pages SET slug = $2, path = $3, title = $4, status = $5,
			sections = $6, seo = $7, translations = $8, updated_at = now(),
			published_at = CASE WHEN $5 = 'draft' THEN NULL ELSE COALESCE(published_at, now()) END
		WHERE id = $1 RETURNING `+pageCols, p.ID, p.Slug, p.Path, p.Title, p.Status, sections, seo, tr))
	return out, unique(noRows(err, errNoPage), errPageTaken)
}

// deletePage deletes the page named by id_or_slug.
func deletePage(ctx context.Context, tx pgx.Tx, ref string) (err error) {
	defer httpapi.Wrap(&err, "deletePage(%s)", ref)
	p, err := findPage(ctx, tx, ref, true)
	if err != nil {
		return err
	}
	if _, err = tx.Exec(ctx, `DELETE FROM pages WHERE id = $1`, p.ID); err != nil {
		return err
	}
	return drafts.Forget(ctx, tx, drafts.Page, pageRef(p.ID))
}

// lockPageBySlug reads the page of slug and locks it for the
// transaction; httpapi.ErrNotFound when there is none.
func lockPageBySlug(ctx context.Context, tx pgx.Tx, pageSlug string) (_ Page, err error) {
	defer httpapi.Wrap(&err, "lockPageBySlug(%s)", pageSlug)
	p, err := scanPage(tx.QueryRow(ctx, `SELECT `+pageCols+` FROM pages WHERE slug = $1 FOR UPDATE`, pageSlug))
	return p, noRows(err, httpapi.ErrNotFound)
}

// SitemapPage is a published page as a sitemap lists it.
type SitemapPage struct {
	Path      string
	Langs     []string // the languages of its translations
	UpdatedAt time.Time
}

// QueueSitemapPages queues on b the read of up to limit published pages
// that do not ask to be kept out of search engines (seo.noindex), by
// path, into out: the sitemap reads them in one batch with the posts.
func QueueSitemapPages(b *tenant.ReadBatch, limit int, out *[]SitemapPage) {
	b.Queue(`SELECT path, updated_at,
			ARRAY(SELECT DISTINCT t->>'lang' FROM jsonb_array_elements(translations) t WHERE t->>'lang' IS NOT NULL ORDER BY 1)
		FROM pages WHERE status = 'published' AND NOT COALESCE((seo->>'noindex')::boolean, false)
		ORDER BY path LIMIT $1`, []any{limit}, func(rows pgx.Rows) error {
		*out = nil
		for rows.Next() {
			var p SitemapPage
			if err := rows.Scan(&p.Path, &p.UpdatedAt, &p.Langs); err != nil {
				return err
			}
			*out = append(*out, p)
		}
		return rows.Err()
	})
}
