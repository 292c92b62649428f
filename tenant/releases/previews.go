package releases

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/id"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// Preview links: POST /previews makes a token (shown once) that lets the
// public surface serve the drafts of a release's items, or of items of
// its own, to the requests that carry it (drafts.Preview), until it
// expires (at most 7 days) or is revoked (DELETE /previews/{id}).

// Limits of preview links.
const (
	MaxPreviewTTL     = 7 * 24 * time.Hour
	DefaultPreviewTTL = 24 * time.Hour
)

// Preview is the preview link resource; Token is sent once, by POST.
type Preview struct {
	ID        string     `json:"id"`
	Token     string     `json:"token,omitempty"`
	ReleaseID *int64     `json:"release_id"`
	Items     []Item     `json:"items"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
	CreatedAt time.Time  `json:"created_at"`
}

// PreviewRequest is the body of POST /previews: a release, or items.
type PreviewRequest struct {
	ReleaseID *int64        `json:"release_id"`
	Items     []ItemRequest `json:"items"`
	// ExpiresIn is the link's life in seconds (default a day, at most 7).
	ExpiresIn *int64 `json:"expires_in"`
}

var errNoPreview = httpapi.NotFound("no such preview link")

func (sv *Service) createPreview(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req PreviewRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	v.Check((req.ReleaseID == nil) != (req.Items == nil), "release_id", "send either release_id or items")
	v.Check(req.Items == nil || (len(req.Items) >= 1 && len(req.Items) <= MaxItems), "items", fmt.Sprintf("must hold 1 to %d items", MaxItems))
	ttl := DefaultPreviewTTL
	if req.ExpiresIn != nil {
		v.Check(*req.ExpiresIn >= 60 && *req.ExpiresIn <= int64(MaxPreviewTTL/time.Second), "expires_in",
			fmt.Sprintf("must be 60 to %d seconds (7 days)", int64(MaxPreviewTTL/time.Second)))
		ttl = time.Duration(*req.ExpiresIn) * time.Second
	}
	for i, it := range req.Items {
		if it.Type == nil {
			return httpapi.BadRequest(fmt.Sprintf("missing required field \"type\" in items[%d]", i))
		}
		_, ok := sv.pubs[*it.Type]
		v.Check(ok, fmt.Sprintf("items[%d].type", i), "must be one of "+fmt.Sprint(sv.types()))
		v.Check(it.Languages == nil, fmt.Sprintf("items[%d].languages", i), "a preview shows an item's whole draft: omit languages")
	}
	if err := v.Err(); err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Preview, error) {
		p := Preview{ID: id.New("pvw_"), ReleaseID: req.ReleaseID, Items: []Item{}}
		if req.ReleaseID != nil {
			rel, err := findRelease(r.Context(), tx, *req.ReleaseID, false)
			if err != nil {
				return p, httpapi.Invalid("release_id", "this project has no such release")
			}
			p.Items = rel.Items
		} else {
			var v httpapi.Validator
			for i, it := range req.Items {
				ref := ""
				if it.ID != nil {
					ref = *it.ID
				}
				got, err := sv.pubs[*it.Type].Resolve(r.Context(), tx, ref)
				if err != nil {
					if httpapi.AsError(err).Status == http.StatusNotFound {
						v.Check(false, fmt.Sprintf("items[%d].id", i), fmt.Sprintf("this project has no %s %q", *it.Type, ref))
						continue
					}
					return p, err
				}
				p.Items = append(p.Items, Item{Type: *it.Type, ID: got})
			}
			if err := v.Err(); err != nil {
				return p, err
			}
		}
		token, hash := drafts.NewToken()
		var items []byte
		if req.ReleaseID == nil {
			items, _ = json.Marshal(p.Items)
		} else {
			items = []byte("[]") // the release's items, read when the link is used
		}
		err := insertPreview(r.Context(), tx, &p, hash, items, ttl, drafts.Actor(s))
		p.Token = token
		p.ExpiresAt, p.CreatedAt = p.ExpiresAt.UTC(), p.CreatedAt.UTC()
		return p, err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, out)
}

func (sv *Service) listPreviews(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	list, err := httpapi.ListOf(r, httpapi.CursorText, func(before string, limit int) ([]Preview, error) {
		return listPreviews(r.Context(), s.Reader(), before, limit)
	}, func(p Preview) string { return p.ID })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

// revoke ends a preview link at once (204; 404 when there is none).
func (sv *Service) revoke(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	err := s.Tx(r.Context(), func(tx pgx.Tx) error {
		return revokePreview(r.Context(), tx, chi.URLParam(r, "id"))
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}
