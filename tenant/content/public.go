package content

import (
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// The public reads a generated site renders besides content keys, pages
// and galleries: its components, its brand, and the list of its published
// pages for its router, navigation and sitemap.

func (sv *Service) publicComponent(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	pv, err := drafts.Preview(r, s)
	if err != nil {
		return err
	}
	lang, err := optionalLang(r)
	if err != nil {
		return err
	}
	c, err := getComponent(r.Context(), s.Reader(), chi.URLParam(r, "slug"), false)
	if err != nil {
		return err
	}
	if pv.Covers(drafts.Component, componentRef(c.ID)) {
		if c, err = draftComponent(r.Context(), s.Reader(), c); err != nil {
			return err
		}
	}
	if err := c.localize(s.Project.ChainFor(lang), s.Project.DefaultLanguage); err != nil {
		return err
	}
	c.HasDraft = nil
	return httpapi.PublicJSON(w, r, c)
}

// PublicBrand is the brand as a site shows it. The voice and audience
// are briefs for writing (the AI pillars read them), not things a page
// renders, so the public surface keeps them to the key holders.
type PublicBrand struct {
	Name        string            `json:"name"`
	Tagline     string            `json:"tagline"`
	Description string            `json:"description"`
	Colors      map[string]string `json:"colors"`
	Fonts       map[string]string `json:"fonts"`
	LogoURL     *string           `json:"logo_url"`
	UpdatedAt   time.Time         `json:"updated_at"`
}

func toPublicBrand(b Brand) PublicBrand {
	return PublicBrand{Name: b.Name, Tagline: b.Tagline, Description: b.Description, Colors: b.Colors, Fonts: b.Fonts,
		LogoURL: b.LogoURL, UpdatedAt: b.UpdatedAt}
}

func (sv *Service) publicBrand(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	pv, err := drafts.Preview(r, s)
	if err != nil {
		return err
	}
	b, err := getBrand(r.Context(), s.Reader())
	if err != nil {
		return err
	}
	if pv.Covers(drafts.Brand, brandRef) {
		if b, err = draftBrand(r.Context(), s.Reader(), b); err != nil {
			return err
		}
	}
	return httpapi.PublicJSON(w, r, toPublicBrand(b))
}

// PageLink is a published page in the public list: what a site's router
// and navigation need, without the sections.
type PageLink struct {
	Slug      string    `json:"slug"`
	Path      string    `json:"path"`
	Title     string    `json:"title"`
	UpdatedAt time.Time `json:"updated_at"`
	// Fallback: {"title": lang} when the title is another language's
	// than the one asked for (Page.Fallback).
	Fallback tenant.Provenance `json:"fallback,omitempty"`
	id       int64
}

// publicPages serves GET /v1/public/pages: the published pages, newest
// first and paged like the admin list, titles in lang when translated.
func (sv *Service) publicPages(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	lang, err := optionalLang(r)
	if err != nil {
		return err
	}
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]PageLink, error) {
		pages, err := listPages(r.Context(), s.Reader(), before, PagePublished, limit)
		out := make([]PageLink, len(pages))
		for i, p := range pages {
			p.localize(s.Project.ChainFor(lang), s.Project.DefaultLanguage)
			var title tenant.Provenance // the link's one language-picked field
			title.Note("title", p.Fallback["title"], lang)
			out[i] = PageLink{Slug: p.Slug, Path: p.Path, Title: p.Title, UpdatedAt: p.UpdatedAt, Fallback: title, id: p.ID}
		}
		return out, err
	}, func(l PageLink) string { return httpapi.IDText(l.id) })
	if err != nil {
		return err
	}
	return httpapi.PublicJSON(w, r, list)
}
