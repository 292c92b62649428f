package sites

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/content"
)

// A re-run of website.generate must never overwrite the owner's work.
// Each item it writes is marked in site_generated with the fingerprint
// of the item as stored right after the write. A later run writes an
// item only when it does not exist yet, or when it is still exactly what
// the generation left (its fingerprint matches its mark); an item the
// owner created or edited since is kept as it is. The fingerprints cover
// the fields the generation writes and nothing else (not updated_at, not
// the brand logo), so an edit of anything else does not count.

// mark identifies one generated item.
type mark struct {
	Kind, Ref, Lang string
}

const brandRef = "brand"

func fingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic("sites: fingerprint: " + err.Error()) // only JSON-able values are fingerprinted
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func pagePrint(p content.Page) string {
	return fingerprint([]any{p.Title, p.Path, p.Status, p.Sections, p.SEO, p.Translations})
}

func componentPrint(c content.Component) string {
	return fingerprint([]any{c.Name, c.Props, c.Translations})
}

func brandPrint(b content.Brand) string {
	return fingerprint([]any{b.Name, b.Tagline, b.Description, b.Voice, b.Audience, b.Colors, b.Fonts})
}

func valuePrint(v string) string { return fingerprint(v) }

// blankBrand reports whether the brand holds nothing the generation would
// write: a new project's brand, which the first run fills in.
func blankBrand(b content.Brand) bool {
	return b.Name == "" && b.Tagline == "" && b.Description == "" && b.Voice == "" && b.Audience == "" &&
		len(b.Colors) == 0 && len(b.Fonts) == 0
}

// commitSite writes the generated site in tx, the transaction that
// completes the job, through the content pillar (its checks; content.changed
// for each value that changes). Items the owner made or edited are kept.
func (sv *Service) commitSite(ctx context.Context, tx pgx.Tx, s *tenant.Scope, jobID string, g *site) (WebsiteResult, error) {
	// The brand row is one per project: holding it serialises two runs.
	brand, err := content.LockBrand(ctx, tx)
	if err != nil {
		return WebsiteResult{}, err
	}
	marks, err := loadMarks(ctx, tx)
	if err != nil {
		return WebsiteResult{}, err
	}
	ours := func(m mark, current string) bool {
		fp, ok := marks[m]
		return ok && fp == current
	}
	written := map[mark]string{}

	if m := (mark{"brand", brandRef, ""}); blankBrand(brand) || ours(m, brandPrint(brand)) {
		b, err := content.SaveBrand(ctx, tx, g.brand.request())
		if err != nil {
			return WebsiteResult{}, err
		}
		written[m] = brandPrint(b)
	}

	for _, c := range g.components {
		cur, err := content.LockComponent(ctx, tx, c.Slug)
		if err != nil {
			return WebsiteResult{}, err
		}
		m := mark{"component", c.Slug, ""}
		if cur != nil && !ours(m, componentPrint(*cur)) {
			continue
		}
		saved, err := content.SaveComponent(ctx, tx, cur, c.request())
		if err != nil {
			return WebsiteResult{}, err
		}
		written[m] = componentPrint(saved)
	}

	res := WebsiteResult{Pages: []PageRef{}, ContentKeys: len(g.keys), Components: len(g.components)}
	for _, p := range g.pages {
		cur, err := content.LockPage(ctx, tx, p.Slug)
		if err != nil {
			return WebsiteResult{}, err
		}
		m := mark{"page", p.Slug, ""}
		if cur != nil && !ours(m, pagePrint(*cur)) {
			res.Pages = append(res.Pages, PageRef{ID: cur.ID, Slug: cur.Slug})
			continue
		}
		saved, ok, err := savePage(ctx, tx, cur, p.request())
		if err != nil {
			return WebsiteResult{}, err
		}
		if !ok {
			continue // another page of the owner's has this path: theirs stays
		}
		written[m] = pagePrint(saved)
		res.Pages = append(res.Pages, PageRef{ID: saved.ID, Slug: saved.Slug})
	}

	langs := []string{}
	seen := map[string]bool{}
	for _, v := range g.values {
		if !seen[v.Lang] {
			seen[v.Lang] = true
			langs = append(langs, v.Lang)
		}
	}
	stored, err := content.LockValues(ctx, tx, g.keys, langs)
	if err != nil {
		return WebsiteResult{}, err
	}
	// A key is the owner's as a whole once they made or changed it in any
	// language: its translations follow the text they wrote, not ours.
	theirs := map[string]bool{}
	for kl, cur := range stored {
		if !ours(mark{"value", kl[0], kl[1]}, valuePrint(cur)) {
			theirs[kl[0]] = true
		}
	}
	for _, v := range g.values {
		if theirs[v.Key] {
			continue
		}
		m := mark{"value", v.Key, v.Lang}
		if err := sv.content.SaveValue(ctx, tx, s, v.Key, v.Lang, v.Value); err != nil {
			return WebsiteResult{}, err
		}
		written[m] = valuePrint(v.Value)
	}
	return res, saveMarks(ctx, tx, jobID, written)
}

// savePage saves one page in a savepoint: a new page whose path another
// page already has (the owner's "/" under another slug) is skipped, ok
// false, rather than failing the whole site.
func savePage(ctx context.Context, tx pgx.Tx, cur *content.Page, req content.PageRequest) (_ content.Page, ok bool, err error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return content.Page{}, false, err
	}
	saved, err := content.SavePage(ctx, sp, cur, req)
	if errors.Is(err, httpapi.ErrConflict) {
		return content.Page{}, false, sp.Rollback(ctx)
	}
	if err != nil {
		_ = sp.Rollback(ctx)
		return content.Page{}, false, err
	}
	return saved, true, sp.Commit(ctx)
}
