package blog

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/drafts"
)

// A post's draft (tenant/drafts) is the whole post as it would be
// published: its slug, featured image, category, tags and its text in
// every language. The post's own language (language_code) is its slug,
// image, category, tags and main text; any other language is its
// translation. Status and times are not in a draft: publish, schedule,
// archive and unpublish set them on the live post.

// postDraft is a post's draft, and the data of each of its versions.
type postDraft struct {
	Slug          string        `json:"slug"`
	FeaturedImage *string       `json:"featured_image"`
	CategoryID    *int64        `json:"category_id"`
	TagIDs        []int64       `json:"tag_ids"`
	Translations  []Translation `json:"translations"`
}

// postRef is a post's reference in the drafts and versions tables.
func postRef(id int64) string { return strconv.FormatInt(id, 10) }

// postItem is the posts' versions routes.
var postItem = drafts.Item{
	Type: drafts.Post,
	Ref: func(ctx context.Context, q tenant.Querier, r *http.Request, _ *tenant.Scope) (string, error) {
		p, err := loadPost(ctx, q, chi.URLParam(r, "ref"), isTx(q))
		if err != nil {
			return "", err
		}
		return postRef(p.ID), nil
	},
	View: func(ctx context.Context, q tenant.Querier, _ *http.Request, _ *tenant.Scope, ref string, doc json.RawMessage) (any, error) {
		p, err := loadPost(ctx, q, ref, false)
		if err != nil {
			return nil, err
		}
		var d postDraft
		if err := json.Unmarshal(doc, &d); err != nil {
			return nil, err
		}
		return draftView(ctx, q, p, d, nil)
	},
}

// isTx reports whether q is a transaction (whose reads may lock).
func isTx(q tenant.Querier) bool {
	_, ok := q.(pgx.Tx)
	return ok
}

// markPosts sets HasDraft on each post: authenticated answers say
// whether a post has unpublished changes.
func markPosts(ctx context.Context, q tenant.Querier, posts []*postRow) error {
	refs := make([]string, len(posts))
	for i, p := range posts {
		refs[i] = postRef(p.ID)
	}
	has, err := drafts.Has(ctx, q, drafts.Post, refs)
	for i, p := range posts {
		d := has[refs[i]]
		p.HasDraft = &d
	}
	return err
}

// contentOf is what of the live post p a publish makes live, as a draft.
func contentOf(p *postRow) postDraft {
	d := postDraft{Slug: p.Slug, FeaturedImage: p.FeaturedImage, TagIDs: p.TagIDs, Translations: p.Texts}
	if p.Category != nil {
		d.CategoryID = &p.Category.ID
	}
	return normal(d, p.Language)
}

// normal returns d with empty lists rather than null and its texts in
// the order the post lists them (its own language first, then by code),
// so that two drafts of the same content marshal the same.
func normal(d postDraft, own string) postDraft {
	d.TagIDs = slices.Clone(d.TagIDs)
	if d.TagIDs == nil {
		d.TagIDs = []int64{}
	}
	d.Translations = slices.Clone(d.Translations)
	if d.Translations == nil {
		d.Translations = []Translation{}
	}
	sort.Slice(d.Translations, func(i, j int) bool {
		a, b := d.Translations[i].Lang, d.Translations[j].Lang
		if (a == own) != (b == own) {
			return a == own
		}
		return a < b
	})
	return d
}

// sameContent reports whether a and b would publish the same post.
func sameContent(a, b postDraft, own string) bool {
	ja, _ := json.Marshal(normal(a, own))
	jb, _ := json.Marshal(normal(b, own))
	return bytes.Equal(ja, jb)
}

// withText returns d with its text in t.Lang replaced by t (or added).
func withText(d postDraft, t Translation) postDraft {
	d.Translations = slices.Clone(d.Translations)
	if i := slices.IndexFunc(d.Translations, func(x Translation) bool { return x.Lang == t.Lang }); i >= 0 {
		d.Translations[i] = t
	} else {
		d.Translations = append(d.Translations, t)
	}
	return d
}

// textOf returns d's text in lang (empty but for its language when d has
// none).
func textOf(d postDraft, lang string) Translation {
	if i := slices.IndexFunc(d.Translations, func(x Translation) bool { return x.Lang == lang }); i >= 0 {
		return d.Translations[i]
	}
	return Translation{Lang: lang}
}

// mergePost returns live with the draft d's content in langs (nil: all):
// the post's own language is its slug, image, category, tags and main
// text, any other language its translation (added, replaced, or removed
// when the draft has none).
func mergePost(live, d postDraft, langs []string, own string) postDraft {
	if langs == nil {
		return normal(d, own)
	}
	out := live
	if slices.Contains(langs, own) {
		out.Slug, out.FeaturedImage, out.CategoryID, out.TagIDs = d.Slug, d.FeaturedImage, d.CategoryID, d.TagIDs
		out = withText(out, textOf(d, own))
	}
	for _, l := range langs {
		if l == own {
			continue
		}
		if slices.ContainsFunc(d.Translations, func(x Translation) bool { return x.Lang == l }) {
			out = withText(out, textOf(d, l))
		} else {
			out.Translations = slices.DeleteFunc(slices.Clone(out.Translations), func(x Translation) bool { return x.Lang == l })
		}
	}
	return normal(out, own)
}

// loadDraft reads the draft of the live post p: its draft, else its live
// content (has false).
func loadDraft(ctx context.Context, q tenant.Querier, p *postRow) (d postDraft, has bool, err error) {
	has, err = drafts.Load(ctx, q, drafts.Post, postRef(p.ID), &d)
	if err != nil || !has {
		return contentOf(p), false, err
	}
	return normal(d, p.Language), true, nil
}

// draftView answers the live post p with the content of its draft d (its
// id, status and times stay p's), its flat texts in lang. A category or
// tag deleted since the draft was written is left out, as a delete takes
// it off the live posts.
func draftView(ctx context.Context, q tenant.Querier, p *postRow, d postDraft, chain []string) (_ Post, err error) {
	defer httpapi.Wrap(&err, "draftView(%d)", p.ID)
	v := *p
	v.Slug, v.FeaturedImage, v.TagIDs, v.Tags, v.Texts = d.Slug, d.FeaturedImage, d.TagIDs, nil, normal(d, p.Language).Translations
	if v.Category, err = categoryByID(ctx, q, d.CategoryID); err != nil {
		return Post{}, err
	}
	if err := fill(ctx, q, []*postRow{&v}); err != nil {
		return Post{}, err
	}
	t := true
	v.HasDraft = &t
	return toAPIPost(&v, chain), nil
}

// viewPost answers the draft view of the live post p: its draft where it
// has one, else p.
func viewPost(ctx context.Context, q tenant.Querier, p *postRow, chain []string) (Post, error) {
	d, has, err := loadDraft(ctx, q, p)
	if err != nil {
		return Post{}, err
	}
	if has {
		return draftView(ctx, q, p, d, chain)
	}
	p.HasDraft = &has
	return toAPIPost(p, chain), nil
}

// saveDraft applies edit to the draft of the post ref names (its draft,
// else its live content), saves it as a version of the languages langs
// touch (a save, or the autosave) and answers the draft view in lang.
// Only the live post is locked: a draft write never changes it.
func saveDraft(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, autosave bool, lang string,
	edit func(p *postRow, d postDraft) (postDraft, []string, error)) (Post, error) {
	p, err := loadPost(ctx, tx, ref, true)
	if err != nil {
		return Post{}, err
	}
	d, _, err := loadDraft(ctx, tx, p)
	if err != nil {
		return Post{}, err
	}
	d, langs, err := edit(p, d)
	if err != nil {
		return Post{}, err
	}
	d = normal(d, p.Language)
	if err := drafts.Save(ctx, tx, s, drafts.Post, postRef(p.ID), d, langs, autosave); err != nil {
		return Post{}, err
	}
	var chain []string // the view in the language written, if one was
	if lang != "" {
		chain = []string{lang}
	}
	return draftView(ctx, tx, p, d, chain)
}

// patchDraft writes a checked PATCH (tags: its tag ids without
// duplicates) into the post's draft. The category and tags must exist,
// as for a live PATCH; a taken slug is a 409 at publish, not here.
func patchDraft(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, req *patchRequest, tags []int64, autosave bool) (Post, error) {
	return saveDraft(ctx, tx, s, ref, autosave, "", func(p *postRow, d postDraft) (postDraft, []string, error) {
		if err := checkTerms(ctx, tx, req.CategoryID.ptr(), tags); err != nil {
			return d, nil, err
		}
		if req.Slug != nil {
			d.Slug = *req.Slug
		}
		if req.CategoryID.Set {
			d.CategoryID = req.CategoryID.ptr()
		}
		if req.TagIDs != nil {
			d.TagIDs = tags
		}
		if req.FeaturedImage.Set {
			d.FeaturedImage = req.FeaturedImage.ptr()
		}
		if req.any() {
			d = withText(d, req.onto(textOf(d, p.Language)))
		}
		var langs []string
		if req.Slug != nil || req.CategoryID.Set || req.TagIDs != nil || req.FeaturedImage.Set || req.any() {
			langs = []string{p.Language}
		}
		return d, langs, nil
	})
}

// liveTerms returns d without the category and tags deleted since it was
// written, and holds those it keeps (FOR KEY SHARE) until the publish
// commits.
func liveTerms(ctx context.Context, tx pgx.Tx, d postDraft) (postDraft, error) {
	if d.CategoryID != nil {
		found, err := lockTerms(ctx, tx, spaceCategory, []int64{*d.CategoryID})
		if err != nil {
			return d, err
		}
		if len(found) == 0 {
			d.CategoryID = nil
		}
	}
	if len(d.TagIDs) > 0 {
		found, err := lockTerms(ctx, tx, spaceTag, d.TagIDs)
		if err != nil {
			return d, err
		}
		d.TagIDs = slices.DeleteFunc(slices.Clone(d.TagIDs), func(id int64) bool { return !slices.Contains(found, id) })
	}
	return d, nil
}

// cleanDraft passes d's texts through the sanitisers of a write before
// they go live: a draft may come from a version or a restored archive,
// and what is public is always sanitised (cleaning a clean text changes
// nothing).
func cleanDraft(d postDraft) postDraft {
	d.Translations = slices.Clone(d.Translations)
	for i, t := range d.Translations {
		d.Translations[i] = Translation{Lang: t.Lang, Title: cleanText(t.Title), Excerpt: cleanText(t.Excerpt), Content: cleanHTML(t.Content),
			MetaTitle: cleanText(t.MetaTitle), MetaDescription: cleanText(t.MetaDescription)}
	}
	return d
}

// publishPost makes the post's draft live (in the languages the body
// names, else whole) and the post published, in one transaction; no
// credits, as before drafts. A post that moves to published emits
// blog_post.published as before; a publish that made anything live (a
// draft, or the status) records a publish version and emits
// content.published. A post already published without a draft changes
// nothing and emits nothing. A draft whose slug another post has is a
// 409 and nothing changes. The draft is dropped once nothing in it
// differs from what is live.
//
// Only this explicit publish applies a draft: a scheduled post's job
// (schedule.go) and PATCH status published publish the live post as it
// is, so what goes live at a scheduled time is what was reviewed when
// it was scheduled, never edits made since.
func (sv *Service) publishPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	langs, err := drafts.Languages(r)
	if err != nil {
		return err
	}
	out, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Post, error) {
		return sv.publish(r.Context(), tx, s, chi.URLParam(r, "ref"), langs, nil)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, out)
}

// publish is publishPost's transaction (and a release's, naming it in
// content.published).
func (sv *Service) publish(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, langs []string, release *int64) (Post, error) {
	p, err := loadPost(ctx, tx, ref, true)
	if err != nil {
		return Post{}, err
	}
	live := contentOf(p)
	d, has, err := loadDraft(ctx, tx, p)
	if err != nil {
		return Post{}, err
	}
	if has {
		if d, err = liveTerms(ctx, tx, cleanDraft(d)); err != nil {
			return Post{}, err
		}
		live = mergePost(live, d, langs, p.Language)
		if err := putContent(ctx, tx, p, live); err != nil {
			return Post{}, err
		}
	}
	moved, err := setStatus(ctx, tx, p, StatusPublished, nil)
	if err != nil {
		return Post{}, err
	}
	if has || moved != "" {
		id := postRef(p.ID)
		if has && sameContent(live, d, p.Language) {
			if err := drafts.Drop(ctx, tx, drafts.Post, id); err != nil {
				return Post{}, err
			}
		}
		if _, err := drafts.Published(ctx, tx, s, drafts.Post, id, live, langs); err != nil {
			return Post{}, err
		}
		if err := sv.emit(ctx, tx, s, drafts.TopicPublished, drafts.PublishedEvent{Type: drafts.Post, ID: id, Languages: langs, ReleaseID: release}); err != nil {
			return Post{}, err
		}
	}
	return sv.finishWrite(ctx, tx, s, p.ID, moved, "")
}

// unpublishPost takes the post off the public surface (status draft,
// as PATCH status draft does); its content and its draft stay.
func (sv *Service) unpublishPost(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return sv.transition(w, r, s, StatusDraft, nil)
}

// Publishers is the pillar's publisher of posts, for releases: a release
// names a post by its id or slug and keeps its id.
func (sv *Service) Publishers() drafts.Publishers {
	return drafts.Publishers{drafts.Post: {
		Scope: "blog:write",
		Resolve: func(ctx context.Context, q tenant.Querier, id string) (string, error) {
			p, err := loadPost(ctx, q, id, isTx(q))
			if err != nil {
				return "", err
			}
			return postRef(p.ID), nil
		},
		Publish: func(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, langs []string, release *int64) error {
			_, err := sv.publish(ctx, tx, s, ref, langs, release)
			return err
		},
	}}
}
