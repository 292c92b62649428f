package blog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Bounds of the fields of a post, a category and a tag.
const (
	maxTitle           = 300
	maxExcerpt         = 2000
	maxMetaTitle       = 300
	maxMetaDescription = 1000
	maxName            = 255
	maxURL             = 2048
	maxTags            = 50
	maxIDs             = 100
)

// nullable is a PATCH field that tells absent (Set false), null (Null)
// and a value apart.
type nullable[T any] struct {
	Set  bool
	Null bool
	V    T
}

// UnmarshalJSON implements json.Unmarshaler; it is called for null too.
func (n *nullable[T]) UnmarshalJSON(b []byte) error {
	n.Set = true
	if string(b) == "null" {
		n.Null = true
		return nil
	}
	return json.Unmarshal(b, &n.V)
}

// ptr is the value, nil when absent or null.
func (n nullable[T]) ptr() *T {
	if !n.Set || n.Null {
		return nil
	}
	return &n.V
}

// clean returns *p sanitised by f (nil stays nil), so that what is
// validated is what is stored.
func clean(p *string, f func(string) string) *string {
	if p == nil {
		return nil
	}
	c := f(*p)
	return &c
}

// decode is httpapi.Decode for bodies that embed textFields: a wrong-typed
// text field is named as the client sent it ("title"), not by its Go path
// through the embedded struct ("textFields.title").
func decode(r *http.Request, dst any) error {
	err := httpapi.Decode(r, dst)
	var f *httpapi.Failure
	if errors.As(err, &f) && f.Fields != nil {
		named := make(map[string][]string, len(f.Fields))
		for k, msgs := range f.Fields {
			named[strings.TrimPrefix(k, "textFields.")] = msgs
		}
		f.Fields = named
	}
	return err
}

// textFields are the texts of a post in one language, as a request sends
// them (embedded in the create, PATCH and translation bodies).
type textFields struct {
	Title           *string `json:"title"`
	Content         *string `json:"content"`
	Excerpt         *string `json:"excerpt"`
	MetaTitle       *string `json:"meta_title"`
	MetaDescription *string `json:"meta_description"`
}

// clean sanitises the fields present and checks them.
func (f *textFields) clean(v *httpapi.Validator) {
	f.Title, f.Excerpt, f.Content = clean(f.Title, cleanText), clean(f.Excerpt, cleanText), clean(f.Content, cleanHTML)
	f.MetaTitle, f.MetaDescription = clean(f.MetaTitle, cleanText), clean(f.MetaDescription, cleanText)
	checkLen(v, "title", f.Title, maxTitle, true)
	checkLen(v, "excerpt", f.Excerpt, maxExcerpt, false)
	checkLen(v, "meta_title", f.MetaTitle, maxMetaTitle, false)
	checkLen(v, "meta_description", f.MetaDescription, maxMetaDescription, false)
}

// any reports whether a text field is present.
func (f *textFields) any() bool {
	return f.Title != nil || f.Content != nil || f.Excerpt != nil || f.MetaTitle != nil || f.MetaDescription != nil
}

// onto returns t with the fields present replaced.
func (f *textFields) onto(t Translation) Translation {
	for _, x := range []struct {
		dst *string
		v   *string
	}{{&t.Title, f.Title}, {&t.Content, f.Content}, {&t.Excerpt, f.Excerpt}, {&t.MetaTitle, f.MetaTitle}, {&t.MetaDescription, f.MetaDescription}} {
		if x.v != nil {
			*x.dst = *x.v
		}
	}
	return t
}

// checkLen checks that a present text field has at most max characters
// (and, when nonEmpty, is not blank).
func checkLen(v *httpapi.Validator, field string, s *string, max int, nonEmpty bool) {
	if s == nil {
		return
	}
	if nonEmpty {
		v.Check(strings.TrimSpace(*s) != "", field, "must not be empty")
	}
	v.Check(utf8.RuneCountInString(*s) <= max, field, fmt.Sprintf("must be at most %d characters", max))
}

func checkSlug(v *httpapi.Validator, s *string) {
	if s != nil {
		v.Check(validSlug(*s), "slug", "must match ^[a-z0-9][a-z0-9-]{0,254}$ and not be all digits")
	}
}

func checkLanguage(v *httpapi.Validator, field, lang string) {
	v.Check(httpapi.ValidLanguage(lang), field, fmt.Sprintf("%q is not a language code", lang))
}

func checkImageURL(v *httpapi.Validator, s string) {
	u, err := url.Parse(s)
	v.Check(err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && len(s) <= maxURL,
		"featured_image", fmt.Sprintf("must be an http or https URL of at most %d characters", maxURL))
}

// checkTagIDs checks the count of tag ids and returns them without duplicates.
func checkTagIDs(v *httpapi.Validator, ids []int64) []int64 {
	v.Check(len(ids) <= maxTags, "tag_ids", fmt.Sprintf("must list at most %d tags", maxTags))
	seen := map[int64]bool{}
	out := []int64{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// parseTime reads an RFC 3339 timestamp field.
func parseTime(v *httpapi.Validator, field string, s *string) *time.Time {
	if s == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		v.Check(false, field, "must be an RFC 3339 timestamp, e.g. 2030-01-02T15:04:05Z")
		return nil
	}
	return &t
}

// checkFuture checks that a schedule time is ahead of now.
func checkFuture(v *httpapi.Validator, t *time.Time, now time.Time) {
	if t != nil {
		v.Check(t.After(now), "scheduled_at", "must be in the future")
	}
}

// langQuery reads the optional ?lang of a read ("" when absent).
func langQuery(r *http.Request) (string, error) {
	lang := r.URL.Query().Get("lang")
	if lang != "" && !httpapi.ValidLanguage(lang) {
		return "", httpapi.Invalid("lang", fmt.Sprintf("%q is not a language code", lang))
	}
	return lang, nil
}

// termRef reads a category or tag reference of a filter: a numeric id or
// a slug.
func termRef(q url.Values, name string) (id *int64, slug *string) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	if n, ok := isID(v); ok {
		return &n, nil
	}
	return nil, &v
}

// parseFilter reads the list filters of GET /blog-posts (status only
// when admin).
func parseFilter(r *http.Request, admin bool) (postFilter, error) {
	q := r.URL.Query()
	var f postFilter
	var v httpapi.Validator
	if st := q.Get("status"); st != "" && admin {
		v.Check(st == StatusDraft || st == StatusPublished || st == StatusScheduled || st == StatusArchived,
			"status", "must be one of draft, published, scheduled, archived")
		f.Status = &st
	}
	f.CategoryID, f.CategorySlug = termRef(q, "category")
	f.TagID, f.TagSlug = termRef(q, "tag")
	if s := q.Get("ids"); s != "" {
		parts := strings.Split(s, ",")
		v.Check(len(parts) <= maxIDs, "ids", fmt.Sprintf("must list at most %d ids", maxIDs))
		for _, p := range parts {
			id, err := strconv.ParseInt(strings.TrimSpace(p), 10, 64)
			if err != nil || id <= 0 {
				v.Check(false, "ids", fmt.Sprintf("%q is not a post id", p))
				continue
			}
			f.IDs = append(f.IDs, id)
		}
	}
	f.Public = !admin
	return f, v.Err()
}
