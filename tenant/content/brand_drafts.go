package content

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// The brand's draft is its name, tagline,
// description, voice, audience, colours and fonts as they would be
// published. The logo is not drafted: POST /brand/logo changes what is
// live. The brand has no languages and no status: a publish is whole,
// and there is no unpublish.

// brandRef is the brand's reference in the drafts and versions tables:
// there is one brand per project.
const brandRef = ""

// brandItem is the brand's versions routes.
var brandItem = drafts.Item{
	Type: drafts.Brand,
	Ref: func(ctx context.Context, q tenant.Querier, _ *http.Request, _ *tenant.Scope) (string, error) {
		if tx, ok := q.(pgx.Tx); ok {
			_, err := lockBrand(ctx, tx)
			return brandRef, err
		}
		return brandRef, nil
	},
	View: func(ctx context.Context, q tenant.Querier, _ *http.Request, _ *tenant.Scope, _ string, _ json.RawMessage) (any, error) {
		b, err := getBrand(ctx, q)
		if err != nil {
			return nil, err
		}
		return draftBrand(ctx, q, b)
	},
}

// draftBrand answers the draft view of the live brand b: its draft where
// it has one (with the live logo and time), else b.
func draftBrand(ctx context.Context, q tenant.Querier, b Brand) (Brand, error) {
	var d Brand
	ok, err := drafts.Load(ctx, q, drafts.Brand, brandRef, &d)
	if err != nil {
		return b, err
	}
	if ok {
		b = withBrandContent(b, d)
	}
	b.HasDraft = &ok
	return b, nil
}

// withBrandContent returns live with the content of d: everything a
// publish makes live.
func withBrandContent(live, d Brand) Brand {
	live.Name, live.Tagline, live.Description, live.Voice, live.Audience = d.Name, d.Tagline, d.Description, d.Voice, d.Audience
	live.Colors, live.Fonts = d.Colors, d.Fonts
	if live.Colors == nil {
		live.Colors = map[string]string{}
	}
	if live.Fonts == nil {
		live.Fonts = map[string]string{}
	}
	return live
}

// sameBrandContent reports whether a and b would publish the same brand.
func sameBrandContent(a, b Brand) bool {
	ja, _ := json.Marshal(withBrandContent(Brand{}, a))
	jb, _ := json.Marshal(withBrandContent(Brand{}, b))
	return bytes.Equal(ja, jb)
}

// apply sets the fields req sends on b (req.check has passed).
func (req *BrandRequest) apply(b *Brand) {
	if req.Name != nil {
		b.Name = *req.Name
	}
	if req.Tagline != nil {
		b.Tagline = *req.Tagline
	}
	if req.Description != nil {
		b.Description = *req.Description
	}
	if req.Voice != nil {
		b.Voice = *req.Voice
	}
	if req.Audience != nil {
		b.Audience = *req.Audience
	}
	if req.Colors != nil {
		b.Colors = *req.Colors
	}
	if req.Fonts != nil {
		b.Fonts = *req.Fonts
	}
}

// saveBrandDraft applies req to the draft of the live brand b (its
// draft, else b) and saves it, answering the draft view.
func saveBrandDraft(ctx context.Context, tx pgx.Tx, s *tenant.Scope, b Brand, req *BrandRequest, autosave bool) (Brand, error) {
	d, err := draftBrand(ctx, tx, b)
	if err != nil {
		return d, err
	}
	req.apply(&d)
	if err := drafts.Save(ctx, tx, s, drafts.Brand, brandRef, withBrandContent(Brand{}, d), nil, autosave); err != nil {
		return d, err
	}
	t := true
	d.HasDraft = &t
	return d, nil
}

// publishBrand makes the brand's draft live in one transaction
// (publishBrandTx).
func (sv *Service) publishBrand(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	langs, err := drafts.Languages(r)
	if err != nil {
		return err
	}
	// The brand has no languages; publishing all of it when some were
	// named would be more than was asked.
	if langs != nil {
		return httpapi.Invalid("languages", "the brand has no languages: omit languages to publish the whole draft")
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Brand, error) {
		return sv.publishBrandTx(r.Context(), tx, s, nil)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// publishBrandTx publishes the brand's draft in tx: a publish version and
// content.published (naming release); free, like brand writes.
func (sv *Service) publishBrandTx(ctx context.Context, tx pgx.Tx, s *tenant.Scope, release *int64) (Brand, error) {
	b, err := lockBrand(ctx, tx)
	if err != nil {
		return b, err
	}
	var d Brand
	has, err := drafts.Load(ctx, tx, drafts.Brand, brandRef, &d)
	if err != nil {
		return b, err
	}
	if has {
		if !sameBrandContent(d, b) {
			next := withBrandContent(b, d)
			colors, _ := json.Marshal(next.Colors)
			fonts, _ := json.Marshal(next.Fonts)
			req := BrandRequest{Name: &next.Name, Tagline: &next.Tagline, Description: &next.Description, Voice: &next.Voice, Audience: &next.Audience}
			if b, err = updateBrand(ctx, tx, req, colors, fonts); err != nil {
				return b, err
			}
		}
		// The whole draft is live now.
		if err := drafts.Drop(ctx, tx, drafts.Brand, brandRef); err != nil {
			return b, err
		}
	}
	b.HasDraft = new(bool)
	if _, err := drafts.Published(ctx, tx, s, drafts.Brand, brandRef, withBrandContent(Brand{}, b), nil); err != nil {
		return b, err
	}
	return b, sv.events.Emit(ctx, tx, s, drafts.TopicPublished, drafts.PublishedEvent{Type: drafts.Brand, ID: brandRef, ReleaseID: release})
}

// brandPublisher publishes the brand for releases (named by "" or no id).
func (sv *Service) brandPublisher() drafts.Publisher {
	return drafts.Publisher{
		Scope: "brand:write",
		Resolve: func(_ context.Context, _ tenant.Querier, id string) (string, error) {
			if id != "" {
				return "", httpapi.NotFound("the brand has no id: omit it")
			}
			return brandRef, nil
		},
		Publish: func(ctx context.Context, tx pgx.Tx, s *tenant.Scope, _ string, _ []string, release *int64) error {
			_, err := sv.publishBrandTx(ctx, tx, s, release)
			return err
		},
	}
}
