// Package forms is the lead-capture pillar: newsletter subscriptions and
// contact messages posted by anonymous visitors of a project's site through
// /v1/public/forms/*, and the admin list, delete and CSV export of them.
// Forms cost no credits and raise no webhook events (docs/decisions.md section 7, Events).
package forms

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/plinth-dev/plinth/internal/httpapi"
)

// Submission types.
const (
	TypeNewsletter = "newsletter"
	TypeContact    = "contact"
)

// Limits on what a visitor may submit (characters, not bytes). Longer values
// are refused with 422 validation_failed naming the field.
const (
	MaxName        = 200 // name
	MaxSubject     = 200 // subject
	MaxSource      = 200 // source (where on the site the form sits)
	MaxMessage     = 10000
	MaxFields      = 50   // entries in fields
	MaxFieldKey    = 100  // characters of a fields key
	MaxFieldValue  = 2000 // characters of a string value in fields
	MaxFieldValues = 50   // items of an array value in fields
)

// Submission is the form submission resource of docs/decisions.md section 5.
type Submission struct {
	ID        int64           `json:"id"`
	Type      string          `json:"type"`
	Email     string          `json:"email"`
	Name      *string         `json:"name"`
	Subject   *string         `json:"subject"`
	Message   *string         `json:"message"`
	Fields    json.RawMessage `json:"fields"`
	Source    *string         `json:"source"`
	Spam      bool            `json:"spam"`
	CreatedAt time.Time       `json:"created_at"`
}

// Subscription is the public answer to a newsletter subscription: what the
// request sent, with no id or date and no spam flag, so that a first
// subscription, a repeated one and a filled honeypot answer the same.
type Subscription struct {
	Type   string  `json:"type"`
	Email  string  `json:"email"`
	Name   *string `json:"name"`
	Source *string `json:"source"`
}

// toSubscription is the answer to the validated subscription r.
func toSubscription(r row) Subscription {
	return Subscription{Type: TypeNewsletter, Email: r.Email, Name: r.Name, Source: r.Source}
}

// toSubmission is the resource of a stored row.
func toSubmission(r row) Submission {
	fields := json.RawMessage(r.Fields)
	if len(fields) == 0 {
		fields = json.RawMessage("{}")
	}
	return Submission{ID: r.ID, Type: r.Type, Email: r.Email, Name: r.Name, Subject: r.Subject, Message: r.Message,
		Fields: fields, Source: r.Source, Spam: r.Spam, CreatedAt: r.CreatedAt.UTC()}
}

// toSubmissions is toSubmission of each row.
func toSubmissions(rows []row) []Submission {
	out := make([]Submission, len(rows))
	for i, r := range rows {
		out[i] = toSubmission(r)
	}
	return out
}

// newsletterRequest is the body of POST /v1/public/forms/newsletter.
// Website is the honeypot: a field hidden from people that bots fill in.
type newsletterRequest struct {
	Email   string  `json:"email" required:"true"`
	Name    *string `json:"name"`
	Source  *string `json:"source"`
	Website *string `json:"website"`
}

// contactRequest is the body of POST /v1/public/forms/contact.
type contactRequest struct {
	Name    string                     `json:"name" required:"true"`
	Email   string                     `json:"email" required:"true"`
	Message string                     `json:"message" required:"true"`
	Subject *string                    `json:"subject"`
	Fields  map[string]json.RawMessage `json:"fields"`
	Source  *string                    `json:"source"`
	Website *string                    `json:"website"`
}

// isSpam reports whether the honeypot was filled in.
func isSpam(website *string) bool { return website != nil && *website != "" }

func (in *newsletterRequest) validate() (row, error) {
	var v httpapi.Validator
	r := row{Type: TypeNewsletter, Spam: isSpam(in.Website), Fields: []byte("{}")}
	r.Email = checkEmail(&v, in.Email)
	r.Name = optionalText(&v, "name", in.Name, MaxName)
	r.Source = optionalText(&v, "source", in.Source, MaxSource)
	return r, v.Err()
}

func (in *contactRequest) validate() (row, error) {
	var v httpapi.Validator
	r := row{Type: TypeContact, Spam: isSpam(in.Website)}
	r.Email = checkEmail(&v, in.Email)
	name := requiredText(&v, "name", in.Name, MaxName)
	r.Name = &name
	msg := requiredText(&v, "message", in.Message, MaxMessage)
	r.Message = &msg
	r.Subject = optionalText(&v, "subject", in.Subject, MaxSubject)
	r.Source = optionalText(&v, "source", in.Source, MaxSource)
	r.Fields = checkFields(&v, in.Fields)
	return r, v.Err()
}

// requiredText trims s and checks it is present, short enough and free of
// NUL characters (which PostgreSQL text cannot hold).
func requiredText(v *httpapi.Validator, field, s string, max int) string {
	s = strings.TrimSpace(s)
	v.Check(s != "", field, "must not be empty")
	checkText(v, field, s, max)
	return s
}

// optionalText is requiredText for an optional field: absent or blank is nil.
func optionalText(v *httpapi.Validator, field string, s *string, max int) *string {
	if s == nil {
		return nil
	}
	t := strings.TrimSpace(*s)
	if t == "" {
		return nil
	}
	checkText(v, field, t, max)
	return &t
}

func checkText(v *httpapi.Validator, field, s string, max int) {
	v.Check(utf8.RuneCountInString(s) <= max, field, fmt.Sprintf("must be at most %d characters", max))
	v.Check(!strings.ContainsRune(s, 0), field, "must not contain NUL characters")
}

func checkEmail(v *httpapi.Validator, s string) string {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		v.Check(false, "email", "must not be empty")
	case utf8.RuneCountInString(s) > httpapi.MaxEmail:
		v.Check(false, "email", fmt.Sprintf("must be at most %d characters", httpapi.MaxEmail))
	default:
		v.Check(httpapi.ValidEmail(s), "email", "must be an email address such as name@example.com")
	}
	return s
}

// checkFields validates the free-form extra fields of a contact form:
// at most MaxFields entries, each a string, number, boolean, null or an
// array of those; strings bounded. It returns them as a JSON object.
func checkFields(v *httpapi.Validator, in map[string]json.RawMessage) []byte {
	if in == nil {
		return []byte("{}")
	}
	v.Check(len(in) <= MaxFields, "fields", fmt.Sprintf("must have at most %d entries", MaxFields))
	out := make(map[string]any, len(in))
	for k, raw := range in {
		key := "fields." + k
		if k == "" || utf8.RuneCountInString(k) > MaxFieldKey || strings.ContainsRune(k, 0) {
			v.Check(false, "fields", fmt.Sprintf("keys must be 1 to %d characters, without NUL", MaxFieldKey))
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber() // keep numbers exactly as sent
		var val any
		if err := dec.Decode(&val); err != nil {
			v.Check(false, key, "must be valid JSON")
			continue
		}
		if items, ok := val.([]any); ok {
			v.Check(len(items) <= MaxFieldValues, key, fmt.Sprintf("must have at most %d items", MaxFieldValues))
			for _, item := range items {
				switch msg := scalarProblem(item); {
				case msg == "":
					continue
				case isNested(item):
					v.Check(false, key, "items must be strings, numbers, booleans or null")
				default:
					v.Check(false, key, "items "+msg)
				}
				break
			}
		} else if msg := scalarProblem(val); msg != "" {
			v.Check(false, key, msg)
		}
		out[k] = val
	}
	b, err := json.Marshal(out)
	if err != nil { // cannot happen for decoded JSON values
		v.Check(false, "fields", "must be a JSON object")
		return []byte("{}")
	}
	return b
}

func isNested(val any) bool {
	switch val.(type) {
	case []any, map[string]any:
		return true
	}
	return false
}

// scalarProblem says what is wrong with a fields value that should be a
// JSON scalar, or "" when nothing is.
func scalarProblem(val any) string {
	switch x := val.(type) {
	case string:
		if utf8.RuneCountInString(x) > MaxFieldValue {
			return fmt.Sprintf("must be at most %d characters", MaxFieldValue)
		}
		if strings.ContainsRune(x, 0) {
			return "must not contain NUL characters"
		}
		return ""
	case json.Number, bool, nil:
		return ""
	}
	return "must be a string, number, boolean, null or an array of those"
}
