package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
)

// PublicCacheControl is the Cache-Control of the public read surface.
const PublicCacheControl = "public, max-age=60"

// ETagOf returns a strong entity tag of body: a quoted hash of its bytes,
// so equal bodies always carry equal tags, on every instance.
func ETagOf(body []byte) string {
	sum := sha256.Sum256(body)
	return `"` + hex.EncodeToString(sum[:16]) + `"`
}

// NoneMatch reports whether the request's If-None-Match header matches
// etag (the weak comparison RFC 9110 prescribes for If-None-Match: a W/
// prefix is ignored; "*" matches any tag).
func NoneMatch(r *http.Request, etag string) bool {
	h := r.Header.Get("If-None-Match")
	if h == "" {
		return false
	}
	want := strings.TrimPrefix(etag, "W/")
	for _, t := range strings.Split(h, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == want {
			return true
		}
	}
	return false
}

// PublicJSON writes v as a 200 JSON response of the public read surface:
// Cache-Control public for 60 s and a strong ETag over the body. A request
// whose If-None-Match names that tag gets 304 Not Modified with no body.
func PublicJSON(w http.ResponseWriter, r *http.Request, v any) error {
	// The body is hashed before it is written, so it is encoded whole
	// first, into a buffer reused across requests rather than grown anew
	// for each (the allocation profile of the public bulk read showed it).
	buf := publicBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			buf.Reset()
			publicBufs.Put(buf)
		}
	}()
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return PublicBody(w, r, "application/json", buf.Bytes())
}

// publicBufs are PublicJSON's encoding buffers. One larger than
// maxPooledBody (a long page of posts) is left to the collector, so the
// pool does not keep the largest body ever served for every request.
var publicBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBody = 64 << 10

// PublicBody is PublicJSON for a body already encoded, of content type ct.
//
// A request that carries a preview token (X-Preview-Token or ?preview=,
// the content workflow's preview links) may be answered with drafts: its
// answer is Cache-Control: private, no-store, without an ETag, so no
// cache keeps it for another request.
func PublicBody(w http.ResponseWriter, r *http.Request, ct string, body []byte) error {
	h := w.Header()
	if IsPreview(r) {
		h.Set("Cache-Control", "private, no-store")
		h.Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		_, err := w.Write(body)
		return err
	}
	etag := ETagOf(body)
	h.Set("Cache-Control", PublicCacheControl)
	h.Set("ETag", etag)
	if NoneMatch(r, etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	h.Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
	return nil
}

// PreviewHeader is the header of a preview token (or the preview query
// parameter).
const PreviewHeader = "X-Preview-Token"

// IsPreview reports whether r carries a preview token.
func IsPreview(r *http.Request) bool {
	return r.Header.Get(PreviewHeader) != "" || r.URL.Query().Has("preview")
}
