package social

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/tenant"
)

// Post statuses.
const (
	StatusDraft              = "draft"
	StatusScheduled          = "scheduled"
	StatusPublishing         = "publishing"
	StatusPublished          = "published"
	StatusPartiallyPublished = "partially_published"
	StatusFailed             = "failed"
)

var statuses = []string{StatusDraft, StatusScheduled, StatusPublishing, StatusPublished, StatusPartiallyPublished, StatusFailed}

// Bounds of a post.
const (
	maxTitle    = 300
	maxContent  = 10000
	maxMedia    = 10
	maxAccounts = 50
	maxURL      = 2048
)

// CreateRequest is the JSON body of POST /social-posts: a manual post
// (type omitted or "manual", title required) or an AI one (type "ai",
// topic required), which starts social_post.generate.
type CreateRequest struct {
	Type        *string   `json:"type"`
	Title       *string   `json:"title"`
	Content     *string   `json:"content"`
	Platforms   *[]string `json:"platforms"`
	AccountIDs  *[]string `json:"account_ids"`
	Media       *[]string `json:"media"`
	ScheduledAt *string   `json:"scheduled_at"`

	GenerateFields
}

// PatchRequest is the JSON body of PATCH /social-posts/{id}; absent
// fields are unchanged, and scheduled_at null unschedules the post.
type PatchRequest struct {
	Title       *string        `json:"title"`
	Content     *string        `json:"content"`
	Platforms   *[]string      `json:"platforms"`
	AccountIDs  *[]string      `json:"account_ids"`
	Media       *[]string      `json:"media"`
	ScheduledAt optionalString `json:"scheduled_at"`
}

// optionalString tells an absent field (Set false) from null (Set, Value
// nil).
type optionalString struct {
	Set   bool
	Value *string
}

// UnmarshalJSON records presence; null is a present field with no value.
func (o *optionalString) UnmarshalJSON(b []byte) error {
	o.Set = true
	if string(b) == "null" {
		o.Value = nil
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: "non-string", Type: reflect.TypeOf("")}
	}
	o.Value = &s
	return nil
}

// checkTargets validates platforms and account ids against the project's
// accounts and returns the post's platforms: those named plus those of
// the accounts named, in the contract's order.
func checkTargets(ctx context.Context, tx pgx.Tx, v *httpapi.Validator, platforms, accountIDs []string) ([]string, error) {
	v.Check(len(platforms) <= len(Platforms), "platforms", "must have at most 6 entries")
	seen := map[string]bool{}
	for _, p := range platforms {
		v.Check(ValidPlatform(p), "platforms", "must be among "+strings.Join(Platforms, ", "))
		v.Check(!seen[p], "platforms", "must not repeat a platform")
		seen[p] = true
	}
	v.Check(len(accountIDs) <= maxAccounts, "account_ids", fmt.Sprintf("must have at most %d entries", maxAccounts))
	ids := map[string]bool{}
	for _, a := range accountIDs {
		v.Check(id.Valid("acc_", a), "account_ids", "must be social account ids (acc_…)")
		v.Check(!ids[a], "account_ids", "must not repeat an account")
		ids[a] = true
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	accounts, err := accountsOf(ctx, tx, accountIDs)
	if err != nil {
		return nil, err
	}
	for _, a := range accountIDs {
		acc, ok := accounts[a]
		v.Check(ok, "account_ids", a+" is not a social account of this project")
		seen[acc.Platform] = ok
	}
	var out []string
	for _, p := range Platforms {
		if seen[p] {
			out = append(out, p)
		}
	}
	v.Check(len(out) > 0, "platforms", "name at least one platform or account")
	return out, v.Err()
}

func checkMedia(v *httpapi.Validator, media []string) {
	v.Check(len(media) <= maxMedia, "media", fmt.Sprintf("must have at most %d entries", maxMedia))
	for _, m := range media {
		u, err := url.Parse(m)
		v.Check(err == nil && len(m) <= maxURL && u.Host != "" && (u.Scheme == "https" || u.Scheme == "http"), "media",
			"must be absolute http or https URLs")
	}
}

// parseSchedule reads a scheduled_at, which must be in the future.
func parseSchedule(v *httpapi.Validator, s *string) *time.Time {
	if s == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339, *s)
	if err != nil {
		v.Check(false, "scheduled_at", "must be an RFC 3339 timestamp")
		return nil
	}
	v.Check(t.After(time.Now()), "scheduled_at", "must be in the future")
	t = t.UTC()
	return &t
}

func checkText(v *httpapi.Validator, title, content *string) {
	if title != nil {
		v.Check(strings.TrimSpace(*title) != "", "title", "must not be empty")
		v.Check(utf8.RuneCountInString(*title) <= maxTitle, "title", fmt.Sprintf("must be at most %d characters", maxTitle))
	}
	if content != nil {
		v.Check(utf8.RuneCountInString(*content) <= maxContent, "content", fmt.Sprintf("must be at most %d characters", maxContent))
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func (sv *Service) createPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req CreateRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	switch t := deref(req.Type); t {
	case "ai":
		return sv.submitGenerate(w, r, s, &req)
	case "", "manual":
	default:
		return httpapi.Invalid("type", "must be manual or ai")
	}
	if req.Title == nil {
		return httpapi.BadRequest(`missing required field "title"`)
	}
	var v httpapi.Validator
	req.GenerateFields.forbid(&v)
	checkText(&v, req.Title, req.Content)
	media := deref(req.Media)
	checkMedia(&v, media)
	at := parseSchedule(&v, req.ScheduledAt)
	p := Post{Title: strings.TrimSpace(*req.Title), Content: deref(req.Content), AccountIDs: deref(req.AccountIDs), Media: media,
		Status: StatusDraft, ScheduledAt: at}
	if at != nil {
		p.Status = StatusScheduled
	}
	p, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Post, error) {
		platforms, err := checkTargets(r.Context(), tx, &v, deref(req.Platforms), p.AccountIDs)
		if err != nil {
			return Post{}, err
		}
		p.Platforms = platforms
		if p, err = insertPost(r.Context(), tx, normalise(p)); err != nil {
			return Post{}, err
		}
		return p, sv.enqueuePublish(r.Context(), tx, s, p)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, p)
}

// normalise gives a post empty lists instead of nil ones.
func normalise(p Post) Post {
	for _, l := range []*[]string{&p.Platforms, &p.AccountIDs, &p.Media} {
		if *l == nil {
			*l = []string{}
		}
	}
	return p
}

// lockPost reads a post for a change, locked until tx ends. The change is
// refused (409) while the post has a status among refused, with its message.
func lockPost(ctx context.Context, tx pgx.Tx, id int64, refused map[string]string) (postRow, error) {
	p, err := getPostRow(ctx, tx, id, true)
	if err != nil {
		return p, err
	}
	if msg, ok := refused[p.Status]; ok {
		return p, httpapi.Conflict(httpapi.CodeConflict, msg)
	}
	return p, nil
}

func (sv *Service) getPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	pid, err := httpapi.PathID(r, "id", errNoPost)
	if err != nil {
		return err
	}
	p, err := getPost(r.Context(), s.Reader(), pid)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, p)
}

func (sv *Service) listPosts(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	status := r.URL.Query().Get("status")
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Post, error) {
		if status != "" && !slices.Contains(statuses, status) {
			return nil, httpapi.Invalid("status", "must be one of "+strings.Join(statuses, ", "))
		}
		return listPosts(r.Context(), s.Reader(), status, before, limit)
	}, func(p Post) string { return httpapi.IDText(p.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

func (sv *Service) patchPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	pid, err := httpapi.PathID(r, "id", errNoPost)
	if err != nil {
		return err
	}
	var req PatchRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	checkText(&v, req.Title, req.Content)
	if req.Media != nil {
		checkMedia(&v, *req.Media)
	}
	at := parseSchedule(&v, req.ScheduledAt.Value)
	if err := v.Err(); err != nil {
		return err
	}
	p, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Post, error) {
		p, err := patchPost(r.Context(), tx, &v, pid, &req, at)
		if err != nil || at == nil {
			return p, err
		}
		return p, sv.enqueuePublish(r.Context(), tx, s, p) // a new schedule
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, p)
}

// patchPost changes a post as req asks (at is its scheduled_at, parsed),
// unless it is being, or has been, published.
func patchPost(ctx context.Context, tx pgx.Tx, v *httpapi.Validator, id int64, req *PatchRequest, at *time.Time) (Post, error) {
	p, err := lockPost(ctx, tx, id, map[string]string{
		StatusPublishing: "the post is being published; it cannot change now",
		StatusPublished:  "the post is published; it cannot change",
	})
	if err != nil {
		return Post{}, err
	}
	if req.Title != nil {
		p.Title = strings.TrimSpace(*req.Title)
	}
	if req.Content != nil {
		p.Content = *req.Content
	}
	if req.Media != nil {
		p.Media = *req.Media
	}
	if req.Platforms != nil || req.AccountIDs != nil {
		platforms := p.Platforms
		if req.Platforms != nil {
			platforms = *req.Platforms
		}
		if req.AccountIDs != nil {
			p.AccountIDs = *req.AccountIDs
		}
		if p.Platforms, err = checkTargets(ctx, tx, v, platforms, p.AccountIDs); err != nil {
			return Post{}, err
		}
	}
	if req.ScheduledAt.Set {
		p.ScheduledAt = at
		switch {
		case at != nil:
			p.Status = StatusScheduled
		case p.Status == StatusScheduled:
			p.Status = StatusDraft
		}
	}
	p.Post = normalise(p.Post)
	return updatePost(ctx, tx, p)
}

func (sv *Service) deletePost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	pid, err := httpapi.PathID(r, "id", errNoPost)
	if err != nil {
		return err
	}
	if err := s.Tx(r.Context(), func(tx pgx.Tx) error { return deletePost(r.Context(), tx, pid) }); err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

// publish starts publishing a post now: 202 with the post, status
// publishing; the outcome is on the post (GET) when the status leaves
// publishing, and in the social_post.published or social_post.failed event.
func (sv *Service) publish(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	pid, err := httpapi.PathID(r, "id", errNoPost)
	if err != nil {
		return err
	}
	p, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Post, error) { return sv.startPublish(r.Context(), tx, s, pid) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, p)
}

// startPublish makes a post publishing (a new run) and enqueues its
// publish job, in tx.
func (sv *Service) startPublish(ctx context.Context, tx pgx.Tx, s *tenant.Scope, id int64) (Post, error) {
	p, err := lockPost(ctx, tx, id, map[string]string{
		StatusPublishing: "the post is already being published",
		StatusPublished:  "the post is already published",
	})
	if err != nil {
		return Post{}, err
	}
	p.Status = StatusPublishing
	p.run++
	post, err := updatePost(ctx, tx, p)
	if err != nil {
		return post, err
	}
	args := PublishArgs{ProjectID: s.Project.ID, PostID: post.ID}
	if s.Key != nil {
		args.KeyID, args.Test = s.Key.ID, s.Key.Test
	}
	_, err = sv.river.InsertTx(ctx, tx, args, nil)
	return post, err
}
