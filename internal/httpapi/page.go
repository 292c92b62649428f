package httpapi

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
)

// Page is the list request: limit (1..100, default 20) and an opaque cursor.
type Page struct {
	Limit  int
	Cursor string // decoded cursor text; empty for the first page
}

// List is the list response shape.
type List[T any] struct {
	Data       []T     `json:"data"`
	HasMore    bool    `json:"has_more"`
	NextCursor *string `json:"next_cursor"`
}

// ParsePage reads limit and cursor from the query (422 on bad values).
func ParsePage(r *http.Request) (Page, error) {
	p := Page{Limit: 20}
	q := r.URL.Query()
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			return p, Invalid("limit", "must be an integer from 1 to 100")
		}
		p.Limit = n
	}
	if s := q.Get("cursor"); s != "" {
		c, err := DecodeCursor(s)
		if err != nil {
			return p, err
		}
		p.Cursor = c
	}
	return p, nil
}

// EncodeCursor is the opaque next_cursor of the cursor text c.
func EncodeCursor(c string) string { return base64.RawURLEncoding.EncodeToString([]byte(c)) }

// DecodeCursor returns the cursor text of a cursor EncodeCursor made (422
// BadCursor for anything else).
func DecodeCursor(s string) (string, error) {
	// Every cursor this API issues is the base64 of UTF-8 text without
	// NUL (an id, a time and an id): anything else would reach the list's
	// query as text PostgreSQL refuses.
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 || !ValidText(string(b)) {
		return "", BadCursor()
	}
	return string(b), nil
}

// BadCursor is the 422 of a cursor this API did not issue.
func BadCursor() *Failure { return Invalid("cursor", "is not a cursor this API issued") }

// CursorID reads the cursor text of a list ordered by id: the id of the
// last row shown, or 0 on the first page (empty cursor).
func CursorID(cursor string) (int64, error) {
	if cursor == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(cursor, 10, 64)
	if err != nil || n < 1 {
		return 0, BadCursor()
	}
	return n, nil
}

// NewList builds a page from rows fetched with limit+1: the extra row only
// tells that more exist; cursorOf gives the cursor text of the last row kept.
func NewList[T any](rows []T, limit int, cursorOf func(T) string) List[T] {
	l := List[T]{Data: rows}
	if l.Data == nil {
		l.Data = []T{}
	}
	if len(rows) > limit {
		l.Data = rows[:limit]
		l.HasMore = true
		c := EncodeCursor(cursorOf(rows[limit-1]))
		l.NextCursor = &c
	}
	return l
}

// PathID reads the integer path parameter name (a row's id). Anything but
// the decimal digits of a positive integer ("+5", " 5", "5.0") names no
// row: it returns notFound, the caller's not-found failure.
func PathID(r *http.Request, name string, notFound error) (int64, error) {
	s := chi.URLParam(r, name)
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return 0, notFound
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, notFound
	}
	return n, nil
}

// ListOf answers a list request in one place: it reads the page (limit
// and cursor, 422 on bad values), decodes a cursor with decode (CursorID
// for lists ordered by id), runs query for up to limit+1 rows after it
// (the zero C on the first page), and builds the page, whose next cursor
// is the text cursorOf gives the last row kept.
func ListOf[C, T any](r *http.Request, decode func(string) (C, error), query func(after C, limit int) ([]T, error), cursorOf func(T) string) (List[T], error) {
	page, err := ParsePage(r)
	if err != nil {
		return List[T]{}, err
	}
	var after C
	if page.Cursor != "" {
		if after, err = decode(page.Cursor); err != nil {
			return List[T]{}, err
		}
	}
	rows, err := query(after, page.Limit+1)
	if err != nil {
		return List[T]{}, err
	}
	return NewList(rows, page.Limit, cursorOf), nil
}

// CursorText decodes the cursor of a list ordered by a text key (a
// prefixed id): the text itself.
func CursorText(cursor string) (string, error) { return cursor, nil }

// IDText is the cursor text of a row of a list ordered by id.
func IDText(id int64) string { return strconv.FormatInt(id, 10) }
