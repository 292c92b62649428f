package content

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// The store of content values, components, galleries and the brand; pages
// are in store_pages.go, images in store_images.go.

// Failures the store answers with.
var (
	errNoComponent = httpapi.NotFound("no such component")
	errNoGallery   = httpapi.NotFound("no such gallery")
	errSlugTaken   = httpapi.Conflict(httpapi.CodeConflict, "the slug is taken")
)

// queryAll runs a query in tx and scans each row of its result with scan.
func queryAll[T any](ctx context.Context, tx tenant.Querier, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
}

// execFound runs a write in tx; notFound is its error when no row matched.
func execFound(ctx context.Context, tx pgx.Tx, notFound error, sql string, args ...any) error {
	tag, err := tx.Exec(ctx, sql, args...)
	if err == nil && tag.RowsAffected() == 0 {
		return notFound
	}
	return err
}

// noRows returns notFound for pgx.ErrNoRows, else err.
func noRows(err, notFound error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound
	}
	return err
}

// unique returns taken for a unique violation, else err.
func unique(err, taken error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return taken
	}
	return err
}

// timeCursor is a position in a list ordered by (created_at, name), newest
// first; the zero value is the first page.
type timeCursor struct {
	at   *time.Time
	name string
}

// timeText is the cursor text of the row created at t named name.
func timeText(t time.Time, name string) string {
	return t.UTC().Format(time.RFC3339Nano) + "|" + name
}

// decodeTimeCursor reads the cursor text timeText wrote.
func decodeTimeCursor(cursor string) (timeCursor, error) {
	ts, name, ok := strings.Cut(cursor, "|")
	t, err := time.Parse(time.RFC3339Nano, ts)
	if !ok || err != nil {
		return timeCursor{}, httpapi.BadCursor()
	}
	return timeCursor{at: &t, name: name}, nil
}

// taken returns a slug.Unique probe over one table's slug column; table is
// a constant of this package, never input.
func taken(tx pgx.Tx, table string) func(context.Context, string) (bool, error) {
	return func(ctx context.Context, s string) (bool, error) {
		var ok bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table+` WHERE slug = $1)`, s).Scan(&ok)
		return ok, err
	}
}

// pickSlug returns the explicit slug (422 when malformed), or one derived
// from name and made unique with -2, -3, … . An explicit slug that is
// taken fails on the unique constraint (409).
func pickSlug(ctx context.Context, tx pgx.Tx, table string, explicit *string, name string) (_ string, err error) {
	defer httpapi.Wrap(&err, "pickSlug")
	if explicit != nil {
		return *explicit, nil
	}
	base := slug.Make(name)
	if len(base) > 200 {
		base = strings.TrimRight(base[:200], "-")
	}
	// Serialise derivations of one table's slugs in this project (advisory
	// locks are database-wide, hence the schema in the key), so two
	// concurrent creates of "Summer" get summer and summer-2, not a 409.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':slug:' || $1))`, table); err != nil {
		return "", err
	}
	return slug.Unique(ctx, base, taken(tx, table))
}

// setValueSQL writes a value unless it is already the one stored, and
// answers the value it replaces and whether it wrote, in one statement:
// prev locks the row and reads its latest version (a concurrent write of
// the same value waits for it), and the upsert leaves an equal value alone.
const setValueSQL = `WITH prev AS (
		SELECT value FROM content_values WHERE key = $1 AND lang = $2 FOR UPDATE
	), up AS (
		INSERT INTO content_values (key, lang, value) VALUES ($1, $2, $3)
		ON CONFLICT (key, lang) DO UPDATE SET value = EXCLUDED.value, updated_at = now()
		WHERE content_values.value <> EXCLUDED.value
		RETURNING 1
	)
	SELECT (SELECT value FROM prev), EXISTS (SELECT FROM up)`

// SetValue writes key's value in lang. It reports the change, or false
// when the value was already the same (no write, no change).
func SetValue(ctx context.Context, tx pgx.Tx, key, lang, value string) (_ ValueChange, _ bool, err error) {
	defer httpapi.Wrap(&err, "SetValue(%q, %q)", key, lang)
	c := ValueChange{Key: key, Lang: lang, Value: value}
	var changed bool
	err = tx.QueryRow(ctx, setValueSQL, key, lang, value).Scan(&c.PreviousValue, &changed)
	return c, changed, err
}

// Values returns the values in lang of keys (all of lang's keys when keys
// is nil), by key.
func Values(ctx context.Context, tx pgx.Tx, lang string, keys []string) (_ map[string]string, err error) {
	defer httpapi.Wrap(&err, "Values")
	rows, err := tx.Query(ctx, `SELECT key, value FROM content_values WHERE lang = $1 AND ($2::text[] IS NULL OR key = ANY($2))`, lang, keys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// keySQL reads every language's value of a content key.
const keySQL = `SELECT lang, value, updated_at FROM content_values WHERE key = $1`

// keyDraftSQL is keySQL for an authenticated read: one more row, of
// language ”, when the key has a draft (has_draft).
const keyDraftSQL = keySQL + ` UNION ALL SELECT '', '', updated_at FROM drafts WHERE type = 'content_key' AND ref = $1`

// KeySQL is the query GET /content/{key} runs, for benchmarks comparing
// it with a bare handler.
const KeySQL = keyDraftSQL

// readKey reads key in the first language of chain with a value (the
// language asked for, then its fallbacks: tenant.Project.Chain), outside
// a transaction and in one round trip (Scope.Read): the read of GET
// /content/{key}. A not-found failure when no language of chain has a
// value. With withDraft (an authenticated read), it says whether the key
// has a draft (has_draft), in the same round trip.
func readKey(ctx context.Context, s *tenant.Scope, key string, chain []string, withDraft bool) (k ContentKey, err error) {
	defer httpapi.Wrap(&err, "readKey(%q, %q)", key, chain[0])
	q := keySQL
	if withDraft {
		q = keyDraftSQL
	}
	err = s.Read(ctx, q, []any{key}, func(rows pgx.Rows) error {
		k, err = scanKey(rows, key, chain)
		return err
	})
	if withDraft && k.HasDraft == nil {
		k.HasDraft = new(bool)
	}
	return k, err
}

// scanKey reads the rows of keySQL into the content key served in the
// first language of chain with a value (ContentKey.serve).
func scanKey(rows pgx.Rows, key string, chain []string) (ContentKey, error) {
	k := ContentKey{Key: key, AllLocales: map[string]string{}}
	updated := map[string]time.Time{}
	var at time.Time
	var l, v string
	for rows.Next() {
		if err := rows.Scan(&l, &v, &at); err != nil {
			return k, err
		}
		if l == "" { // keyDraftSQL's mark of a draft
			t := true
			k.HasDraft = &t
			continue
		}
		k.AllLocales[l], updated[l] = v, at
	}
	if err := rows.Err(); err != nil {
		return k, err
	}
	if !k.serve(chain) {
		return k, httpapi.NotFound(fmt.Sprintf("the content key %s has no value in %s or its fallback languages %v", key, chain[0], chain[1:]))
	}
	k.UpdatedAt = updated[k.Lang].UTC()
	return k, nil
}

// deleteValues deletes key's value in lang, or in every language when
// lang is empty (httpapi.ErrNotFound when there was none).
func deleteValues(ctx context.Context, tx pgx.Tx, key, lang string) (err error) {
	defer httpapi.Wrap(&err, "deleteValues(%s)", key)
	return execFound(ctx, tx, httpapi.ErrNotFound, `DELETE FROM content_values WHERE key = $1 AND ($2 = '' OR lang = $2)`, key, lang)
}

// bulkSQL reads the values of keys (every key when NULL) in the first
// language of the chain $2 with a non-empty value, else the first with
// any, one row per key with the language served, in key order: the keys
// after $3 (from the first when NULL), at most $4 of them (every one
// when NULL).
const bulkSQL = `SELECT DISTINCT ON (key) key, value, lang FROM content_values
	WHERE lang = ANY ($2) AND ($1::text[] IS NULL OR key = ANY ($1)) AND ($3::text IS NULL OR key > $3)
	ORDER BY key, value = '', array_position($2, lang)
	LIMIT $4`

// BulkSQL is the query GET /content/bulk runs, for benchmarks comparing
// it with a bare handler.
const BulkSQL = bulkSQL

// readBulk reads the values of keys in the first language of chain with
// one (chain[0] the language asked for), in one round trip (the public
// surface's hot path, hence s.Read, not a Tx). Without keys it reads the
// page of BulkPage keys after the key after.
func readBulk(ctx context.Context, s *tenant.Scope, keys []string, chain []string, after string) (_ Bulk, err error) {
	defer httpapi.Wrap(&err, "readBulk")
	b := Bulk{Data: make(map[string]string, len(keys)), Lang: chain[0], Missing: []string{}}
	var from *string // Read sends "" as NULL: say NULL outright
	if after != "" {
		from = &after
	}
	var limit *int
	if keys == nil {
		n := BulkPage + 1 // the extra row only tells that more exist
		limit = &n
	}
	err = s.Read(ctx, bulkSQL, []any{keys, chain, from, limit}, func(rows pgx.Rows) error {
		var k, v, lang, last string
		_, err := pgx.ForEachRow(rows, []any{&k, &v, &lang}, func() error {
			if len(b.Data) == BulkPage && keys == nil {
				b.HasMore = true
				c := httpapi.EncodeCursor(last)
				b.NextCursor = &c
				return nil
			}
			b.Data[k], last = v, k
			b.Fallback.Note(k, lang, b.Lang)
			return nil
		})
		return err
	})
	if err != nil {
		return b, err
	}
	for _, k := range keys {
		if _, ok := b.Data[k]; !ok {
			b.Missing = append(b.Missing, k)
		}
	}
	return b, nil
}

// componentCols, galleryCols and brandCols end with has_draft, in the
// same statement (a read is one round trip); public reads drop it.
const componentCols = `id, slug, name, props, translations, created_at, updated_at,
	EXISTS (SELECT 1 FROM drafts d WHERE d.type = 'component' AND d.ref = components.id::text)`

func scanComponent(row pgx.Row) (Component, error) {
	var c Component
	var tr []byte
	var hasDraft bool
	if err := row.Scan(&c.ID, &c.Slug, &c.Name, &c.Props, &tr, &c.CreatedAt, &c.UpdatedAt, &hasDraft); err != nil {
		return c, err
	}
	c.HasDraft = &hasDraft
	if err := json.Unmarshal(tr, &c.Translations); err != nil {
		return c, err
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, nil
}

// insertComponent creates a component named name, with the explicit slug
// or one derived from name.
func insertComponent(ctx context.Context, tx pgx.Tx, explicit *string, name string, props, tr []byte) (_ Component, err error) {
	defer httpapi.Wrap(&err, "insertComponent(%q)", name)
	sl, err := pickSlug(ctx, tx, "components", explicit, name)
	if err != nil {
		return Component{}, err
	}
	c, err := scanComponent(tx.QueryRow(ctx, `INSERT INTO components (slug, name, props, translations) VALUES ($1, $2, $3, $4)
		RETURNING `+componentCols, sl, name, props, tr))
	return c, unique(err, errSlugTaken)
}

// listComponents reads up to limit components before the id before (0:
// from the newest).
func listComponents(ctx context.Context, tx tenant.Querier, before int64, limit int) (_ []Component, err error) {
	defer httpapi.Wrap(&err, "listComponents")
	return queryAll(ctx, tx, scanComponent, `SELECT `+componentCols+` FROM components WHERE $1 = 0 OR id < $1 ORDER BY id DESC LIMIT $2`,
		before, limit)
}

// getComponent reads the component of slug s, locked for the
// transaction tx when lock.
func getComponent(ctx context.Context, tx tenant.Querier, s string, lock bool) (_ Component, err error) {
	defer httpapi.Wrap(&err, "getComponent")
	if !slug.Valid(s) {
		return Component{}, errNoComponent
	}
	q := `SELECT ` + componentCols + ` FROM components WHERE slug = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	c, err := scanComponent(tx.QueryRow(ctx, q, s))
	return c, noRows(err, errNoComponent)
}

// updateComponent sets the fields that are not nil of the component cur.
func updateComponent(ctx context.Context, tx pgx.Tx, cur string, name, newSlug *string, props, tr []byte) (_ Component, err error) {
	defer httpapi.Wrap(&err, "updateComponent(%q)", cur)
	if !slug.Valid(cur) {
		return Component{}, errNoComponent
	}
	c, err := scanComponent(tx.QueryRow(ctx, `UPDATE components SET
			name = COALESCE($2, name), slug = COALESCE($3, slug), props = COALESCE($4, props),
			translations = COALESCE($5, translations), updated_at = now()
		WHERE slug = $1 RETURNING `+componentCols, cur, name, newSlug, props, tr))
	return c, unique(noRows(err, errNoComponent), errSlugTaken)
}

// deleteComponent deletes the component of slug s, its draft and its
// versions.
func deleteComponent(ctx context.Context, tx pgx.Tx, s string) (err error) {
	defer httpapi.Wrap(&err, "deleteComponent")
	var id int64
	err = tx.QueryRow(ctx, `DELETE FROM components WHERE slug = $1 RETURNING id`, s).Scan(&id)
	if err != nil {
		return noRows(err, errNoComponent)
	}
	return drafts.Forget(ctx, tx, drafts.Component, componentRef(id))
}

const galleryCols = `slug, name, items, created_at, updated_at,
	EXISTS (SELECT 1 FROM drafts d WHERE d.type = 'gallery' AND d.ref = galleries.slug)`

func scanGallery(row pgx.Row) (Gallery, error) {
	var g Gallery
	var items []byte
	var hasDraft bool
	if err := row.Scan(&g.Slug, &g.Name, &items, &g.CreatedAt, &g.UpdatedAt, &hasDraft); err != nil {
		return g, err
	}
	g.HasDraft = &hasDraft
	if err := json.Unmarshal(items, &g.Items); err != nil {
		return g, err
	}
	if g.Items == nil {
		g.Items = []GalleryItem{}
	}
	g.ItemsCount = len(g.Items)
	g.CreatedAt, g.UpdatedAt = g.CreatedAt.UTC(), g.UpdatedAt.UTC()
	return g, nil
}

// GetGallery reads the gallery of slug (404 when absent).
func GetGallery(ctx context.Context, tx tenant.Querier, s string) (_ Gallery, err error) {
	defer httpapi.Wrap(&err, "GetGallery")
	if !slug.Valid(s) {
		return Gallery{}, errNoGallery
	}
	g, err := scanGallery(tx.QueryRow(ctx, `SELECT `+galleryCols+` FROM galleries WHERE slug = $1`, s))
	return g, noRows(err, errNoGallery)
}

// lockGallery reads the gallery of slug s and locks it for the
// transaction (404 when absent).
func lockGallery(ctx context.Context, tx pgx.Tx, s string) (_ Gallery, err error) {
	defer httpapi.Wrap(&err, "lockGallery")
	if !slug.Valid(s) {
		return Gallery{}, errNoGallery
	}
	g, err := scanGallery(tx.QueryRow(ctx, `SELECT `+galleryCols+` FROM galleries WHERE slug = $1 FOR UPDATE`, s))
	return g, noRows(err, errNoGallery)
}

// insertGallery creates a gallery named name, with the explicit slug or
// one derived from name; items is its JSON list.
func insertGallery(ctx context.Context, tx pgx.Tx, explicit *string, name string, items []byte) (_ Gallery, err error) {
	defer httpapi.Wrap(&err, "insertGallery(%q)", name)
	sl, err := pickSlug(ctx, tx, "galleries", explicit, name)
	if err != nil {
		return Gallery{}, err
	}
	g, err := scanGallery(tx.QueryRow(ctx, `INSERT INTO galleries (slug, name, items) VALUES ($1, $2, $3) RETURNING `+galleryCols,
		sl, name, items))
	return g, unique(err, errSlugTaken)
}

// listGalleries reads up to limit galleries after the position after.
func listGalleries(ctx context.Context, tx tenant.Querier, after timeCursor, limit int) (_ []Gallery, err error) {
	defer httpapi.Wrap(&err, "listGalleries")
	return queryAll(ctx, tx, scanGallery, `SELECT `+galleryCols+` FROM galleries
		WHERE $1::timestamptz IS NULL OR (created_at, slug) < ($1, $2)
		ORDER BY created_at DESC, slug DESC LIMIT $3`, after.at, after.name, limit)
}

// updateGallery sets the fields that are not nil of the gallery cur. A
// gallery's drafts and versions are under its slug, so a new slug takes
// them along.
func updateGallery(ctx context.Context, tx pgx.Tx, cur string, name, newSlug *string, items []byte) (_ Gallery, err error) {
	defer httpapi.Wrap(&err, "updateGallery(%q)", cur)
	if !slug.Valid(cur) {
		return Gallery{}, errNoGallery
	}
	g, err := scanGallery(tx.QueryRow(ctx, `UPDATE galleries SET
			name = COALESCE($2, name), slug = COALESCE($3, slug), items = COALESCE($4, items), updated_at = now()
		WHERE slug = $1 RETURNING `+galleryCols, cur, name, newSlug, items))
	if err != nil {
		return g, unique(noRows(err, errNoGallery), errSlugTaken)
	}
	return g, drafts.Rename(ctx, tx, drafts.Gallery, cur, g.Slug)
}

// deleteGallery deletes the gallery of slug s, its draft and its versions.
func deleteGallery(ctx context.Context, tx pgx.Tx, s string) (err error) {
	defer httpapi.Wrap(&err, "deleteGallery")
	if err := execFound(ctx, tx, errNoGallery, `DELETE FROM galleries WHERE slug = $1`, s); err != nil {
		return err
	}
	return drafts.Forget(ctx, tx, drafts.Gallery, s)
}

const brandCols = `name, tagline, description, voice, audience, colors, fonts, logo_url, updated_at,
	EXISTS (SELECT 1 FROM drafts d WHERE d.type = 'brand' AND d.ref = '')`

func scanBrand(row pgx.Row) (Brand, error) {
	var b Brand
	var colors, fonts []byte
	var hasDraft bool
	if err := row.Scan(&b.Name, &b.Tagline, &b.Description, &b.Voice, &b.Audience, &colors, &fonts, &b.LogoURL, &b.UpdatedAt, &hasDraft); err != nil {
		return b, err
	}
	b.HasDraft = &hasDraft
	if err := json.Unmarshal(colors, &b.Colors); err != nil {
		return b, err
	}
	if err := json.Unmarshal(fonts, &b.Fonts); err != nil {
		return b, err
	}
	b.UpdatedAt = b.UpdatedAt.UTC()
	return b, nil
}

func getBrand(ctx context.Context, tx tenant.Querier) (_ Brand, err error) {
	defer httpapi.Wrap(&err, "getBrand")
	return scanBrand(tx.QueryRow(ctx, `SELECT `+brandCols+` FROM brand`))
}

// updateBrand sets the fields of req that are not nil; colors and fonts
// are the JSON objects to store, nil to keep them.
func updateBrand(ctx context.Context, tx pgx.Tx, req BrandRequest, colors, fonts []byte) (_ Brand, err error) {
	defer httpapi.Wrap(&err, "updateBrand")
	return scanBrand(tx.QueryRow(ctx, `UPDATE brand SET name = COALESCE($1, name), tagline = COALESCE($2, tagline),
			description = COALESCE($3, description), voice = COALESCE($4, voice), audience = COALESCE($5, audience),
			colors = COALESCE($6, colors), fonts = COALESCE($7, fonts), updated_at = now()
		RETURNING `+brandCols, req.Name, req.Tagline, req.Description, req.Voice, req.Audience, colors, fonts))
}

// logoObject is the stored object of the brand logo ("" when none).
func logoObject(ctx context.Context, tx tenant.Querier) (_ string, err error) {
	defer httpapi.Wrap(&err, "logoObject")
	var object string
	err = tx.QueryRow(ctx, `SELECT COALESCE(logo_object, '') FROM brand`).Scan(&object)
	return object, noRows(err, httpapi.ErrNotFound)
}

// setLogo makes object, served at url, the brand logo; it returns the
// brand and the object it replaces ("" when none), to remove once tx
// commits.
func setLogo(ctx context.Context, tx pgx.Tx, object, url string) (_ Brand, previous string, err error) {
	defer httpapi.Wrap(&err, "setLogo")
	if err := tx.QueryRow(ctx, `SELECT COALESCE(logo_object, '') FROM brand FOR UPDATE`).Scan(&previous); err != nil {
		return Brand{}, "", err
	}
	b, err := scanBrand(tx.QueryRow(ctx, `UPDATE brand SET logo_object = $1, logo_url = $2, updated_at = now() RETURNING `+brandCols,
		object, url))
	return b, previous, err
}

// lockComponentBySlug reads the component of slug and locks it for the
// transaction; httpapi.ErrNotFound when there is none.
func lockComponentBySlug(ctx context.Context, tx pgx.Tx, componentSlug string) (_ Component, err error) {
	defer httpapi.Wrap(&err, "lockComponentBySlug(%s)", componentSlug)
	c, err := scanComponent(tx.QueryRow(ctx, `SELECT `+componentCols+` FROM components WHERE slug = $1 FOR UPDATE`, componentSlug))
	return c, noRows(err, httpapi.ErrNotFound)
}

// lockBrand reads the brand and locks its row for the transaction.
func lockBrand(ctx context.Context, tx pgx.Tx) (_ Brand, err error) {
	defer httpapi.Wrap(&err, "lockBrand")
	return scanBrand(tx.QueryRow(ctx, `SELECT `+brandCols+` FROM brand FOR UPDATE`))
}

// lockValues reads the values of keys in langs, by key and language, and
// locks their rows for the transaction.
func lockValues(ctx context.Context, tx pgx.Tx, keys, langs []string) (_ map[[2]string]string, err error) {
	defer httpapi.Wrap(&err, "lockValues")
	rows, err := tx.Query(ctx, `SELECT key, lang, value FROM content_values WHERE key = ANY($1) AND lang = ANY($2)
		ORDER BY key, lang FOR UPDATE`, keys, langs)
	if err != nil {
		return nil, err
	}
	out := map[[2]string]string{}
	var k, l, v string
	_, err = pgx.ForEachRow(rows, []any{&k, &l, &v}, func() error {
		out[[2]string{k, l}] = v
		return nil
	})
	return out, err
}

// liveValues reads every language's live value of key, locked for tx.
func liveValues(ctx context.Context, tx pgx.Tx, key string) (_ map[string]string, err error) {
	defer httpapi.Wrap(&err, "liveValues(%s)", key)
	rows, err := tx.Query(ctx, `SELECT lang, value FROM content_values WHERE key = $1 ORDER BY lang FOR UPDATE`, key)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	var l, v string
	_, err = pgx.ForEachRow(rows, []any{&l, &v}, func() error {
		out[l] = v
		return nil
	})
	return out, err
}

// keyExists reports whether key has a value or a draft.
func keyExists(ctx context.Context, q tenant.Querier, key string) (ok bool, err error) {
	defer httpapi.Wrap(&err, "keyExists(%s)", key)
	err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM content_values WHERE key = $1)
		OR EXISTS (SELECT 1 FROM drafts WHERE type = 'content_key' AND ref = $1)`, key).Scan(&ok)
	return ok, err
}

// componentSlug returns the slug of the component of id (a not-found
// failure when there is none).
func componentSlug(ctx context.Context, q tenant.Querier, id string) (slug string, err error) {
	defer httpapi.Wrap(&err, "componentSlug(%s)", id)
	err = q.QueryRow(ctx, `SELECT slug FROM components WHERE id = $1`, id).Scan(&slug)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", httpapi.NotFound("no such component")
	}
	return slug, err
}
