package content

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/credits"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Limits of content keys.
const (
	MaxValueLen     = 65536 // characters of one value
	MaxBatchUpdates = 500   // items of PUT /content
	MaxBulkKeys     = 500   // keys of GET /content/bulk
)

// ValueCost is the price of one written content value (content_update).
const ValueCost = 1 * credits.Unit

// ContentKey is the content key resource: the value served in lang (the
// language asked for, or the project's default language when that has no
// value), with every language's value.
type ContentKey struct {
	Key        string            `json:"key"`
	Value      string            `json:"value"`
	Lang       string            `json:"lang"`
	AllLocales map[string]string `json:"all_locales"`
	UpdatedAt  time.Time         `json:"updated_at"`
}

// Bulk is the body of GET /content/bulk.
type Bulk struct {
	Data    map[string]string `json:"data"`
	Lang    string            `json:"lang"`
	Missing []string          `json:"missing"`
}

// PutValueRequest is the body of PUT /content/{key}.
type PutValueRequest struct {
	Value *string `json:"value" required:"true"`
	Lang  *string `json:"lang"`
}

// ValueUpdate is one item of PUT /content.
type ValueUpdate struct {
	Key   *string `json:"key" required:"true"`
	Value *string `json:"value" required:"true"`
	Lang  *string `json:"lang"`
}

// BatchRequest is the body of PUT /content.
type BatchRequest struct {
	Updates []ValueUpdate `json:"updates" required:"true"`
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

// getKey reads key in lang with the fallback to def; ErrNotFound when
// neither language has a value.
func getKey(ctx context.Context, tx pgx.Tx, key, lang, def string) (ContentKey, error) {
	rows, err := tx.Query(ctx, `SELECT lang, value, updated_at FROM content_values WHERE key = $1`, key)
	if err != nil {
		return ContentKey{}, err
	}
	defer rows.Close()
	k := ContentKey{Key: key, AllLocales: map[string]string{}}
	times := map[string]time.Time{}
	for rows.Next() {
		var l, v string
		var at time.Time
		if err := rows.Scan(&l, &v, &at); err != nil {
			return k, err
		}
		k.AllLocales[l], times[l] = v, at
	}
	if err := rows.Err(); err != nil {
		return k, err
	}
	for _, l := range []string{lang, def} {
		if v, ok := k.AllLocales[l]; ok {
			k.Value, k.Lang, k.UpdatedAt = v, l, times[l].UTC()
			return k, nil
		}
	}
	return k, httpapi.ErrNotFound
}

// bulkSQL reads the values of keys (every key when NULL) in lang, falling
// back to def, one row per key.
const bulkSQL = `SELECT DISTINCT ON (key) key, value FROM content_values
	WHERE lang IN ($2, $3) AND ($1::text[] IS NULL OR key = ANY ($1))
	ORDER BY key, lang = $2 DESC`

// BulkSQL is the query GET /content/bulk runs, for benchmarks comparing
// it with a bare handler.
const BulkSQL = bulkSQL

func readBulk(ctx context.Context, s *tenant.Scope, keys []string, lang, def string) (Bulk, error) {
	b := Bulk{Data: make(map[string]string, len(keys)), Lang: lang, Missing: []string{}}
	err := s.Read(ctx, bulkSQL, []any{keys, lang, def}, func(rows pgx.Rows) error {
		var k, v string
		_, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error {
			b.Data[k] = v
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

// parseKeys reads the keys query parameter: comma-separated, blanks
// skipped, duplicates once. nil when the parameter is absent (every key).
func parseKeys(r *http.Request) ([]string, error) {
	q := r.URL.Query()
	if !q.Has("keys") {
		return nil, nil
	}
	var keys []string
	seen := map[string]bool{}
	var v httpapi.Validator
	for _, part := range strings.Split(q.Get("keys"), ",") {
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
	v.Check(len(keys) >= 1 && len(keys) <= MaxBulkKeys, "keys", fmt.Sprintf("must list 1 to %d comma-separated keys", MaxBulkKeys))
	return keys, v.Err()
}

func (sv *Service) bulk(r *http.Request, s *tenant.Scope) (Bulk, error) {
	lang, err := langParam(r, s.Project)
	if err != nil {
		return Bulk{}, err
	}
	keys, err := parseKeys(r)
	if err != nil {
		return Bulk{}, err
	}
	return readBulk(r.Context(), s, keys, lang, s.Project.DefaultLanguage)
}

func (sv *Service) getBulk(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	b, err := sv.bulk(r, s)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, b)
}

func (sv *Service) publicBulk(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	b, err := sv.bulk(r, s)
	if err != nil {
		return err
	}
	return httpapi.PublicJSON(w, r, b)
}

func (sv *Service) key(r *http.Request, s *tenant.Scope) (ContentKey, error) {
	key := chi.URLParam(r, "key")
	if !KeyPattern.MatchString(key) {
		return ContentKey{}, httpapi.NotFound("no content key " + key)
	}
	lang, err := langParam(r, s.Project)
	if err != nil {
		return ContentKey{}, err
	}
	var k ContentKey
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		k, err = getKey(r.Context(), tx, key, lang, s.Project.DefaultLanguage)
		return err
	})
	if err == httpapi.ErrNotFound {
		return k, httpapi.NotFound(fmt.Sprintf("the content key %s has no value in %s or in the default language %s", key, lang, s.Project.DefaultLanguage))
	}
	return k, err
}

func (sv *Service) getKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	k, err := sv.key(r, s)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, k)
}

func (sv *Service) publicKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	k, err := sv.key(r, s)
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
// changed value as content.changed, all in tx.
// A batch is checked against its whole cost first, so its 402 states the
// cost of the batch; each value then has its own ledger entry, so the
// usage report counts values.
func (sv *Service) write(ctx context.Context, tx pgx.Tx, s *tenant.Scope, items []ValueChange) error {
	if total := ValueCost * int64(len(items)); len(items) > 1 {
		bal, err := credits.Balance(ctx, tx, s)
		if err != nil {
			return err
		}
		if total > bal {
			return credits.Insufficient(fmt.Sprintf("this batch costs %d credits and the balance is %d",
				total/credits.Unit, bal/credits.Unit), total, bal)
		}
	}
	for _, it := range items {
		if err := credits.Charge(ctx, tx, s, "content_update", ValueCost, "content:"+it.Key+":"+it.Lang); err != nil {
			return err
		}
		c, changed, err := SetValue(ctx, tx, it.Key, it.Lang, it.Value)
		if err != nil {
			return err
		}
		if changed {
			if err := sv.events.Emit(ctx, tx, s, TopicChanged, c); err != nil {
				return err
			}
		}
	}
	return nil
}

func (sv *Service) putKey(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
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
	var k ContentKey
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		if err := sv.write(r.Context(), tx, s, []ValueChange{{Key: key, Lang: lang, Value: *req.Value}}); err != nil {
			return err
		}
		k, err = getKey(r.Context(), tx, key, lang, lang)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, k)
}

func (sv *Service) putBatch(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
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
	out := make([]ContentKey, len(items))
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		if err := sv.write(r.Context(), tx, s, items); err != nil {
			return err
		}
		for i, it := range items {
			if out[i], err = getKey(r.Context(), tx, it.Key, it.Lang, it.Lang); err != nil {
				return err
			}
		}
		return nil
	})
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
		return execFound(r.Context(), tx, httpapi.ErrNotFound, `DELETE FROM content_values WHERE key = $1 AND ($2 = '' OR lang = $2)`, key, lang)
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
