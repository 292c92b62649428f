package content

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// TranslateLanguageCost is the price of translating into one language, in
// hundredths of a credit.
const TranslateLanguageCost = 7 * credits.Unit

// Limits of a translation request.
const (
	maxLanguages     = 50
	maxTranslateKeys = 5000
	translateBatch   = 50 // texts per provider call
)

// TranslateRequest is the body of POST /content/translate.
type TranslateRequest struct {
	Languages []string  `json:"languages" required:"true"`
	Keys      *[]string `json:"keys"`
}

type translateArgs struct {
	Languages []string `json:"languages"`
	// Keys to translate; nil: every key that has a default-language value
	// when the job runs.
	Keys []string `json:"keys,omitempty"`
}

// TranslateResult is a translation.batch job's result.
type TranslateResult struct {
	KeysTranslated int      `json:"keys_translated"`
	Locales        []string `json:"locales"`
}

func (sv *Service) submitTranslate(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req TranslateRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	src := s.Project.DefaultLanguage
	var v httpapi.Validator
	v.Check(len(req.Languages) >= 1 && len(req.Languages) <= maxLanguages, "languages", fmt.Sprintf("must list 1 to %d language codes", maxLanguages))
	seen := map[string]bool{}
	for _, l := range req.Languages {
		v.Check(httpapi.ValidLanguage(l), "languages", fmt.Sprintf("%q is not a language code", l))
		v.Check(l != src, "languages", fmt.Sprintf("%q is the project's default language, the source of translations", l))
		v.Check(!seen[l], "languages", fmt.Sprintf("%q is listed twice", l))
		seen[l] = true
	}
	args := translateArgs{Languages: req.Languages}
	if req.Keys != nil {
		keys := *req.Keys
		v.Check(len(keys) >= 1 && len(keys) <= maxTranslateKeys, "keys", fmt.Sprintf("must list 1 to %d keys when present", maxTranslateKeys))
		uniq := map[string]bool{}
		for _, k := range keys {
			v.Check(KeyPattern.MatchString(k), "keys", fmt.Sprintf("%q does not match %s", k, KeyPattern))
			if !uniq[k] {
				uniq[k] = true
				args.Keys = append(args.Keys, k)
			}
		}
	}
	if err := v.Err(); err != nil {
		return err
	}
	job, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (jobs.Job, error) {
		have, err := Values(r.Context(), tx, src, args.Keys)
		if err != nil {
			return jobs.Job{}, err
		}
		if len(have) == 0 && args.Keys == nil {
			return jobs.Job{}, httpapi.Invalid("keys", "the project has no content in its default language ("+src+") to translate")
		}
		var missing []string
		for _, k := range args.Keys {
			if _, ok := have[k]; !ok {
				missing = append(missing, k)
			}
		}
		if len(missing) > 0 {
			return jobs.Job{}, httpapi.Invalid("keys", fmt.Sprintf("no value in the default language (%s) for: %s", src, strings.Join(missing, ", ")))
		}
		charges := make([]jobs.Charge, len(args.Languages))
		for i := range charges {
			charges[i] = jobs.Charge{Op: "translate_language", Cost: TranslateLanguageCost}
		}
		return jobs.Submit(r.Context(), tx, s, sv.river, jobs.Spec{
			Type: TypeTranslate, Args: args, Charges: charges, Steps: args.Languages, WriteScope: "content:write",
		})
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, job)
}

// translateJob translates the source values into each language (one step
// per language) and commits every value at completion.
func (sv *Service) translateJob(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
	var a translateArgs
	if err := run.Decode(&a); err != nil {
		return nil, jobs.Fail(jobs.CodeInvalid, "the job's arguments are unreadable: "+err.Error())
	}
	p := run.Scope.Project
	src, err := tenant.TxV(ctx, run.Scope, func(tx pgx.Tx) (map[string]string, error) {
		return Values(ctx, tx, p.DefaultLanguage, a.Keys)
	})
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(src))
	for k := range src {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	texts := make([]string, len(keys))
	for i, k := range keys {
		texts[i] = src[k]
	}
	site := p.Name
	if p.Industry != "" {
		site += " (" + p.Industry + ")"
	}
	out := make(map[string][]string, len(a.Languages))
	for i, lang := range a.Languages {
		if err := run.Step(ctx, lang, i*100/len(a.Languages), fmt.Sprintf("Translating %d keys into %s", len(keys), lang)); err != nil {
			return nil, err
		}
		for start := 0; start < len(texts); start += translateBatch {
			batch := texts[start:min(start+translateBatch, len(texts))]
			tr, err := sv.ai.Translate(ctx, ai.TranslateRequest{From: p.DefaultLanguage, To: lang, Texts: batch, Context: site})
			if err != nil {
				return nil, err
			}
			out[lang] = append(out[lang], tr...)
		}
	}
	return func(ctx context.Context, tx pgx.Tx) (any, error) {
		for _, lang := range a.Languages {
			for i, k := range keys {
				if err := sv.setValue(ctx, tx, run.Scope, k, lang, out[lang][i]); err != nil {
					return nil, err
				}
			}
		}
		return TranslateResult{KeysTranslated: len(keys), Locales: a.Languages}, nil
	}, nil
}
