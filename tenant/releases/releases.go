// Package releases is the content workflow's releases: items of any type
// with drafts (pages, components, content keys, galleries, the brand,
// blog posts) published together, in one transaction, by POST
// /releases/{id}/publish or by a River job at the release's publish_at
// (tenant/schedule: nothing visits a project unless one of its releases
// is due). A release that cannot publish (an item deleted, a draft no
// longer valid) publishes nothing and says why.
//
//	pending   → published  POST /publish
//	scheduled → published  its job at publish_at (or POST /publish before)
//	pending, scheduled → failed     its job could not publish it (error)
//	pending, scheduled → cancelled  POST /cancel
package releases

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
	"github.com/plinth-dev/plinth/tenant/schedule"
)

// Release statuses.
const (
	StatusPending   = "pending"
	StatusScheduled = "scheduled"
	StatusPublished = "published"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Limits of a release.
const (
	MaxItems   = 500
	MaxNameLen = 255
	// MaxAhead is how far ahead publish_at may be.
	MaxAhead = 366 * 24 * time.Hour
)

// Item is one item of a release: its type, its id (the reference the
// drafts table has: a page's, component's or post's numeric id, a
// gallery's slug, a content key, "" for the brand) and the languages to
// publish (null: the whole draft).
type Item struct {
	Type      string   `json:"type"`
	ID        string   `json:"id"`
	Languages []string `json:"languages"`
}

// Release is the release resource.
type Release struct {
	ID          int64      `json:"id"`
	Name        string     `json:"name"`
	Status      string     `json:"status"`
	Items       []Item     `json:"items"`
	PublishAt   *time.Time `json:"publish_at"`
	PublishedAt *time.Time `json:"published_at"`
	// Error says why the release could not publish (its last attempt).
	Error     *string   `json:"error"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Deps is what the pillar is built with.
type Deps struct {
	Queue *queue.Client
	// Publishers publish each type of item (content.Service.Publishers,
	// blog.Service.Publishers).
	Publishers drafts.Publishers
}

// Service is the releases pillar.
type Service struct {
	tenant.Base
	pubs      drafts.Publishers
	scheduled *schedule.Schedule[publishRelease]
}

// publishRelease names the kind of the job that publishes a release at
// its time.
type publishRelease struct{}

func (publishRelease) Kind() string { return "release.publish_scheduled" }

// PublishScheduledArgs is the job that publishes a scheduled release.
type PublishScheduledArgs = schedule.Args[publishRelease]

// New builds the pillar.
func New(d Deps) *Service {
	sv := &Service{pubs: d.Publishers}
	sv.scheduled = &schedule.Schedule[publishRelease]{Queue: d.Queue, ScheduledSQL: scheduledSQL,
		Claim: claimScheduled, Claimed: sv.publishClaimed, Early: schedule.EarlyForRiver}
	return sv
}

// Routes mounts the releases: content:read for GET, content:write for the
// rest; publishing also needs the write scope of each item's pillar.
func (sv *Service) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("content"))
		r.Get("/releases", tenant.Handle(sv.list))
		r.Post("/releases", tenant.Handle(sv.create))
		r.Get("/releases/{id}", tenant.Handle(sv.get))
		r.Post("/releases/{id}/publish", tenant.Handle(sv.publish))
		r.Post("/releases/{id}/cancel", tenant.Handle(sv.cancel))
		r.Get("/previews", tenant.Handle(sv.listPreviews))
		r.Post("/previews", tenant.Handle(sv.createPreview))
		r.Delete("/previews/{id}", tenant.Handle(sv.revoke))
	})
}

// Workers adds the worker of scheduled releases.
func (sv *Service) Workers(w *river.Workers) { sv.scheduled.AddWorker(w) }

// EnqueueScheduled inserts the job of every scheduled release that has
// none (a backfill; running it again inserts nothing).
func (sv *Service) EnqueueScheduled(ctx context.Context, s *tenant.Scope) (int, error) {
	return sv.scheduled.EnqueueAll(ctx, s)
}

var errNoRelease = httpapi.NotFound("no such release")

// CreateRequest is the body of POST /releases.
type CreateRequest struct {
	Name      *string       `json:"name" required:"true"`
	Items     []ItemRequest `json:"items" required:"true"`
	PublishAt *time.Time    `json:"publish_at"`
}

// ItemRequest is one item of CreateRequest; id is the item's id in the
// API (a page's id or slug, a post's id or slug, …), resolved to its
// reference.
type ItemRequest struct {
	Type      *string   `json:"type" required:"true"`
	ID        *string   `json:"id"`
	Languages *[]string `json:"languages"`
}

// check validates the body: every invalid field in one 422.
func (req *CreateRequest) check(sv *Service, s *tenant.Scope, now time.Time) error {
	var v httpapi.Validator
	name := *req.Name
	v.Check(strings.TrimSpace(name) != "" && utf8.RuneCountInString(name) <= MaxNameLen, "name", fmt.Sprintf("must be 1 to %d characters", MaxNameLen))
	v.Check(len(req.Items) >= 1 && len(req.Items) <= MaxItems, "items", fmt.Sprintf("must hold 1 to %d items", MaxItems))
	for i, it := range req.Items {
		field := fmt.Sprintf("items[%d]", i)
		p, ok := sv.pubs[*it.Type]
		if !ok {
			v.Check(false, field+".type", "must be one of "+strings.Join(sv.types(), ", "))
			continue
		}
		if !s.Allows(p.Scope) {
			v.Check(false, field+".type", "publishing a "+*it.Type+" needs the scope "+p.Scope+", which this key does not hold")
		}
		v.Check(it.ID != nil || *it.Type == drafts.Brand, field+".id", "is required (the brand alone has none)")
		if it.Languages != nil {
			if _, err := drafts.CheckLanguages(field+".languages", *it.Languages); err != nil {
				var f *httpapi.Failure
				if errors.As(err, &f) {
					for k, msgs := range f.Fields {
						for _, m := range msgs {
							v.Check(false, k, m)
						}
					}
				}
			}
		}
	}
	if req.PublishAt != nil {
		v.Check(req.PublishAt.After(now) && req.PublishAt.Before(now.Add(MaxAhead)), "publish_at", "must be in the future, within a year")
	}
	return v.Err()
}

// types are the item types, in a stable order.
func (sv *Service) types() []string {
	var out []string
	for _, t := range []string{drafts.Page, drafts.Component, drafts.ContentKey, drafts.Gallery, drafts.Brand, drafts.Post} {
		if _, ok := sv.pubs[t]; ok {
			out = append(out, t)
		}
	}
	return out
}

func (sv *Service) create(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req CreateRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	for i, it := range req.Items {
		if it.Type == nil {
			return httpapi.BadRequest(fmt.Sprintf("missing required field \"type\" in items[%d]", i))
		}
	}
	if err := req.check(sv, s, time.Now()); err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Release, error) {
		// Each item resolved in this project: another project's item, or
		// one that does not exist, is named in a 422.
		items := make([]Item, len(req.Items))
		var v httpapi.Validator
		seen := map[[2]string]bool{}
		for i, it := range req.Items {
			id := ""
			if it.ID != nil {
				id = *it.ID
			}
			ref, err := sv.pubs[*it.Type].Resolve(r.Context(), tx, id)
			if err != nil {
				if e := httpapi.AsError(err); e.Status == http.StatusNotFound {
					v.Check(false, fmt.Sprintf("items[%d].id", i), fmt.Sprintf("this project has no %s %q", *it.Type, id))
					continue
				}
				return Release{}, err
			}
			k := [2]string{*it.Type, ref}
			v.Check(!seen[k], fmt.Sprintf("items[%d]", i), "names an item listed before")
			seen[k] = true
			items[i] = Item{Type: *it.Type, ID: ref}
			if it.Languages != nil {
				items[i].Languages = *it.Languages
			}
		}
		if err := v.Err(); err != nil {
			return Release{}, err
		}
		status := StatusPending
		if req.PublishAt != nil {
			status = StatusScheduled
		}
		rel, err := insertRelease(r.Context(), tx, strings.TrimSpace(*req.Name), items, status, req.PublishAt, drafts.Actor(s))
		if err != nil || req.PublishAt == nil {
			return rel, err
		}
		return rel, sv.scheduled.Enqueue(r.Context(), tx, s, rel.ID, *rel.PublishAt)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, out)
}

func (sv *Service) get(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", errNoRelease)
	if err != nil {
		return err
	}
	rel, err := findRelease(r.Context(), s.Reader(), id, false)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, rel)
}

func (sv *Service) list(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	status := r.URL.Query().Get("status")
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Release, error) {
		switch status {
		case "", StatusPending, StatusScheduled, StatusPublished, StatusFailed, StatusCancelled:
		default:
			return nil, httpapi.Invalid("status", "must be pending, scheduled, published, failed or cancelled")
		}
		return listReleases(r.Context(), s.Reader(), before, status, limit)
	}, func(rel Release) string { return httpapi.IDText(rel.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

// publish publishes a pending or scheduled release now, every item in one
// transaction. When an item cannot be published nothing is, the release
// keeps its status with the reason in error, and the answer is the
// item's failure (409 for an item gone), naming it.
func (sv *Service) publish(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", errNoRelease)
	if err != nil {
		return err
	}
	var failed *itemFailure
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Release, error) {
		rel, err := findRelease(r.Context(), tx, id, true)
		if err != nil {
			return rel, err
		}
		if rel.Status != StatusPending && rel.Status != StatusScheduled {
			return rel, httpapi.Conflict(httpapi.CodeConflict, "the release is "+rel.Status+"; only a pending or scheduled release publishes")
		}
		for i, it := range rel.Items {
			if p := sv.pubs[it.Type]; !s.Allows(p.Scope) {
				return rel, httpapi.Fail(httpapi.ErrForbidden, fmt.Sprintf("items[%d] is a %s: publishing it needs the scope %s", i, it.Type, p.Scope))
			}
		}
		if failed, err = sv.publishItems(r.Context(), tx, s, rel); err != nil || failed != nil {
			return rel, cmpErr(err, failed)
		}
		return markPublished(r.Context(), tx, id)
	})
	if failed != nil {
		// Nothing was published; the release says why.
		if err := s.Tx(r.Context(), func(tx pgx.Tx) error { return setError(r.Context(), tx, id, failed.Error(), "") }); err != nil {
			return err
		}
		return failed.apiError()
	}
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// cmpErr is err, else failed as an error.
func cmpErr(err error, failed *itemFailure) error {
	if err != nil {
		return err
	}
	return failed
}

func (sv *Service) cancel(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", errNoRelease)
	if err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Release, error) {
		rel, err := findRelease(r.Context(), tx, id, true)
		if err != nil {
			return rel, err
		}
		if rel.Status != StatusPending && rel.Status != StatusScheduled {
			return rel, httpapi.Conflict(httpapi.CodeConflict, "the release is "+rel.Status+"; only a pending or scheduled release is cancelled")
		}
		// A scheduled release's job finds it cancelled and does nothing.
		return setStatus(r.Context(), tx, id, StatusCancelled)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// itemFailure is why one item of a release could not publish.
type itemFailure struct {
	index int
	item  Item
	err   *httpapi.Error
}

func (f *itemFailure) Error() string {
	what := f.item.Type
	if f.item.ID != "" {
		what += " " + f.item.ID
	}
	msg := f.err.Detail
	for field, msgs := range f.err.Errors {
		msg += fmt.Sprintf("; %s %s", field, strings.Join(msgs, ", "))
	}
	return fmt.Sprintf("items[%d] (%s) cannot be published: %s", f.index, what, msg)
}

// apiError is the answer of a manual publish that failed: the item's own
// failure (a 404 of an item gone is a 409: the release exists), its
// detail naming the item.
func (f *itemFailure) apiError() *httpapi.Error {
	status, code := f.err.Status, f.err.Code
	if status == http.StatusNotFound {
		status, code = http.StatusConflict, httpapi.CodeConflict
	}
	e := httpapi.NewError(status, code, f.Error())
	e.Extra = f.err.Extra
	return e
}

// publishItems publishes every item of rel in tx, in order, each naming
// the release. It returns the first item that failed for a reason of the
// item's (4xx; tx must then be rolled back), or an error of the server.
func (sv *Service) publishItems(ctx context.Context, tx pgx.Tx, s *tenant.Scope, rel Release) (*itemFailure, error) {
	for i, it := range rel.Items {
		p, ok := sv.pubs[it.Type]
		if !ok {
			return nil, fmt.Errorf("release %d: no publisher of %s", rel.ID, it.Type)
		}
		if err := p.Publish(ctx, tx, s, it.ID, it.Languages, &rel.ID); err != nil {
			if e := httpapi.AsError(err); e.Status < 500 {
				return &itemFailure{index: i, item: it, err: e}, nil
			}
			return nil, err
		}
	}
	return nil, nil
}

// publishClaimed publishes the scheduled release id its job claimed, in
// the claim's transaction: every item in a savepoint, so that a release
// that cannot publish publishes nothing and is marked failed with why.
func (sv *Service) publishClaimed(ctx context.Context, tx pgx.Tx, s *tenant.Scope, id int64) error {
	rel, err := findRelease(ctx, tx, id, true)
	if err != nil {
		return err
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	failed, err := sv.publishItems(ctx, sp, s, rel)
	if err != nil {
		return errors.Join(err, sp.Rollback(ctx))
	}
	if failed != nil {
		if err := sp.Rollback(ctx); err != nil {
			return err
		}
		return setError(ctx, tx, id, failed.Error(), StatusFailed)
	}
	if err := sp.Commit(ctx); err != nil {
		return err
	}
	_, err = markPublished(ctx, tx, id)
	return err
}
