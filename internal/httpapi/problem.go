// Package httpapi holds the HTTP plumbing every route shares: request ids,
// problem+json errors, strict JSON decoding, validation and pagination.
package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// Stable error codes of the contract.
const (
	CodeBadRequest          = "bad_request"
	CodeUnauthorized        = "unauthorized"
	CodeInsufficientCredits = "insufficient_credits"
	CodeForbidden           = "forbidden"
	CodeNotFound            = "not_found"
	CodeConflict            = "conflict"
	CodeSlotUnavailable     = "slot_unavailable"
	CodeIdempotencyConflict = "idempotency_conflict"
	CodeConnectNotReady     = "connect_not_ready"
	CodeKeyLimitReached     = "key_limit_reached"
	// CodeProjectLimitReached: the workspace has as many projects as the
	// operator allows (403).
	CodeProjectLimitReached = "project_limit_reached"
	CodeValidationFailed    = "validation_failed"
	CodeRateLimited         = "rate_limited"
	CodeInternal            = "internal_error"
	CodeUpstreamUnavailable = "upstream_unavailable"
	CodeServiceUnavailable  = "service_unavailable"
)

// Kinds of domain failure. Domain code (stores, services, the CLI's
// commands) returns one of them, wrapped with its context
// (fmt.Errorf("getPost(%d): %w", id, ErrNotFound)), or as a *Failure that
// adds the detail the client is shown; it never builds HTTP answers. The
// table kinds maps each kind to the status and code it is answered with.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("conflict")
	ErrInvalid     = errors.New("invalid")
	ErrForbidden   = errors.New("forbidden")
	ErrNoCredits   = errors.New("insufficient credits")
	ErrUpstream    = errors.New("upstream unavailable")
	ErrUnavailable = errors.New("unavailable")
)

// kinds maps each kind of failure to its answer: status, code, and the
// detail of a bare (undetailed) error of the kind.
var kinds = []struct {
	kind   error
	status int
	code   string
	detail string
}{
	{ErrNotFound, 404, CodeNotFound, "the resource does not exist"},
	{ErrConflict, 409, CodeConflict, "the request conflicts with the resource's state"},
	{ErrInvalid, 422, CodeValidationFailed, "the request has invalid fields"},
	{ErrForbidden, 403, CodeForbidden, "this key may not do this"},
	{ErrNoCredits, 402, CodeInsufficientCredits, "the credits left do not cover this operation"},
	{ErrUpstream, 502, CodeUpstreamUnavailable, "an upstream service failed"},
	{ErrUnavailable, 503, CodeServiceUnavailable, "the service is not available"},
}

// Failure is a domain error of one kind with what the client is told: a
// detail, a more precise code than the kind's (slot_unavailable,
// connect_not_ready, ...), invalid fields, or extra members (the cost and
// balance of a 402).
type Failure struct {
	Kind   error
	Code   string
	Detail string
	Fields map[string][]string
	Extra  map[string]any
}

// Fail is a failure of kind with a detail for the client.
func Fail(kind error, detail string) *Failure { return &Failure{Kind: kind, Detail: detail} }

// Error is the detail, followed by the invalid fields and their messages
// (what a command-line user needs to mend the input).
func (f *Failure) Error() string {
	msg := f.Detail
	if msg == "" {
		msg = f.Kind.Error()
	}
	fields := slices.Sorted(maps.Keys(f.Fields))
	for i, k := range fields {
		sep := "; "
		if i == 0 {
			sep = ": "
		}
		msg += sep + k + " " + strings.Join(f.Fields[k], ", ")
	}
	return msg
}

// Unwrap makes errors.Is(f, f.Kind) hold.
func (f *Failure) Unwrap() error { return f.Kind }

// Error is an API error: it becomes one problem+json response.
type Error struct {
	Status int
	Code   string
	Detail string
	// Errors maps field names to messages (422 only).
	Errors map[string][]string
	// Extra holds additional members, such as cost and balance on 402.
	Extra map[string]any
	// Header holds response headers such as Retry-After or Allow.
	Header http.Header
}

func (e *Error) Error() string {
	if e.Detail != "" {
		return e.Code + ": " + e.Detail
	}
	return e.Code
}

// WithHeader returns e with a response header added.
func (e *Error) WithHeader(k, v string) *Error {
	if e.Header == nil {
		e.Header = http.Header{}
	}
	e.Header.Add(k, v)
	return e
}

// NewError builds an Error with a status, a code and a detail.
func NewError(status int, code, detail string) *Error {
	return &Error{Status: status, Code: code, Detail: detail}
}

// Error is sent as is: the transport's own answers (a body that is not
// JSON, a missing key, a rate limit) that carry headers or have no domain
// meaning. Domain code returns a kind or a *Failure instead.

// BadRequest is a 400 bad_request.
func BadRequest(detail string) *Error { return NewError(400, CodeBadRequest, detail) }

// Unauthorized is a 401 with its WWW-Authenticate challenge: missing,
// malformed, unknown or revoked credentials (API keys and dashboard
// tokens alike).
func Unauthorized(detail string) *Error {
	return NewError(401, CodeUnauthorized, detail).WithHeader("WWW-Authenticate", `Bearer realm="plinth"`)
}

// NotFound is an ErrNotFound failure (404 not_found).
func NotFound(detail string) *Failure { return Fail(ErrNotFound, detail) }

// Conflict is an ErrConflict failure (409) with the given code.
func Conflict(code, detail string) *Failure {
	return &Failure{Kind: ErrConflict, Code: code, Detail: detail}
}

// Forbidden is an ErrForbidden failure (403) naming the scope the key lacks.
func Forbidden(scope string) *Failure {
	return Fail(ErrForbidden, "this key lacks the scope "+scope)
}

// Invalid is an ErrInvalid failure (422 validation_failed) of one field.
func Invalid(field, msg string) *Failure {
	return &Failure{Kind: ErrInvalid, Detail: "the request has invalid fields", Fields: map[string][]string{field: {msg}}}
}

// RateLimited is a 429 with Retry-After in whole seconds (at least 1).
func RateLimited(retryAfter int, detail string) *Error {
	if retryAfter < 1 {
		retryAfter = 1
	}
	return NewError(429, CodeRateLimited, detail).WithHeader("Retry-After", strconv.Itoa(retryAfter))
}

var titles = map[string]string{
	CodeBadRequest:          "Bad request",
	CodeUnauthorized:        "Unauthorized",
	CodeInsufficientCredits: "Insufficient credits",
	CodeForbidden:           "Forbidden",
	CodeNotFound:            "Not found",
	CodeConflict:            "Conflict",
	CodeSlotUnavailable:     "Slot unavailable",
	CodeIdempotencyConflict: "Idempotency key reused",
	CodeConnectNotReady:     "Payment account not ready",
	CodeKeyLimitReached:     "Key limit reached",
	CodeProjectLimitReached: "Project limit reached",
	CodeValidationFailed:    "Validation failed",
	CodeRateLimited:         "Too many requests",
	CodeInternal:            "Internal error",
	CodeUpstreamUnavailable: "Upstream unavailable",
	CodeServiceUnavailable:  "Service unavailable",
}

// AsError maps any error to the API error it is sent as: an *Error as is,
// a failure or a bare kind by the table kinds, a unique violation as 409 conflict, a value the
// database refuses (out of range, too long, malformed, a failed check) as
// 422 (text with NUL or invalid UTF-8 as 400), an expired deadline or a
// database that cannot be reached as 503 and everything else as 500.
func AsError(err error) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	var f *Failure
	errors.As(err, &f)
	for _, k := range kinds {
		if !errors.Is(err, k.kind) {
			continue
		}
		e := &Error{Status: k.status, Code: k.code, Detail: k.detail}
		if f != nil && errors.Is(f, k.kind) {
			if f.Code != "" {
				e.Code = f.Code
			}
			if f.Detail != "" {
				e.Detail = f.Detail
			}
			e.Errors, e.Extra = f.Fields, f.Extra
		}
		return e
	}
	if DatabaseUnreachable(err) {
		return NewError(503, CodeServiceUnavailable, "the database is unreachable for now; retry shortly").WithHeader("Retry-After", "2")
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505":
			return NewError(409, CodeConflict, "a resource with this identifier already exists")
		case "22021", "22P05":
			// Text with NUL or invalid UTF-8 (character_not_in_repertoire,
			// untranslatable_character): Decode and ValidURL refuse it
			// first; one that got past them is still malformed input.
			return BadRequest("a value is not UTF-8 text without NUL characters")
		case "23514", "54000":
			return NewError(422, CodeValidationFailed, "a value is out of the range or format its field accepts")
		}
		if strings.HasPrefix(pgErr.Code, "22") {
			// Class 22, data exception: a value out of range (22003,
			// 22008), malformed (22P02, 22007), too long (22001), a bad
			// escape in a pattern (22025). A handler should have refused
			// the value first (WriteError logs it); bad input is still the
			// client's 4xx, not a 500.
			return NewError(422, CodeValidationFailed, "a value is out of the range or format its field accepts")
		}
		switch pgErr.Code {
		case "57014", "40001", "40P01", "55P03":
			return NewError(503, CodeServiceUnavailable, "the request could not be completed now; retry").WithHeader("Retry-After", "1")
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return NewError(503, CodeServiceUnavailable, "the request timed out").WithHeader("Retry-After", "1")
	}
	return NewError(500, CodeInternal, "")
}

// DatabaseUnreachable reports whether err says PostgreSQL could not be
// reached or went away: no connection could be made, the connection broke
// or was closed, or the server is shutting down, starting or in recovery
// (SQLSTATE class 08, 57P01-57P03). Such a request wrote nothing it
// acknowledged, and the same request may succeed once the server is back
// (a restart, a failover): it is answered 503 with Retry-After, not 500.
func DatabaseUnreachable(err error) bool {
	var ce *pgconn.ConnectError
	var op *net.OpError
	if errors.As(err, &ce) || errors.As(err, &op) || errors.Is(err, pgconn.ErrConnClosed) || errors.Is(err, io.ErrUnexpectedEOF) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03"
	}
	return false
}

// WriteError writes err as application/problem+json. Causes of 5xx errors
// are logged with the request id and never sent.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	ae := AsError(err)
	info := infoFrom(r.Context())
	var pgErr *pgconn.PgError
	switch {
	case ae.Status == 503 && ae.Header.Get("Retry-After") != "":
		// A deliberate refusal under load (a full login queue, a lock
		// timeout): the client retries; the operator sees it, but it is
		// no fault.
		info.logger.WarnContext(r.Context(), "request refused for now", "request_id", info.id,
			"method", r.Method, "path", r.URL.Path, "status", ae.Status, "err", err)
	case ae.Status >= 500:
		info.logger.ErrorContext(r.Context(), "request failed", "request_id", info.id,
			"method", r.Method, "path", r.URL.Path, "status", ae.Status, "err", err)
	case (ae.Status == 422 || ae.Status == 400) && errors.As(err, &pgErr):
		info.logger.WarnContext(r.Context(), "the database refused a value the handler did not check", "request_id", info.id,
			"method", r.Method, "path", r.URL.Path, "err", err)
	}
	body := map[string]any{
		"type":     info.errorBase + "/" + ae.Code,
		"title":    titles[ae.Code],
		"status":   ae.Status,
		"code":     ae.Code,
		"instance": info.id,
	}
	if ae.Detail != "" {
		body["detail"] = ae.Detail
	}
	if ae.Errors != nil {
		body["errors"] = ae.Errors
	}
	for k, v := range ae.Extra {
		body[k] = v
	}
	for k, vs := range ae.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/problem+json")
	w.Header().Del("Content-Length")
	w.WriteHeader(ae.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(body)
}

// HandlerFunc is a handler that returns its error to one place.
type HandlerFunc func(w http.ResponseWriter, r *http.Request) error

// H adapts a HandlerFunc to net/http, writing a returned error as problem+json.
func H(f HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := f(w, r); err != nil {
			WriteError(w, r, err)
		}
	}
}

// JSON writes v as a JSON response with the given status.
func JSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// NoContent writes 204 with no body.
func NoContent(w http.ResponseWriter) error {
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// Logger returns the request's logger.
func Logger(ctx context.Context) *slog.Logger { return infoFrom(ctx).logger }

// Wrap adds context to *errp when it is not nil, keeping what it wraps
// (errors.Is and the failure the client is shown are unchanged):
//
//	func getPost(ctx context.Context, tx pgx.Tx, id int64) (_ Post, err error) {
//		defer httpapi.Wrap(&err, "getPost(%d)", id)
func Wrap(errp *error, format string, args ...any) {
	if *errp != nil {
		*errp = fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), *errp)
	}
}
