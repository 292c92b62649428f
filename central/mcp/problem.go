package mcp

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// problems makes the SDK's own refusals (plain-text http.Error answers
// such as a missing Accept or a body that is not JSON) answer as every
// other route does: problem+json with a stable code and the request id.
// A refusal about the request is 400 bad_request, as a wrong content type
// or body is on every other route; JSON-RPC errors and streams pass
// through untouched.
func problems(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &problemWriter{ResponseWriter: w}
		next.ServeHTTP(pw, r)
		if !pw.held {
			return
		}
		w.Header().Del("Content-Type")
		w.Header().Del("Content-Length")
		detail := strings.TrimSpace(pw.body.String())
		switch {
		case pw.status == http.StatusNotFound:
			httpapi.WriteError(w, r, httpapi.NewError(404, httpapi.CodeNotFound, detail))
		case pw.status == http.StatusMethodNotAllowed:
			// The transport specification asks 405 of a server without
			// a GET stream; the code is the contract's for a wrong method.
			httpapi.WriteError(w, r, httpapi.NewError(405, httpapi.CodeBadRequest,
				"this MCP server is stateless and offers no GET stream: send each message with POST"))
		case pw.status >= 500:
			httpapi.WriteError(w, r, httpapi.NewError(500, httpapi.CodeInternal, detail))
		default:
			httpapi.WriteError(w, r, httpapi.BadRequest(detail))
		}
	})
}

// problemWriter holds back an error answer that is not JSON.
type problemWriter struct {
	http.ResponseWriter
	held   bool
	status int
	body   bytes.Buffer
}

func (p *problemWriter) WriteHeader(status int) {
	ct := p.Header().Get("Content-Type")
	if status >= 400 && !strings.HasPrefix(ct, "application/json") && !strings.HasPrefix(ct, "text/event-stream") {
		p.held, p.status = true, status
		return
	}
	p.ResponseWriter.WriteHeader(status)
}

func (p *problemWriter) Write(b []byte) (int, error) {
	if p.held {
		return p.body.Write(b)
	}
	return p.ResponseWriter.Write(b)
}

// Flush keeps server-sent events flowing.
func (p *problemWriter) Flush() {
	if f, ok := p.ResponseWriter.(http.Flusher); ok && !p.held {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (p *problemWriter) Unwrap() http.ResponseWriter { return p.ResponseWriter }
