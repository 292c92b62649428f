package content

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// A page's draft (docs/content-workflow.md) is the whole page as it
// would be published; its slug, path, title, sections and SEO are the
// project's default language, each translation one more language.

// pageRef is a page's reference in the drafts and versions tables.
func pageRef(id int64) string { return strconv.FormatInt(id, 10) }

// pageItem is the pages' versions routes.
var pageItem = drafts.Item{
	Type: drafts.Page,
	Ref: func(ctx context.Context, q tenant.Querier, r *http.Request, _ *tenant.Scope) (string, error) {
		p, err := findPage(ctx, q, chi.URLParam(r, "id_or_slug"), isTx(q))
		return pageRef(p.ID), err
	},
	View: func(ctx context.Context, q tenant.Querier, r *http.Request, _ *tenant.Scope, ref string, _ json.RawMessage) (any, error) {
		p, err := findPage(ctx, q, ref, false)
		if err != nil {
			return nil, err
		}
		return draftPage(ctx, q, p)
	},
}

// isTx reports whether q is a transaction (whose reads may lock).
func isTx(q tenant.Querier) bool {
	_, ok := q.(pgx.Tx)
	return ok
}

// hasDraft answers the has_draft of one item: whether the item ref of
// type typ has a draft.
func hasDraft(ctx context.Context, q tenant.Querier, typ, ref string) (*bool, error) {
	has, err := drafts.Has(ctx, q, typ, []string{ref})
	d := has[ref]
	return &d, err
}

// draftPage answers the draft view of the live page p: its draft where it
// has one (with its id, status and times), else p.
func draftPage(ctx context.Context, q tenant.Querier, p Page) (Page, error) {
	var d Page
	ok, err := drafts.Load(ctx, q, drafts.Page, pageRef(p.ID), &d)
	if err != nil {
		return p, err
	}
	if ok {
		p = withPageContent(p, d)
	}
	p.HasDraft = &ok
	return p, nil
}

// withPageContent returns live with the content of d: everything a
// publish makes live.
func withPageContent(live, d Page) Page {
	live.Slug, live.Path, live.Title, live.SEO = d.Slug, d.Path, d.Title, d.SEO
	live.Sections, live.Translations = d.Sections, d.Translations
	if live.Sections == nil {
		live.Sections = []json.RawMessage{}
	}
	if live.Translations == nil {
		live.Translations = []PageTranslation{}
	}
	return live
}

// samePageContent reports whether a and b would publish the same page.
func samePageContent(a, b Page) bool {
	ja, _ := json.Marshal(withPageContent(Page{}, a))
	jb, _ := json.Marshal(withPageContent(Page{}, b))
	return bytes.Equal(ja, jb)
}

// mergePage returns live with the draft d's content in langs (nil: all):
// the default language is the page's slug, path, title, sections and SEO,
// any other language its translation (added, replaced, or removed when
// the draft has none).
func mergePage(live, d Page, langs []string, def string) Page {
	if langs == nil {
		return withPageContent(live, d)
	}
	out := live
	if slices.Contains(langs, def) {
		out = withPageContent(live, Page{Slug: d.Slug, Path: d.Path, Title: d.Title, SEO: d.SEO, Sections: d.Sections, Translations: live.Translations})
	}
	tr := slices.Clone(out.Translations)
	for _, l := range langs {
		if l == def {
			continue
		}
		i := slices.IndexFunc(tr, func(t PageTranslation) bool { return t.Lang == l })
		j := slices.IndexFunc(d.Translations, func(t PageTranslation) bool { return t.Lang == l })
		switch {
		case i >= 0 && j >= 0:
			tr[i] = d.Translations[j]
		case j >= 0:
			tr = append(tr, d.Translations[j])
		case i >= 0:
			tr = slices.Delete(tr, i, i+1)
		}
	}
	out.Translations = tr
	return out
}

// savePageDraft applies req to the draft of the live page p (its draft,
// else p) and saves it, answering the draft view.
func savePageDraft(ctx context.Context, tx pgx.Tx, s *tenant.Scope, p Page, req *PageRequest, autosave bool) (Page, error) {
	d, err := draftPage(ctx, tx, p)
	if err != nil {
		return d, err
	}
	if err := req.merge(&d); err != nil {
		return d, err
	}
	d.HasDraft = nil
	if err := drafts.Save(ctx, tx, s, drafts.Page, pageRef(p.ID), withPageContent(Page{}, d), pageLangs(req, s.Project.DefaultLanguage), autosave); err != nil {
		return d, err
	}
	t := true
	d.HasDraft = &t
	return d, nil
}

// pageLangs are the languages a page write touches: the default one for
// its flat fields, those of its translations.
func pageLangs(req *PageRequest, def string) []string {
	var langs []string
	if req.Title != nil || req.Slug != nil || req.Path != nil || req.Sections != nil || req.SEO != nil {
		langs = append(langs, def)
	}
	if req.Translations != nil {
		for _, t := range *req.Translations {
			if t.Lang != nil && !slices.Contains(langs, *t.Lang) {
				langs = append(langs, *t.Lang)
			}
		}
	}
	return langs
}

// publishPage makes the page's draft live (in the languages the body
// names, else whole) and the page published, in one transaction
// (publishPageTx).
func (sv *Service) publishPage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	langs, err := drafts.Languages(r)
	if err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Page, error) {
		p, err := findPage(r.Context(), tx, chi.URLParam(r, "id_or_slug"), true)
		if err != nil {
			return p, err
		}
		return sv.publishPageTx(r.Context(), tx, s, p, langs, nil)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// publishPageTx publishes the page p (read and locked in tx): its draft
// in langs (nil: whole) goes live and the page is published: 1 credit
// (page_update), a publish version, content.published (naming release).
// A draft whose slug or path another page has is a 409.
func (sv *Service) publishPageTx(ctx context.Context, tx pgx.Tx, s *tenant.Scope, p Page, langs []string, release *int64) (Page, error) {
	ref := pageRef(p.ID)
	var d Page
	has, err := drafts.Load(ctx, tx, drafts.Page, ref, &d)
	if err != nil {
		return p, err
	}
	next := p
	if has {
		next = mergePage(p, d, langs, s.Project.DefaultLanguage)
	}
	next.Status = PagePublished
	if p, err = updatePage(ctx, tx, next); err != nil {
		return p, err
	}
	if has && samePageContent(p, d) {
		if err := drafts.Drop(ctx, tx, drafts.Page, ref); err != nil {
			return p, err
		}
		has = false
	}
	p.HasDraft = &has
	if _, err := drafts.Published(ctx, tx, s, drafts.Page, ref, withPageContent(Page{}, p), langs); err != nil {
		return p, err
	}
	if err := chargePage(ctx, tx, s, p.ID); err != nil {
		return p, err
	}
	return p, sv.events.Emit(ctx, tx, s, drafts.TopicPublished, drafts.PublishedEvent{Type: drafts.Page, ID: ref, Languages: langs, ReleaseID: release})
}

// pagePublisher publishes pages for releases.
func (sv *Service) pagePublisher() drafts.Publisher {
	return drafts.Publisher{
		Scope: "content:write",
		Resolve: func(ctx context.Context, q tenant.Querier, id string) (string, error) {
			p, err := findPage(ctx, q, id, isTx(q))
			return pageRef(p.ID), err
		},
		Publish: func(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, langs []string, release *int64) error {
			p, err := findPage(ctx, tx, ref, true)
			if err != nil {
				return err
			}
			_, err = sv.publishPageTx(ctx, tx, s, p, langs, release)
			return err
		},
	}
}

// unpublishPage takes the page off the public surface (status draft); its
// content and draft stay.
func (sv *Service) unpublishPage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Page, error) {
		p, err := findPage(r.Context(), tx, chi.URLParam(r, "id_or_slug"), true)
		if err != nil {
			return p, err
		}
		p.Status = PageDraft
		if p, err = updatePage(r.Context(), tx, p); err != nil {
			return p, err
		}
		return p, nil
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// previewPage reads the page of slug as a preview link shows it: the
// draft view of a page the link covers (published or not), else the
// published page.
func previewPage(ctx context.Context, q tenant.Querier, pv *drafts.Previewing, slug string) (Page, error) {
	p, err := findPage(ctx, q, slug, false)
	if err != nil || !pv.Covers(drafts.Page, pageRef(p.ID)) || p.Slug != slug {
		if err != nil && !errors.Is(err, httpapi.ErrNotFound) {
			return p, err
		}
		return publishedPage(ctx, q, slug)
	}
	if p, err = draftPage(ctx, q, p); err != nil {
		return p, err
	}
	p.HasDraft = nil
	return p, nil
}
