package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

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
