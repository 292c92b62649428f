package blog

import (
	"context"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// translateRequest is the body of POST /blog-posts/{id}/translate.
type translateRequest struct {
	Languages []string `json:"languages" required:"true"`
}

type translateArgs struct {
	PostID    int64    `json:"post_id"`
	Languages []string `json:"languages"`
}

// TranslateResult is the result of a post's translation.batch: the
// contract's {keys_translated, locales}, the keys being the post's texts
// (title, excerpt, content, meta title and description), and the post.
type TranslateResult struct {
	KeysTranslated int      `json:"keys_translated"`
	Locales        []string `json:"locales"`
	PostID         int64    `json:"post_id"`
}

// postFields are the texts of a post a translation carries.
const postFields = 5

// submitTranslate starts translation.batch of a post: 7 credits per
// language, charged now and refunded if the job fails.
func (sv *Service) submitTranslate(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req translateRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	job, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (jobs.Job, error) {
		return sv.translate(r.Context(), tx, s, chi.URLParam(r, "ref"), req.Languages)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, job)
}

// translate checks langs against the post ref names (valid codes, none
// twice, not the post's own language) and submits its translation.
func (sv *Service) translate(ctx context.Context, tx pgx.Tx, s *tenant.Scope, ref string, langs []string) (jobs.Job, error) {
	p, err := loadPost(ctx, tx, ref, false)
	if err != nil {
		return jobs.Job{}, err
	}
	var v httpapi.Validator
	v.Check(len(langs) >= 1, "languages", "must list at least one language code")
	checkLanguages(&v, "languages", langs, p.Language)
	if err := v.Err(); err != nil {
		return jobs.Job{}, err
	}
	return jobs.Submit(ctx, tx, s, sv.river, jobs.Spec{
		Type: TypeTranslate, Handler: handlerTranslate, Args: translateArgs{PostID: p.ID, Languages: langs},
		Charges: languageCharges(len(langs)), Steps: langs, WriteScope: "blog:write",
	})
}

// postGone is the job failure of a post deleted before its translation
// was written; other errors are returned as they are.
func postGone(err error) error {
	if errors.Is(err, httpapi.ErrNotFound) {
		return jobs.Fail(httpapi.CodeNotFound, "the post was deleted before it could be translated")
	}
	return err
}

// translateJob translates the post's original texts into each language
// (one step per language) and writes every translation, with one
// blog_post.translated per language, at completion.
func (sv *Service) translateJob(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
	var a translateArgs
	if err := run.Decode(&a); err != nil {
		return nil, jobs.Fail(jobs.CodeInvalid, "the job's arguments are unreadable: "+err.Error())
	}
	p, err := tenant.TxV(ctx, run.Scope, func(tx pgx.Tx) (*postRow, error) { return loadPostID(ctx, tx, a.PostID, false) })
	if err != nil {
		return nil, postGone(err)
	}
	from, src := p.Language, p.original()
	site := run.Scope.Project.Name
	out := make([]Translation, len(a.Languages))
	for i, lang := range a.Languages {
		if err := run.Step(ctx, lang, i*100/len(a.Languages), "Translating the post into "+lang); err != nil {
			return nil, err
		}
		tr, err := sv.ai.Translate(ctx, ai.TranslateRequest{From: from, To: lang, Context: site,
			Texts: []string{src.Title, src.Excerpt, src.Content, src.MetaTitle, src.MetaDescription}})
		if err != nil {
			return nil, err
		}
		out[i] = Translation{Lang: lang, Title: cleanText(tr[0]), Excerpt: cleanText(tr[1]), Content: cleanHTML(tr[2]),
			MetaTitle: cleanText(tr[3]), MetaDescription: cleanText(tr[4])}
	}
	return func(ctx context.Context, tx pgx.Tx) (any, error) {
		if _, err := loadPostID(ctx, tx, a.PostID, true); err != nil {
			return nil, postGone(err)
		}
		for _, t := range out {
			if err := putText(ctx, tx, a.PostID, t); err != nil {
				return nil, err
			}
		}
		if err := sv.emitTranslated(ctx, tx, run.Scope, a.PostID, a.Languages); err != nil {
			return nil, err
		}
		return TranslateResult{KeysTranslated: postFields, Locales: a.Languages, PostID: a.PostID}, nil
	}, nil
}
