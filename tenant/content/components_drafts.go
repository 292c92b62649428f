package content

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// A component's draft is the whole component
// as it would be published: its name, slug and props are the project's
// default language, each entry of its translations one more language.
// Components have no status, so there is no unpublish.

// componentRef is a component's reference in the drafts and versions
// tables: its id, not its slug, so a draft may change the slug and a
// live rename keeps the component's draft and versions.
func componentRef(id int64) string { return strconv.FormatInt(id, 10) }

// componentItem is the components' versions routes.
var componentItem = drafts.Item{
	Type: drafts.Component,
	Ref: func(ctx context.Context, q tenant.Querier, r *http.Request, _ *tenant.Scope) (string, error) {
		c, err := getComponent(ctx, q, chi.URLParam(r, "slug"), isTx(q))
		return componentRef(c.ID), err
	},
	// View reads the component by the path's slug, the one Ref read (and
	// locked) in the same transaction.
	View: func(ctx context.Context, q tenant.Querier, r *http.Request, _ *tenant.Scope, _ string, _ json.RawMessage) (any, error) {
		c, err := getComponent(ctx, q, chi.URLParam(r, "slug"), false)
		if err != nil {
			return nil, err
		}
		return draftComponent(ctx, q, c)
	},
}

// draftComponent answers the draft view of the live component c: its
// draft where it has one (with its id and times), else c.
func draftComponent(ctx context.Context, q tenant.Querier, c Component) (Component, error) {
	var d Component
	ok, err := drafts.Load(ctx, q, drafts.Component, componentRef(c.ID), &d)
	if err != nil {
		return c, err
	}
	if ok {
		c = withComponentContent(c, d)
	}
	c.HasDraft = &ok
	return c, nil
}

// withComponentContent returns live with the content of d: everything a
// publish makes live.
func withComponentContent(live, d Component) Component {
	live.Name, live.Slug, live.Props, live.Translations = d.Name, d.Slug, d.Props, d.Translations
	if live.Props == nil {
		live.Props = json.RawMessage("{}")
	}
	if live.Translations == nil {
		live.Translations = map[string]json.RawMessage{}
	}
	return live
}

// sameComponentContent reports whether a and b would publish the same
// component (json.Marshal compacts the props and sorts the languages).
func sameComponentContent(a, b Component) bool {
	ja, _ := json.Marshal(withComponentContent(Component{}, a))
	jb, _ := json.Marshal(withComponentContent(Component{}, b))
	return bytes.Equal(ja, jb)
}

// mergeComponent returns live with the draft d's content in langs (nil:
// all): the default language is the name, slug and props, any language
// its translation (added, replaced, or removed when the draft has none).
func mergeComponent(live, d Component, langs []string, def string) Component {
	if langs == nil {
		return withComponentContent(live, d)
	}
	out := live
	if slices.Contains(langs, def) {
		out.Name, out.Slug, out.Props = d.Name, d.Slug, d.Props
	}
	tr := maps.Clone(live.Translations)
	if tr == nil {
		tr = map[string]json.RawMessage{}
	}
	for _, l := range langs {
		if t, ok := d.Translations[l]; ok {
			tr[l] = t
		} else {
			delete(tr, l)
		}
	}
	out.Translations = tr
	return out
}

// apply sets the fields req sends on c (req.check has passed).
func (req *ComponentRequest) apply(c *Component) {
	if req.Name != nil {
		c.Name = *req.Name
	}
	if req.Slug != nil {
		c.Slug = *req.Slug
	}
	if req.Props != nil {
		c.Props = *req.Props
	}
	if req.Translations != nil {
		c.Translations = *req.Translations
	}
}

// componentLangs are the languages a component write touches: the
// default one for its name, slug and props; for its translations, those
// it sends and those of prev (the translations it replaces) it drops.
func componentLangs(req *ComponentRequest, prev map[string]json.RawMessage, def string) []string {
	var langs []string
	if req.Name != nil || req.Slug != nil || req.Props != nil {
		langs = append(langs, def)
	}
	if req.Translations != nil {
		touched := maps.Clone(*req.Translations)
		for l := range prev {
			touched[l] = nil
		}
		for _, l := range slices.Sorted(maps.Keys(touched)) {
			if !slices.Contains(langs, l) {
				langs = append(langs, l)
			}
		}
	}
	return langs
}

// saveComponentDraft applies req to the draft of the live component c
// (its draft, else c) and saves it, answering the draft view. A slug
// another component has is only refused when the draft is published.
func saveComponentDraft(ctx context.Context, tx pgx.Tx, s *tenant.Scope, c Component, req *ComponentRequest, autosave bool) (Component, error) {
	d, err := draftComponent(ctx, tx, c)
	if err != nil {
		return d, err
	}
	langs := componentLangs(req, d.Translations, s.Project.DefaultLanguage)
	req.apply(&d)
	if err := drafts.Save(ctx, tx, s, drafts.Component, componentRef(c.ID), withComponentContent(Component{}, d), langs, autosave); err != nil {
		return d, err
	}
	t := true
	d.HasDraft = &t
	return d, nil
}

// publishComponent makes the component's draft live (in the languages
// the body names, else whole) in one transaction (publishComponentTx).
func (sv *Service) publishComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	langs, err := drafts.Languages(r)
	if err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Component, error) {
		c, err := getComponent(r.Context(), tx, chi.URLParam(r, "slug"), true)
		if err != nil {
			return c, err
		}
		return sv.publishComponentTx(r.Context(), tx, s, c, langs, nil)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// publishComponentTx publishes the component c (read and locked in tx):
// its draft in langs (nil: whole) goes live; a publish version and
// content.published (naming release); free, like component writes. A
// draft whose slug another component has is a 409.
func (sv *Service) publishComponentTx(ctx context.Context, tx pgx.Tx, s *tenant.Scope, c Component, langs []string, release *int64) (Component, error) {
	ref := componentRef(c.ID)
	var d Component
	has, err := drafts.Load(ctx, tx, drafts.Component, ref, &d)
	if err != nil {
		return c, err
	}
	if has {
		next := mergeComponent(c, d, langs, s.Project.DefaultLanguage)
		if !sameComponentContent(next, c) {
			tr, _ := json.Marshal(next.Translations)
			if c, err = updateComponent(ctx, tx, c.Slug, &next.Name, &next.Slug, next.Props, tr); err != nil {
				return c, err
			}
		}
		if sameComponentContent(c, d) {
			if err := drafts.Drop(ctx, tx, drafts.Component, ref); err != nil {
				return c, err
			}
			has = false
		}
	}
	c.HasDraft = &has
	if _, err := drafts.Published(ctx, tx, s, drafts.Component, ref, withComponentContent(Component{}, c), langs); err != nil {
		return c, err
	}
	return c, sv.events.Emit(ctx, tx, s, drafts.TopicPublished, drafts.PublishedEvent{Type: drafts.Component, ID: ref, Languages: langs, ReleaseID: release})
}

// componentPublisher publishes components for releases; a release names
// a component by its slug and keeps its id.
func (sv *Service) componentPublisher() drafts.Publisher {
	return drafts.Publisher{
		Scope: "content:write",
		Resolve: func(ctx context.Context, q tenant.Querier, id string) (string, error) {
			c, err := getComponent(ctx, q, id, isTx(q))
			return componentRef(c.ID), err
		},
		Publish: func(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, langs []string, release *int64) error {
			slug, err := componentSlug(ctx, tx, ref)
			if err != nil {
				return err
			}
			c, err := getComponent(ctx, tx, slug, true)
			if err != nil {
				return err
			}
			_, err = sv.publishComponentTx(ctx, tx, s, c, langs, release)
			return err
		},
	}
}
