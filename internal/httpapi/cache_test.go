package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestPublicJSON(t *testing.T) {
	get := func(inm string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/x", nil)
		if inm != "" {
			r.Header.Set("If-None-Match", inm)
		}
		w := httptest.NewRecorder()
		if err := PublicJSON(w, r, map[string]any{"a": "<b>"}); err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := get("")
	etag := w.Header().Get("ETag")
	if w.Code != 200 || w.Body.String() != "{\"a\":\"<b>\"}\n" || w.Header().Get("Cache-Control") != PublicCacheControl ||
		w.Header().Get("Content-Type") != "application/json" || len(etag) != 34 || etag != ETagOf(w.Body.Bytes()) {
		t.Fatalf("200: %d %q %v", w.Code, w.Body, w.Header())
	}
	for _, inm := range []string{etag, "W/" + etag, `"x", ` + etag, `"x",` + etag + `,"y"`, "*"} {
		if w := get(inm); w.Code != http.StatusNotModified || w.Body.Len() != 0 || w.Header().Get("ETag") != etag || w.Header().Get("Content-Type") != "" {
			t.Fatalf("If-None-Match %s: %d %q", inm, w.Code, w.Body)
		}
	}
	for _, inm := range []string{`"other"`, etag[1 : len(etag)-1], `W/"other"`} {
		if w := get(inm); w.Code != 200 {
			t.Fatalf("If-None-Match %s: %d", inm, w.Code)
		}
	}
	if ETagOf([]byte("a")) == ETagOf([]byte("b")) {
		t.Fatal("different bodies, same tag")
	}
}
