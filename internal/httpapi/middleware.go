package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime/debug"
	"slices"

	"github.com/plinth-dev/plinth/internal/id"
)

type ctxKey int

const infoKey ctxKey = 0

type requestInfo struct {
	id        string
	errorBase string
	logger    *slog.Logger
}

var fallbackInfo = &requestInfo{id: "", errorBase: "https://plinth.dev/errors", logger: slog.Default()}

func infoFrom(ctx context.Context) *requestInfo {
	if i, ok := ctx.Value(infoKey).(*requestInfo); ok {
		return i
	}
	return fallbackInfo
}

// RequestID returns the id of the request (the X-Request-Id header value).
func RequestID(ctx context.Context) string { return infoFrom(ctx).id }

// MaxRequestIDLen bounds a caller-sent X-Request-Id that is kept.
const MaxRequestIDLen = 128

func validRequestID(s string) bool {
	if s == "" || len(s) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// Base is the outermost middleware: it assigns the request id (keeping a
// valid caller-sent one), sets X-Request-Id, recovers panics as 500 and
// bounds the request body to maxBody bytes.
func Base(errorBase string, logger *slog.Logger, maxBody int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rid := r.Header.Get("X-Request-Id")
			if !validRequestID(rid) {
				rid = id.New("req_")
			}
			info := &requestInfo{id: rid, errorBase: errorBase, logger: logger}
			r = r.WithContext(context.WithValue(r.Context(), infoKey, info))
			w.Header().Set("X-Request-Id", rid)
			if r.Body != nil && maxBody > 0 {
				r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			}
			defer func() {
				if p := recover(); p != nil {
					if p == http.ErrAbortHandler {
						panic(p)
					}
					WriteError(w, r, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
				}
			}()
			next.ServeHTTP(w, r)
		})
	}
}

// ValidURL refuses a request whose path or query is not text (ValidText)
// before any handler reads it: path parameters and query values reach
// the stores as text, which PostgreSQL refuses with NUL or invalid UTF-8.
// A path that is not text names no resource (404); a query parameter that
// is not text is a malformed request (400 naming the parameter). The
// decoded path is checked: it holds every byte the raw one escapes, so it
// covers chi routing on either (on the raw path when a slash is escaped).
func ValidURL(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ValidText(r.URL.Path) {
			WriteError(w, r, NotFound("no resource has this path: it is not UTF-8 text without NUL characters"))
			return
		}
		if r.URL.RawQuery == "" {
			next.ServeHTTP(w, r)
			return
		}
		q := r.URL.Query()
		for _, k := range slices.Sorted(maps.Keys(q)) {
			if !ValidText(k) || slices.ContainsFunc(q[k], func(v string) bool { return !ValidText(v) }) {
				WriteError(w, r, BadRequest(fmt.Sprintf("the query parameter %q is not UTF-8 text without NUL characters", k)))
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
