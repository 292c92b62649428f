// Package drafts is the content workflow's store: a draft over what is
// live for each item (page, component, content key, gallery, brand, blog
// post) and the versions of each item, in the project's schema (tables
// drafts and versions, migrations/tenant/1100_drafts.sql), with the
// handlers every type shares (its versions, restore). Each pillar decides
// what a draft of its items holds and how publishing one applies it: a
// draft is the item's whole resource as it would be published, stored as
// JSON; the public surface never reads it.
package drafts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Types of items with drafts, as the drafts and versions tables and the
// API (a release's items) name them.
const (
	Page       = "page"
	Component  = "component"
	ContentKey = "content_key"
	Gallery    = "gallery"
	Brand      = "brand"
	Post       = "blog_post"
)

// TopicPublished is the event every publish emits, once per item made
// live, with PublishedEvent.
const TopicPublished = "content.published"

// PublishedEvent is the data of content.published: the item a publish
// made live (its type and reference), the languages it published (null:
// all) and the release that published it (null: the item's own publish).
type PublishedEvent struct {
	Type      string   `json:"type"`
	ID        string   `json:"id"`
	Languages []string `json:"languages"`
	ReleaseID *int64   `json:"release_id"`
}

// Version kinds.
const (
	KindSave     = "save"     // an explicit save of the draft
	KindAutosave = "autosave" // autosaves, one version while it is the newest
	KindPublish  = "publish"  // what went live
	KindRestore  = "restore"  // an earlier version restored into the draft
)

// MaxVersions is the most versions an item keeps; the oldest are dropped.
const MaxVersions = 100

// MaxLanguages is the most languages a publish may name.
const MaxLanguages = 100

// Version is one recorded state of an item. Data, the item as it was, is
// sent by GET …/versions/{n} only.
type Version struct {
	N         int             `json:"n"`
	Kind      string          `json:"kind"`
	Languages []string        `json:"languages"`
	Actor     string          `json:"actor"`
	CreatedAt time.Time       `json:"created_at"`
	Data      json.RawMessage `json:"data,omitempty"`
}

// errNoVersion is the 404 of a version that does not exist.
var errNoVersion = httpapi.NotFound("no such version")

// Mode reads how a write is meant, from its query: draft=true writes the
// draft, not the live item; autosave=true is a draft write recorded as
// the item's autosave version. bodyDraft and bodyAutosave are the body's
// draft and autosave fields where a type's body has them (nil: absent);
// the query and the body must not disagree.
func Mode(r *http.Request, bodyDraft, bodyAutosave *bool) (draft, autosave bool, err error) {
	q := r.URL.Query()
	flag := func(name string, body *bool) (bool, error) {
		v, set := false, false
		if q.Has(name) {
			b, err := strconv.ParseBool(q.Get(name))
			if err != nil {
				return false, httpapi.Invalid(name, "must be true or false")
			}
			v, set = b, true
		}
		if body != nil {
			if set && *body != v {
				return false, httpapi.Invalid(name, "the query parameter and the body field disagree")
			}
			v = *body
		}
		return v, nil
	}
	if draft, err = flag("draft", bodyDraft); err != nil {
		return false, false, err
	}
	if autosave, err = flag("autosave", bodyAutosave); err != nil {
		return false, false, err
	}
	return draft || autosave, autosave, nil
}

// ReadDraft reports whether an authenticated read asks for the draft view
// (?draft=true): the draft where there is one, else what is live.
func ReadDraft(r *http.Request) (bool, error) {
	if !r.URL.Query().Has("draft") {
		return false, nil
	}
	b, err := strconv.ParseBool(r.URL.Query().Get("draft"))
	if err != nil {
		return false, httpapi.Invalid("draft", "must be true or false")
	}
	return b, nil
}

// PublishRequest is the body of POST …/publish: languages limits the
// publish to those languages (the others stay as they are live); absent,
// the whole draft goes live.
type PublishRequest struct {
	Languages *[]string `json:"languages"`
}

// Languages reads the optional body of a publish: nil for every language.
// A request without a body publishes everything.
func Languages(r *http.Request) ([]string, error) {
	if r.ContentLength == 0 {
		return nil, nil
	}
	var req PublishRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return nil, err
	}
	if req.Languages == nil {
		return nil, nil
	}
	return CheckLanguages("languages", *req.Languages)
}

// CheckLanguages validates the languages list sent under field: 1 to
// MaxLanguages language codes, each once.
func CheckLanguages(field string, langs []string) ([]string, error) {
	var v httpapi.Validator
	v.Check(len(langs) >= 1 && len(langs) <= MaxLanguages, field, fmt.Sprintf("must list 1 to %d language codes (omit it to publish every language)", MaxLanguages))
	for i, l := range langs {
		v.Check(httpapi.ValidLanguage(l), fmt.Sprintf("%s[%d]", field, i), "must be a language code such as en or pt-BR")
		v.Check(!slices.Contains(langs[:i], l), fmt.Sprintf("%s[%d]", field, i), fmt.Sprintf("%q is listed twice", l))
	}
	return langs, v.Err()
}

// Actor is who a write is recorded as: the key's id (a dashboard user's
// key for the dashboard).
func Actor(s *tenant.Scope) string {
	if s.Key == nil {
		return "system"
	}
	return s.Key.ID
}

// Load reads the draft of an item into dst; false when it has none.
func Load(ctx context.Context, q tenant.Querier, typ, ref string, dst any) (ok bool, err error) {
	defer httpapi.Wrap(&err, "drafts.Load(%s %s)", typ, ref)
	var doc []byte
	err = q.QueryRow(ctx, `SELECT doc FROM drafts WHERE type = $1 AND ref = $2`, typ, ref).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, json.Unmarshal(doc, dst)
}

// Has reports which of refs have a draft.
func Has(ctx context.Context, q tenant.Querier, typ string, refs []string) (_ map[string]bool, err error) {
	defer httpapi.Wrap(&err, "drafts.Has(%s)", typ)
	out := make(map[string]bool, len(refs))
	if len(refs) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT ref FROM drafts WHERE type = $1 AND ref = ANY($2)`, typ, refs)
	if err != nil {
		return nil, err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	for _, r := range found {
		out[r] = true
	}
	return out, err
}

// Save writes doc as the draft of an item and records it as a version:
// an explicit save (its own version) or an autosave (updating the newest
// version while that is an autosave). langs are the languages the write
// touched (nil: not one language's).
func Save(ctx context.Context, tx pgx.Tx, s *tenant.Scope, typ, ref string, doc any, langs []string, autosave bool) (err error) {
	defer httpapi.Wrap(&err, "drafts.Save(%s %s)", typ, ref)
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO drafts (type, ref, doc, updated_by) VALUES ($1, $2, $3, $4)
		ON CONFLICT (type, ref) DO UPDATE SET doc = EXCLUDED.doc, updated_by = EXCLUDED.updated_by, updated_at = now()`,
		typ, ref, raw, Actor(s)); err != nil {
		return err
	}
	kind := KindSave
	if autosave {
		kind = KindAutosave
	}
	_, err = record(ctx, tx, s, typ, ref, kind, raw, langs)
	return err
}

// Drop deletes the draft of an item (after it is published whole).
func Drop(ctx context.Context, tx pgx.Tx, typ, ref string) (err error) {
	defer httpapi.Wrap(&err, "drafts.Drop(%s %s)", typ, ref)
	_, err = tx.Exec(ctx, `DELETE FROM drafts WHERE type = $1 AND ref = $2`, typ, ref)
	return err
}

// Forget deletes an item's draft and versions (the item is deleted).
func Forget(ctx context.Context, tx pgx.Tx, typ, ref string) (err error) {
	defer httpapi.Wrap(&err, "drafts.Forget(%s %s)", typ, ref)
	_, err = tx.Exec(ctx, `WITH d AS (DELETE FROM drafts WHERE type = $1 AND ref = $2)
		DELETE FROM versions WHERE type = $1 AND ref = $2`, typ, ref)
	return err
}

// Rename moves an item's draft and versions from the reference from to
// to, for types whose reference is an address the live item can change
// (a gallery's slug).
func Rename(ctx context.Context, tx pgx.Tx, typ, from, to string) (err error) {
	defer httpapi.Wrap(&err, "drafts.Rename(%s %s %s)", typ, from, to)
	if from == to {
		return nil
	}
	_, err = tx.Exec(ctx, `WITH d AS (UPDATE drafts SET ref = $3 WHERE type = $1 AND ref = $2)
		UPDATE versions SET ref = $3 WHERE type = $1 AND ref = $2`, typ, from, to)
	return err
}

// Published records what a publish made live, in langs (nil: all).
func Published(ctx context.Context, tx pgx.Tx, s *tenant.Scope, typ, ref string, live any, langs []string) (n int, err error) {
	defer httpapi.Wrap(&err, "drafts.Published(%s %s)", typ, ref)
	raw, err := json.Marshal(live)
	if err != nil {
		return 0, err
	}
	return record(ctx, tx, s, typ, ref, KindPublish, raw, langs)
}

// record adds a version of kind (an autosave updates the newest version
// when that is an autosave), dropping those beyond MaxVersions, and
// returns its number. The item's versions are numbered under a lock of
// the item for the transaction, so two writers never take one number.
func record(ctx context.Context, tx pgx.Tx, s *tenant.Scope, typ, ref, kind string, doc []byte, langs []string) (int, error) {
	if langs == nil {
		langs = []string{}
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/versions/' || $1 || '/' || $2, 0))`, typ, ref); err != nil {
		return 0, err
	}
	var n int
	err := tx.QueryRow(ctx, `WITH newest AS (SELECT n, kind FROM versions WHERE type = $1 AND ref = $2 ORDER BY n DESC LIMIT 1),
		updated AS (
			UPDATE versions v SET doc = $4, languages = $5, actor = $6, created_at = now()
			FROM newest WHERE $3 = 'autosave' AND newest.kind = 'autosave' AND v.type = $1 AND v.ref = $2 AND v.n = newest.n
			RETURNING v.n),
		inserted AS (
			INSERT INTO versions (type, ref, n, kind, languages, actor, doc)
			SELECT $1, $2, COALESCE((SELECT n FROM newest), 0) + 1, $3, $5, $6, $4
			WHERE NOT EXISTS (SELECT 1 FROM updated)
			RETURNING n)
		SELECT n FROM updated UNION ALL SELECT n FROM inserted`,
		typ, ref, kind, doc, langs, Actor(s)).Scan(&n)
	if err != nil {
		return 0, err
	}
	if n > MaxVersions {
		if _, err := tx.Exec(ctx, `DELETE FROM versions WHERE type = $1 AND ref = $2 AND n <= $3`, typ, ref, n-MaxVersions); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// List reads up to limit versions of an item, newest first, below the
// number before (0: from the newest), without their data.
func List(ctx context.Context, q tenant.Querier, typ, ref string, before int64, limit int) (_ []Version, err error) {
	defer httpapi.Wrap(&err, "drafts.List(%s %s)", typ, ref)
	rows, err := q.Query(ctx, `SELECT n, kind, languages, actor, created_at FROM versions
		WHERE type = $1 AND ref = $2 AND ($3 = 0 OR n < $3) ORDER BY n DESC LIMIT $4`, typ, ref, before, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (Version, error) {
		var v Version
		err := row.Scan(&v.N, &v.Kind, &v.Languages, &v.Actor, &v.CreatedAt)
		v.CreatedAt = v.CreatedAt.UTC()
		return v, err
	})
}

// Get reads version n of an item with its data (404 when there is none).
func Get(ctx context.Context, q tenant.Querier, typ, ref string, n int64) (v Version, err error) {
	defer httpapi.Wrap(&err, "drafts.Get(%s %s %d)", typ, ref, n)
	err = q.QueryRow(ctx, `SELECT n, kind, languages, actor, created_at, doc FROM versions WHERE type = $1 AND ref = $2 AND n = $3`,
		typ, ref, n).Scan(&v.N, &v.Kind, &v.Languages, &v.Actor, &v.CreatedAt, &v.Data)
	if errors.Is(err, pgx.ErrNoRows) {
		return v, errNoVersion
	}
	v.CreatedAt = v.CreatedAt.UTC()
	return v, err
}

// Restore makes version n of an item its draft, recorded as a restore
// version, and returns the version's data (404 when there is no such
// version).
func Restore(ctx context.Context, tx pgx.Tx, s *tenant.Scope, typ, ref string, n int64) (_ json.RawMessage, err error) {
	defer httpapi.Wrap(&err, "drafts.Restore(%s %s %d)", typ, ref, n)
	v, err := Get(ctx, tx, typ, ref, n)
	if err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO drafts (type, ref, doc, updated_by) VALUES ($1, $2, $3, $4)
		ON CONFLICT (type, ref) DO UPDATE SET doc = EXCLUDED.doc, updated_by = EXCLUDED.updated_by, updated_at = now()`,
		typ, ref, []byte(v.Data), Actor(s)); err != nil {
		return nil, err
	}
	_, err = record(ctx, tx, s, typ, ref, KindRestore, v.Data, v.Languages)
	return v.Data, err
}
