package content

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// A gallery's draft is its name and items as
// they would be published. Galleries have no languages and no status:
// a publish is whole, and there is no unpublish. A gallery's reference
// is its slug (galleries have no other key); the slug is changed by live
// writes only, which take the draft and versions along (updateGallery).

// galleryItem is the galleries' versions routes; every answer is wrapped
// as the other gallery routes answer.
var galleryItem = drafts.Item{
	Type: drafts.Gallery,
	Ref: func(ctx context.Context, q tenant.Querier, r *http.Request, _ *tenant.Scope) (string, error) {
		if tx, ok := q.(pgx.Tx); ok {
			g, err := lockGallery(ctx, tx, chi.URLParam(r, "slug"))
			return g.Slug, err
		}
		g, err := GetGallery(ctx, q, chi.URLParam(r, "slug"))
		return g.Slug, err
	},
	View: func(ctx context.Context, q tenant.Querier, _ *http.Request, _ *tenant.Scope, ref string, _ json.RawMessage) (any, error) {
		g, err := GetGallery(ctx, q, ref)
		if err != nil {
			return nil, err
		}
		g, err = draftGallery(ctx, q, g)
		return wrap{g}, err
	},
}

// draftGallery answers the draft view of the live gallery g: its draft
// where it has one (with its slug and times), else g.
func draftGallery(ctx context.Context, q tenant.Querier, g Gallery) (Gallery, error) {
	var d Gallery
	ok, err := drafts.Load(ctx, q, drafts.Gallery, g.Slug, &d)
	if err != nil {
		return g, err
	}
	if ok {
		g = withGalleryContent(g, d)
	}
	g.HasDraft = &ok
	return g, nil
}

// withGalleryContent returns live with the content of d: everything a
// publish makes live.
func withGalleryContent(live, d Gallery) Gallery {
	live.Name, live.Items = d.Name, d.Items
	if live.Items == nil {
		live.Items = []GalleryItem{}
	}
	live.ItemsCount = len(live.Items)
	return live
}

// sameGalleryContent reports whether a and b would publish the same
// gallery.
func sameGalleryContent(a, b Gallery) bool {
	ja, _ := json.Marshal(withGalleryContent(Gallery{}, a))
	jb, _ := json.Marshal(withGalleryContent(Gallery{}, b))
	return bytes.Equal(ja, jb)
}

// saveGalleryDraft sets name and items (those not nil) on the draft of
// the live gallery g (its draft, else g) and saves it, answering the
// draft view.
func saveGalleryDraft(ctx context.Context, tx pgx.Tx, s *tenant.Scope, g Gallery, name *string, items []GalleryItem, autosave bool) (Gallery, error) {
	d, err := draftGallery(ctx, tx, g)
	if err != nil {
		return d, err
	}
	if name != nil {
		d.Name = *name
	}
	if items != nil {
		d.Items = items
	}
	d.ItemsCount = len(d.Items)
	if err := drafts.Save(ctx, tx, s, drafts.Gallery, g.Slug, withGalleryContent(Gallery{}, d), nil, autosave); err != nil {
		return d, err
	}
	t := true
	d.HasDraft = &t
	return d, nil
}

// publishGallery makes the gallery's draft live in one transaction
// (publishGalleryTx).
func (sv *Service) publishGallery(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	langs, err := drafts.Languages(r)
	if err != nil {
		return err
	}
	// A gallery has no languages; publishing all of it when some were
	// named would be more than was asked.
	if langs != nil {
		return httpapi.Invalid("languages", "galleries have no languages: omit languages to publish the whole draft")
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Gallery, error) {
		g, err := lockGallery(r.Context(), tx, chi.URLParam(r, "slug"))
		if err != nil {
			return g, err
		}
		return sv.publishGalleryTx(r.Context(), tx, s, g, release0)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, wrap{out})
}

// release0 is no release.
var release0 *int64

// publishGalleryTx publishes the gallery g (locked in tx): its draft goes
// live; a publish version and content.published (naming release); free,
// like gallery writes.
func (sv *Service) publishGalleryTx(ctx context.Context, tx pgx.Tx, s *tenant.Scope, g Gallery, release *int64) (Gallery, error) {
	var d Gallery
	has, err := drafts.Load(ctx, tx, drafts.Gallery, g.Slug, &d)
	if err != nil {
		return g, err
	}
	if has {
		if !sameGalleryContent(d, g) {
			items, _ := json.Marshal(withGalleryContent(g, d).Items)
			if g, err = updateGallery(ctx, tx, g.Slug, &d.Name, nil, items); err != nil {
				return g, err
			}
		}
		// The whole draft is live now.
		if err := drafts.Drop(ctx, tx, drafts.Gallery, g.Slug); err != nil {
			return g, err
		}
	}
	g.HasDraft = new(bool)
	if _, err := drafts.Published(ctx, tx, s, drafts.Gallery, g.Slug, withGalleryContent(Gallery{}, g), nil); err != nil {
		return g, err
	}
	return g, sv.events.Emit(ctx, tx, s, drafts.TopicPublished, drafts.PublishedEvent{Type: drafts.Gallery, ID: g.Slug, ReleaseID: release})
}

// galleryPublisher publishes galleries for releases (whole: a gallery
// has no languages, so a release's languages for one are ignored).
func (sv *Service) galleryPublisher() drafts.Publisher {
	lock := func(ctx context.Context, q tenant.Querier, slug string) (Gallery, error) {
		if tx, ok := q.(pgx.Tx); ok {
			return lockGallery(ctx, tx, slug)
		}
		return GetGallery(ctx, q, slug)
	}
	return drafts.Publisher{
		Scope: "galleries:write",
		Resolve: func(ctx context.Context, q tenant.Querier, id string) (string, error) {
			g, err := lock(ctx, q, id)
			return g.Slug, err
		},
		Publish: func(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, _ []string, release *int64) error {
			g, err := lockGallery(ctx, tx, ref)
			if err != nil {
				return err
			}
			_, err = sv.publishGalleryTx(ctx, tx, s, g, release)
			return err
		},
	}
}
