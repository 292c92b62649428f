package forms

import (
	"encoding/csv"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Service is the forms pillar. It needs nothing but the project's scope.
type Service struct{ tenant.Base }

// New builds the pillar.
func New() *Service { return &Service{} }

// PublicRoutes mounts the keyless submit endpoints on the /v1/public router,
// which has already resolved the project. Browsers post to them across
// origins under the surface's CORS answers (central.PublicCORS).
func (*Service) PublicRoutes(r chi.Router) {
	r.Post("/forms/newsletter", tenant.Handle(subscribe))
	r.Post("/forms/contact", tenant.Handle(contact))
}

// Routes mounts the admin endpoints: forms:read to list and export,
// forms:write to delete.
func (*Service) Routes(r chi.Router) {
	r.With(tenant.ReadWrite("forms")).Get("/form-submissions", tenant.Handle(listSubmissions))
	r.With(tenant.ReadWrite("forms")).Delete("/form-submissions/{id}", tenant.Handle(deleteSubmission))
}

// formRequest is the body of a public form.
type formRequest interface {
	validate() (row, error)
}

// submit decodes a public form's body into in, validates it and stores
// it; it returns the submission as sent and as saved.
func submit(r *http.Request, s *tenant.Scope, in formRequest) (sent, saved row, err error) {
	if err := httpapi.Decode(r, in); err != nil {
		return sent, saved, err
	}
	if sent, err = in.validate(); err != nil {
		return sent, saved, err
	}
	saved, err = tenant.TxV(r.Context(), s, func(tx pgx.Tx) (row, error) {
		return insert(r.Context(), tx, sent)
	})
	return sent, saved, err
}

// subscribe answers every subscription alike, first, repeated or spam:
// the Subscription this request sent. Anything read from the stored row
// (its id, its date, a name an earlier request gave) would tell an
// anonymous caller whether the address was already subscribed.
func subscribe(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	sent, _, err := submit(r, s, &newsletterRequest{})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, toSubscription(sent))
}

func contact(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	_, saved, err := submit(r, s, &contactRequest{})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, toSubmission(saved))
}

func listSubmissions(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	typ := r.URL.Query().Get("type")
	if typ != "" && typ != TypeNewsletter && typ != TypeContact {
		return httpapi.Invalid("type", "must be newsletter or contact")
	}
	if wantsCSV(r) {
		if typ == TypeContact {
			return httpapi.Invalid("type", "the CSV export lists newsletter subscribers; omit type or use newsletter")
		}
		return exportCSV(w, r, s)
	}
	subs, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Submission, error) {
		rows, err := list(r.Context(), s.Reader(), typ, before, limit)
		return toSubmissions(rows), err
	}, func(x Submission) string { return httpapi.IDText(x.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, subs)
}

// errNoSubmission answers a path id that is not a positive integer.
var errNoSubmission = httpapi.NotFound("no form submission with this id")

func deleteSubmission(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", errNoSubmission)
	if err != nil {
		return err
	}
	if err := s.Tx(r.Context(), func(tx pgx.Tx) error { return remove(r.Context(), tx, id) }); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

// wantsCSV reports whether the Accept header asks for text/csv at least as
// much as for JSON.
func wantsCSV(r *http.Request) bool {
	csvQ, jsonQ := 0.0, -1.0
	for _, h := range r.Header.Values("Accept") {
		for _, part := range strings.Split(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
			switch mt {
			case "text/csv":
				csvQ = max(csvQ, q)
			case "application/json":
				jsonQ = max(jsonQ, q)
			}
		}
	}
	return csvQ > 0 && csvQ >= jsonQ
}

// exportCSV streams every genuine newsletter subscriber (spam excluded) as
// CSV: email, name, source, created_at (RFC 3339 UTC, as in JSON). Once the
// body has started, an error cannot become a problem+json any more, so the
// connection is aborted: the client sees a truncated transfer rather than a
// short, valid-looking file.
func exportCSV(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	cw := csv.NewWriter(w)
	started := false
	start := func() error {
		started = true
		h := w.Header()
		h.Set("Content-Type", "text/csv; charset=utf-8")
		h.Set("Content-Disposition", `attachment; filename="newsletter-subscribers.csv"`)
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusOK)
		return cw.Write([]string{"email", "name", "source", "created_at"})
	}
	err := s.Tx(r.Context(), func(tx pgx.Tx) error {
		return eachSubscriber(r.Context(), tx, func(sub subscriber) error {
			if !started {
				if err := start(); err != nil {
					return err
				}
			}
			return cw.Write([]string{csvCell(sub.Email), csvCell(sub.Name), csvCell(sub.Source), sub.CreatedAt.UTC().Format(time.RFC3339Nano)})
		})
	})
	if err == nil && !started {
		err = start()
	}
	if err == nil {
		cw.Flush()
		err = cw.Error()
	}
	if err != nil && started {
		httpapi.Logger(r.Context()).ErrorContext(r.Context(), "newsletter export aborted", "request_id", httpapi.RequestID(r.Context()), "err", err)
		panic(http.ErrAbortHandler)
	}
	return err
}

// csvCell guards a visitor-supplied value against formula injection: a
// spreadsheet would evaluate a cell starting with = + - @, and some read
// a leading tab or carriage return as the start of a formula too, so such
// a cell gets a leading single quote. Quoting of commas, quotes and
// newlines is encoding/csv's job.
func csvCell(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
