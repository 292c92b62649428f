package content

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// A content key's draft (docs/content-workflow.md) is every language's
// value as it would be published; a draft write sets one language's
// value in it, starting from the live values. Publishing writes the
// values that differ from what is live through the key's live write (1
// credit each, content.changed each), so a publish costs what the writes
// it stands for would have.

// keyDraft is the draft of a content key.
type keyDraft struct {
	AllLocales map[string]string `json:"all_locales"`
}

// keyItem is the content keys' versions routes. A key with neither value
// nor draft has no versions: its list is empty.
var keyItem = drafts.Item{
	Type: drafts.ContentKey,
	Ref: func(_ context.Context, _ tenant.Querier, r *http.Request, _ *tenant.Scope) (string, error) {
		key := chi.URLParam(r, "key")
		if !ValidKey(key) {
			return "", httpapi.NotFound("no content key " + key)
		}
		return key, nil
	},
	View: func(_ context.Context, _ tenant.Querier, r *http.Request, s *tenant.Scope, key string, doc json.RawMessage) (any, error) {
		var d keyDraft
		if err := json.Unmarshal(doc, &d); err != nil {
			return nil, err
		}
		lang, err := langParam(r, s.Project)
		if err != nil {
			return nil, err
		}
		return keyView(key, d.AllLocales, s.Project.Chain(lang), time.Now(), true), nil
	},
}

// keyView is the content key of values served in chain's first language
// (else the first of the chain with a value: serve).
func keyView(key string, values map[string]string, chain []string, at time.Time, hasDraft bool) ContentKey {
	k := ContentKey{Key: key, AllLocales: values, UpdatedAt: at.UTC(), HasDraft: &hasDraft}
	if k.AllLocales == nil {
		k.AllLocales = map[string]string{}
	}
	k.serve(chain)
	return k
}

// keyDraftOf reads key's draft, else its live values (false when it has
// no draft).
func keyDraftOf(ctx context.Context, tx pgx.Tx, key string) (keyDraft, bool, error) {
	var d keyDraft
	ok, err := drafts.Load(ctx, tx, drafts.ContentKey, key, &d)
	if err != nil || ok {
		return d, ok, err
	}
	d.AllLocales, err = liveValues(ctx, tx, key)
	return d, false, err
}

// saveKeyDrafts writes items into their keys' drafts (one version per key
// written), answering the draft view of each item's key in its language.
// Draft writes are free.
func saveKeyDrafts(ctx context.Context, tx pgx.Tx, s *tenant.Scope, items []ValueChange, autosave bool) ([]ContentKey, error) {
	// The keys in order, each locked once (drafts.Save's version lock).
	var keys []string
	byKey := map[string][]ValueChange{}
	for _, it := range items {
		if _, ok := byKey[it.Key]; !ok {
			keys = append(keys, it.Key)
		}
		byKey[it.Key] = append(byKey[it.Key], it)
	}
	slices.Sort(keys)
	saved := map[string]map[string]string{}
	for _, key := range keys {
		d, _, err := keyDraftOf(ctx, tx, key)
		if err != nil {
			return nil, err
		}
		var langs []string
		for _, it := range byKey[key] {
			d.AllLocales[it.Lang] = it.Value
			langs = append(langs, it.Lang)
		}
		if err := drafts.Save(ctx, tx, s, drafts.ContentKey, key, d, langs, autosave); err != nil {
			return nil, err
		}
		saved[key] = d.AllLocales
	}
	now := time.Now()
	out := make([]ContentKey, len(items))
	for i, it := range items {
		out[i] = keyView(it.Key, saved[it.Key], s.Project.Chain(it.Lang), now, true)
	}
	return out, nil
}

// publishKey makes the key's draft live, whole or in the languages the
// body names, in one transaction (publishKeyTx).
func (sv *Service) publishKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	key := chi.URLParam(r, "key")
	if !ValidKey(key) {
		return httpapi.NotFound("no content key " + key)
	}
	langs, err := drafts.Languages(r)
	if err != nil {
		return err
	}
	lang, err := langParam(r, s.Project)
	if err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (ContentKey, error) {
		values, still, err := sv.publishKeyTx(r.Context(), tx, s, key, langs, nil)
		return keyView(key, values, s.Project.Chain(lang), time.Now(), still), err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// publishKeyTx publishes key's draft in langs (nil: whole) in tx: each
// value that differs from what is live is written as a live write is (1
// credit, content.changed), then a publish version and content.published
// (naming release). The draft is dropped once nothing in it differs from
// what is live. A key without a draft is left as it is (no version); one
// with neither draft nor value is a 404. It returns the live values and
// whether a draft remains.
func (sv *Service) publishKeyTx(ctx context.Context, tx pgx.Tx, s *tenant.Scope, key string, langs []string, release *int64) (map[string]string, bool, error) {
	live, err := liveValues(ctx, tx, key)
	if err != nil {
		return nil, false, err
	}
	var d keyDraft
	has, err := drafts.Load(ctx, tx, drafts.ContentKey, key, &d)
	switch {
	case err != nil:
		return nil, false, err
	case !has && len(live) == 0:
		return nil, false, httpapi.NotFound("no content key " + key)
	case !has:
		return live, false, nil
	}
	var items []ValueChange
	for _, l := range slices.Sorted(maps.Keys(d.AllLocales)) {
		if v := d.AllLocales[l]; (langs == nil || slices.Contains(langs, l)) && live[l] != v {
			items = append(items, ValueChange{Key: key, Lang: l, Value: v})
		}
	}
	if len(items) > 0 {
		if _, err := sv.write(ctx, tx, s, items); err != nil {
			return nil, false, err
		}
	}
	for _, it := range items {
		live[it.Lang] = it.Value
	}
	still := false
	for l, v := range d.AllLocales {
		if cur, ok := live[l]; !ok || cur != v {
			still = true
		}
	}
	if !still {
		if err := drafts.Drop(ctx, tx, drafts.ContentKey, key); err != nil {
			return nil, false, err
		}
	}
	if _, err := drafts.Published(ctx, tx, s, drafts.ContentKey, key, keyDraft{AllLocales: live}, langs); err != nil {
		return nil, false, err
	}
	return live, still, sv.events.Emit(ctx, tx, s, drafts.TopicPublished, drafts.PublishedEvent{Type: drafts.ContentKey, ID: key, Languages: langs, ReleaseID: release})
}

// keyPublisher publishes content keys for releases: a key names itself,
// and exists while it has a value or a draft.
func (sv *Service) keyPublisher() drafts.Publisher {
	return drafts.Publisher{
		Scope: "content:write",
		Resolve: func(ctx context.Context, q tenant.Querier, id string) (string, error) {
			ok, err := keyExists(ctx, q, id)
			if err == nil && (!ok || !ValidKey(id)) {
				err = httpapi.NotFound("no content key " + id)
			}
			return id, err
		},
		Publish: func(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, langs []string, release *int64) error {
			_, _, err := sv.publishKeyTx(ctx, tx, s, ref, langs, release)
			return err
		},
	}
}

// Publishers are the pillar's publishers of each type of item, for
// releases.
func (sv *Service) Publishers() drafts.Publishers {
	return drafts.Publishers{drafts.Page: sv.pagePublisher(), drafts.ContentKey: sv.keyPublisher(),
		drafts.Component: sv.componentPublisher(), drafts.Gallery: sv.galleryPublisher(), drafts.Brand: sv.brandPublisher()}
}

// draftKey answers the draft view of key (GET ?draft=true): its draft,
// else its live values; 404 when it has neither.
func draftKey(ctx context.Context, s *tenant.Scope, key, lang string) (ContentKey, error) {
	return tenant.TxV(ctx, s, func(tx pgx.Tx) (ContentKey, error) {
		d, has, err := keyDraftOf(ctx, tx, key)
		if err != nil {
			return ContentKey{}, err
		}
		if len(d.AllLocales) == 0 {
			return ContentKey{}, httpapi.NotFound("no content key " + key)
		}
		return keyView(key, d.AllLocales, s.Project.Chain(lang), time.Now(), has), nil
	})
}

// previewBulk puts into b, a public bulk read, the draft values of the
// keys the preview covers: in b's language, else the first of its chain
// with one.
func previewBulk(ctx context.Context, s *tenant.Scope, pv *drafts.Previewing, b *Bulk) error {
	chain := s.Project.Chain(b.Lang)
	keys := slices.Concat(slices.Collect(maps.Keys(b.Data)), b.Missing)
	var missing []string
	for _, key := range keys {
		var d keyDraft
		ok, err := drafts.PreviewDraft(ctx, s.Reader(), pv, drafts.ContentKey, key, &d)
		if err != nil {
			return err
		}
		v, lang, has := pickValue(d.AllLocales, chain)
		switch {
		case ok && has:
			b.Data[key] = v
			delete(b.Fallback, key)
			b.Fallback.Note(key, lang, b.Lang)
		case slices.Contains(b.Missing, key):
			missing = append(missing, key)
		}
	}
	if b.Missing != nil {
		slices.Sort(missing)
		b.Missing = append(b.Missing[:0], missing...)
	}
	return nil
}
