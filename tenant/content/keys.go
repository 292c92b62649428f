package content

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// Limits of content keys.
const (
	MaxValueLen     = 65536 // characters of one value
	MaxBatchUpdates = 500   // items of PUT /content
	MaxBulkKeys     = 500   // keys of GET /content/bulk
	// MaxPublicBulkKeys is the most keys an anonymous bulk read may list:
	// a page's worth, not a project's (the public read requires keys).
	MaxPublicBulkKeys = 200
	// BulkPage is the most values GET /content/bulk without keys answers
	// at once; has_more and next_cursor lead to the rest, so no single
	// request reads a whole large project into memory.
	BulkPage = 5000
)

// ValueCost is the price of one written content value (content_update).
const ValueCost = 1 * credits.Unit

// ContentKey is the content key resource: the value served in lang (the
// language asked for, or the first of its fallback chain with a value:
// tenant.Project.Chain), with every language's value.
type ContentKey struct {
	Key        string            `json:"key"`
	Value      string            `json:"value"`
	Lang       string            `json:"lang"`
	AllLocales map[string]string `json:"all_locales"`
	UpdatedAt  time.Time         `json:"updated_at"`
	// Fallback is {"value": lang} when the value is another language's
	// than the one asked for.
	Fallback tenant.Provenance `json:"fallback,omitempty"`
	// HasDraft says whether the key has unpublished changes: on
	// authenticated reads and draft writes (the public surface and live
	// writes omit it).
	HasDraft *bool `json:"has_draft,omitempty"`
}

// serve sets the value k serves: that of chain's first language with a
// non-empty value, else of its first with any (an empty value set on
// purpose), with the fallback when that language is not the one asked
// for (chain[0]). False when no language of chain has a value; k then
// serves "" in the default language (chain's last).
func (k *ContentKey) serve(chain []string) bool {
	v, lang, ok := pickValue(k.AllLocales, chain)
	k.Value, k.Lang, k.Fallback = v, cmp.Or(lang, chain[len(chain)-1]), nil
	k.Fallback.Note("value", lang, chain[0])
	return ok
}

// pickValue returns the value of chain's first language with a non-empty
// value in values, else of its first with any, and that language; ok is
// false when no language of chain has one.
func pickValue(values map[string]string, chain []string) (v, lang string, ok bool) {
	v, lang = tenant.Pick(chain, func(l string) (string, bool) { v := values[l]; return v, v != "" })
	if lang == "" {
		v, lang = tenant.Pick(chain, func(l string) (string, bool) { v, ok := values[l]; return v, ok })
	}
	return v, lang, lang != ""
}

// Bulk is the body of GET /content/bulk. A read without keys is paged by
// key: HasMore and NextCursor are those of the contract's lists (a read
// of listed keys is one page).
type Bulk struct {
	Data map[string]string `json:"data"`
	Lang string            `json:"lang"`
	// Fallback maps each key whose value is another language's than Lang
	// (the first of Lang's chain with one) to that language.
	Fallback tenant.Provenance `json:"fallback,omitempty"`
	// Missing are the listed keys with no value in any language of the
	// chain.
	Missing    []string `json:"missing"`
	HasMore    bool     `json:"has_more"`
	NextCursor *string  `json:"next_cursor"`
}

// PutValueRequest is the body of PUT /content/{key}.
type PutValueRequest struct {
	Value *string `json:"value" required:"true"`
	Lang  *string `json:"lang"`
	// Draft and Autosave: as the query parameters (drafts.Mode).
	Draft    *bool `json:"draft"`
	Autosave *bool `json:"autosave"`
}

// ValueUpdate is one item of PUT /content.
type ValueUpdate struct {
	Key   *string `json:"key" required:"true"`
	Value *string `json:"value" required:"true"`
	Lang  *string `json:"lang"`
}

// BatchRequest is the body of PUT /content.
type BatchRequest struct {
	Updates  []ValueUpdate `json:"updates" required:"true"`
	Draft    *bool         `json:"draft"`
	Autosave *bool         `json:"autosave"`
}

// langParam returns the lang query parameter, or the project's default
// language when absent (422 when it is not a language code).
func langParam(r *http.Request, p *tenant.Project) (string, error) {
	lang, err := optionalLang(r)
	if err != nil || lang != "" {
		return lang, err
	}
	return p.DefaultLanguage, nil
}

// parseKeys reads the keys query parameter: comma-separated, blanks
// skipped, duplicates once, at most max. nil when the parameter is absent
// (every key).
func parseKeys(q url.Values, max int) ([]string, error) {
	if !q.Has("keys") {
		return nil, nil
	}
	list := q.Get("keys")
	n := strings.Count(list, ",") + 1
	keys := make([]string, 0, min(n, max+1))
	seen := make(map[string]bool, min(n, max+1))
	var v httpapi.Validator
	for part := range strings.SplitSeq(list, ",") {
		k := strings.TrimSpace(part)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		if !ValidKey(k) {
			v.Check(false, "keys", fmt.Sprintf("%q does not match %s", k, KeyPattern))
		}
		keys = append(keys, k)
	}
	if len(keys) < 1 || len(keys) > max { // the message only when it is needed
		v.Check(false, "keys", fmt.Sprintf("must list 1 to %d comma-separated keys", max))
	}
	return keys, v.Err()
}

// bulkCursor reads the cursor of a read without keys: the last key of the
// page before ("" on the first page). With keys, a cursor is refused.
func bulkCursor(q url.Values, keys []string) (string, error) {
	c := q.Get("cursor")
	switch {
	case c == "":
		return "", nil
	case keys != nil:
		return "", httpapi.Invalid("cursor", "pages a read without keys; a read of listed keys is one page")
	}
	after, err := httpapi.DecodeCursor(c)
	if err != nil || !ValidKey(after) {
		return "", httpapi.BadCursor()
	}
	return after, nil
}

// bulk reads the values of the keys the request lists (at most maxKeys),
// or the page after its cursor of every key.
func (sv *Service) bulk(r *http.Request, q url.Values, s *tenant.Scope, maxKeys int) (Bulk, error) {
	lang, err := langParam(r, s.Project)
	if err != nil {
		return Bulk{}, err
	}
	keys, err := parseKeys(q, maxKeys)
	if err != nil {
		return Bulk{}, err
	}
	after, err := bulkCursor(q, keys)
	if err != nil {
		return Bulk{}, err
	}
	return readBulk(r.Context(), s, keys, s.Project.Chain(lang), after)
}

func (sv *Service) getBulk(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	b, err := sv.bulk(r, r.URL.Query(), s, MaxBulkKeys)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, b)
}

// publicBulk is the anonymous bulk read. It requires keys: anyone may send
// it, so it reads what one page needs, never the whole project.
func (sv *Service) publicBulk(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	q := r.URL.Query() // parsed once: 50 keys make a long query
	if !q.Has("keys") {
		return httpapi.BadRequest(fmt.Sprintf("keys is required: list the content keys the page needs, comma-separated (at most %d)", MaxPublicBulkKeys))
	}
	pv, err := drafts.Preview(r, s)
	if err != nil {
		return err
	}
	b, err := sv.bulk(r, q, s, MaxPublicBulkKeys)
	if err != nil {
		return err
	}
	if pv != nil {
		if err := previewBulk(r.Context(), s, pv, &b); err != nil {
			return err
		}
	}
	return httpapi.PublicJSON(w, r, b)
}

// key reads the content key the request names; authenticated, with
// has_draft, or its draft view when asked (?draft=true).
func (sv *Service) key(r *http.Request, s *tenant.Scope, authenticated bool) (ContentKey, error) {
	key := chi.URLParam(r, "key")
	if !KeyPattern.MatchString(key) {
		return ContentKey{}, httpapi.NotFound("no content key " + key)
	}
	lang, err := langParam(r, s.Project)
	if err != nil {
		return ContentKey{}, err
	}
	if !authenticated {
		k, err := readKey(r.Context(), s, key, s.Project.Chain(lang), false)
		if pv, perr := drafts.Preview(r, s); perr != nil || pv.Covers(drafts.ContentKey, key) {
			if perr != nil {
				return ContentKey{}, perr
			}
			k, err = draftKey(r.Context(), s, key, lang)
			k.HasDraft = nil
		}
		return k, err
	}
	draft, err := drafts.ReadDraft(r)
	if err != nil || draft {
		if err != nil {
			return ContentKey{}, err
		}
		return draftKey(r.Context(), s, key, lang)
	}
	return readKey(r.Context(), s, key, s.Project.Chain(lang), true)
}

func (sv *Service) getKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	k, err := sv.key(r, s, true)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, k)
}

func (sv *Service) publicKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	k, err := sv.key(r, s, false)
	if err != nil {
		return err
	}
	return httpapi.PublicJSON(w, r, k)
}

// checkKey validates a content or image key sent under field.
func checkKey(v *httpapi.Validator, field, key string) {
	v.Check(KeyPattern.MatchString(key), field, "must match "+KeyPattern.String())
}

// checkValue validates one value and its language (lang defaulted).
func checkValue(v *httpapi.Validator, field string, value string, lang *string, def string) string {
	v.Check(utf8.RuneCountInString(value) <= MaxValueLen, field+"value", fmt.Sprintf("must be at most %d characters", MaxValueLen))
	v.Check(utf8.ValidString(value), field+"value", "must be valid UTF-8")
	if lang == nil {
		return def
	}
	v.Check(httpapi.ValidLanguage(*lang), field+"lang", "must be a language code such as en or pt-BR")
	return *lang
}

// write sets each value, charging 1 credit per value and reporting each
// changed value as content.changed, all in tx, and returns the content
// key of each value written, in its language, as the transaction's end
// reads them (Get, once tx committed).
// A batch is checked against its whole cost first, so its 402 states the
// cost of the batch; each value then has its own ledger entry, so the
// usage report counts values.
//
// The writes and the reads after them travel in one batch: none depends
// on another's answer, and each read, a later statement of the
// transaction, sees the writes before it. In a transaction of Scope.Tx
// the batch is kept for its end (tenant.FinisherOf: one per transaction,
// whatever the number of writes), with the charges and COMMIT when no
// endpoint wants the events: the rows it locks (a value many requests
// write) are locked for that one pipeline's work, not across a round
// trip. The keys read back fill the answer as the transaction ends
// (tenant.Later); the events are then made from what the writes answered
// (the outbox's EmitLater).
func (sv *Service) write(ctx context.Context, tx pgx.Tx, s *tenant.Scope, items []ValueChange) (*tenant.Later[[]ContentKey], error) {
	if total := ValueCost * int64(len(items)); len(items) > 1 {
		bal, err := credits.Balance(ctx, tx, s)
		if err != nil {
			return nil, err
		}
		if total > bal {
			return nil, credits.Insufficient(fmt.Sprintf("this batch costs %d credits and the balance is %d",
				total/credits.Unit, bal/credits.Unit), total, bal)
		}
	}
	w, kept := tenant.FinisherOf(tx, nil, func() *valueWrites { return &valueWrites{} })
	out, from := w.add(tx, items)
	if !kept {
		if err := tenant.Finish(ctx, tx, w); err != nil {
			return nil, err
		}
	}
	for i, it := range items {
		if err := credits.Charge(ctx, tx, s, "content_update", ValueCost, "content:"+it.Key+":"+it.Lang); err != nil {
			return nil, err
		}
		j := from + i
		if err := sv.events.EmitLater(ctx, tx, s, TopicChanged, func() (any, bool) { return w.changes[j], w.changed[j] }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// valueWrites are the value writes of a transaction (of each write of
// it, in order) and the reads of their keys after them, as one batch,
// and what they answered.
type valueWrites struct {
	items   []ValueChange
	changes []ValueChange
	changed []bool
	keys    []ContentKey
	// first is the answer of the transaction's first write, more those
	// of the writes after it.
	first writeAnswer
	more  []*writeAnswer
}

// writeAnswer is the answer of one write: the keys of items [from, to).
type writeAnswer struct {
	from, to int
	keys     tenant.Later[[]ContentKey]
}

// add adds the writes of items, and returns their answer and the index
// of the first in w.
func (w *valueWrites) add(tx pgx.Tx, items []ValueChange) (*tenant.Later[[]ContentKey], int) {
	first := w.changes == nil
	a := &w.first
	if !first {
		a = &writeAnswer{}
		w.more = append(w.more, a)
	}
	a.from, a.to, a.keys = len(w.items), len(w.items)+len(items), tenant.LaterIn[[]ContentKey](tx)
	if first {
		// The first write's items are w's: clipped, a later write's
		// append copies them rather than writing past them.
		w.items = slices.Clip(items)
		w.changes, w.changed, w.keys = make([]ValueChange, len(items)), make([]bool, len(items)), make([]ContentKey, len(items))
	} else {
		w.items = append(w.items, items...)
		w.changes = append(w.changes, make([]ValueChange, len(items))...)
		w.changed = append(w.changed, make([]bool, len(items))...)
		w.keys = append(w.keys, make([]ContentKey, len(items))...)
	}
	return &a.keys, a.from
}

// Queue queues the writes, their rows locked in key order, whatever the
// order of the items, so two batches naming the same keys never wait for
// each other in a cycle (a key written twice in the transaction, by two
// writes, is written in their order); then the read of each item's key.
func (w *valueWrites) Queue(b *pgx.Batch) {
	order := make([]int, len(w.items))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Or(strings.Compare(w.items[x].Key, w.items[y].Key), strings.Compare(w.items[x].Lang, w.items[y].Lang))
	})
	for _, i := range order {
		it := w.items[i]
		w.changes[i] = it
		b.Queue(setValueSQL, it.Key, it.Lang, it.Value).QueryRow(func(row pgx.Row) error {
			return row.Scan(&w.changes[i].PreviousValue, &w.changed[i])
		})
	}
	for i, it := range w.items {
		b.Queue(keySQL, it.Key).Query(func(rows pgx.Rows) error {
			var err error
			w.keys[i], err = scanKey(rows, it.Key, []string{it.Lang})
			return err
		})
	}
}

// Sealed: the writes fail by themselves, and nothing follows them.
func (w *valueWrites) Sealed() bool { return true }

// Finish fills each write's answer with the keys read back.
func (w *valueWrites) Finish(context.Context, pgx.Tx) error {
	w.first.fill(w.keys)
	for _, a := range w.more {
		a.fill(w.keys)
	}
	return nil
}

func (a *writeAnswer) fill(keys []ContentKey) { a.keys.Fill(keys[a.from:a.to:a.to]) }

// setValue writes key's value in lang and, when it changed, emits
// content.changed, in tx.
func (sv *Service) setValue(ctx context.Context, tx pgx.Tx, s *tenant.Scope, key, lang, value string) error {
	c, changed, err := SetValue(ctx, tx, key, lang, value)
	if err != nil || !changed {
		return err
	}
	return sv.events.Emit(ctx, tx, s, TopicChanged, c)
}

func (sv *Service) putKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	key := chi.URLParam(r, "key")
	var req PutValueRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	checkKey(&v, "key", key)
	lang := checkValue(&v, "", *req.Value, req.Lang, s.Project.DefaultLanguage)
	if err := v.Err(); err != nil {
		return err
	}
	draft, autosave, err := drafts.Mode(r, req.Draft, req.Autosave)
	if err != nil {
		return err
	}
	if draft {
		out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) ([]ContentKey, error) {
			return saveKeyDrafts(r.Context(), tx, s, []ValueChange{{Key: key, Lang: lang, Value: *req.Value}}, autosave)
		})
		if err != nil {
			return err
		}
		return httpapi.JSON(w, http.StatusOK, out[0])
	}
	later, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (*tenant.Later[[]ContentKey], error) {
		return sv.write(r.Context(), tx, s, []ValueChange{{Key: key, Lang: lang, Value: *req.Value}})
	})
	if err != nil {
		return err
	}
	out, err := later.Get()
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out[0])
}

func (sv *Service) putBatch(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req BatchRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	v.Check(len(req.Updates) >= 1 && len(req.Updates) <= MaxBatchUpdates, "updates", fmt.Sprintf("must hold 1 to %d items", MaxBatchUpdates))
	items := make([]ValueChange, 0, len(req.Updates))
	seen := map[[2]string]bool{}
	for i, u := range req.Updates {
		field := fmt.Sprintf("updates[%d].", i)
		if u.Key == nil {
			return httpapi.BadRequest(fmt.Sprintf("missing required field \"key\" in updates[%d]", i))
		}
		if u.Value == nil {
			return httpapi.BadRequest(fmt.Sprintf("missing required field \"value\" in updates[%d]", i))
		}
		checkKey(&v, field+"key", *u.Key)
		lang := checkValue(&v, field, *u.Value, u.Lang, s.Project.DefaultLanguage)
		id := [2]string{*u.Key, lang}
		v.Check(!seen[id], field+"key", fmt.Sprintf("%s in %s is set twice in this batch", *u.Key, lang))
		seen[id] = true
		items = append(items, ValueChange{Key: *u.Key, Lang: lang, Value: *u.Value})
	}
	if err := v.Err(); err != nil {
		return err
	}
	draft, autosave, err := drafts.Mode(r, req.Draft, req.Autosave)
	if err != nil {
		return err
	}
	if draft {
		out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) ([]ContentKey, error) {
			return saveKeyDrafts(r.Context(), tx, s, items, autosave)
		})
		if err != nil {
			return err
		}
		return httpapi.JSON(w, http.StatusOK, map[string]any{"data": out})
	}
	later, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (*tenant.Later[[]ContentKey], error) {
		return sv.write(r.Context(), tx, s, items)
	})
	if err != nil {
		return err
	}
	out, err := later.Get()
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, map[string]any{"data": out})
}

func (sv *Service) deleteKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	key := chi.URLParam(r, "key")
	lang, err := optionalLang(r)
	if err != nil {
		return err
	}
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		if err := deleteValues(r.Context(), tx, key, lang); err != nil || lang != "" {
			return err
		}
		return drafts.Forget(r.Context(), tx, drafts.ContentKey, key) // the key is gone whole
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
