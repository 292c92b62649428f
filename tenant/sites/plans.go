package sites

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// Bounds of a content plan.
const (
	MaxPlanItems   = 50
	maxTopic       = 500
	maxKeywords    = 20
	maxKeyword     = 100
	maxItemTitle   = 120
	maxItemSummary = 500
	maxItemWords   = 8
	maxTone        = 100
	maxLanguages   = 20
)

// Plan is the content plan resource.
type Plan struct {
	ID           int64      `json:"id"`
	Topic        string     `json:"topic"`
	LanguageCode string     `json:"language_code"`
	Items        []PlanItem `json:"items"`
	JobID        string     `json:"job_id"`
	CreatedAt    time.Time  `json:"created_at"`
}

// PlanItem is one planned blog post.
type PlanItem struct {
	Title    string   `json:"title"`
	Slug     string   `json:"slug"`
	Summary  string   `json:"summary"`
	Keywords []string `json:"keywords"`
}

// PlanResult is a content_plan.generate job's result (decisions.md).
type PlanResult struct {
	Items []PlanItem `json:"items"`
}

// planRequest is the body of POST /content-plans.
type planRequest struct {
	Topic        *string   `json:"topic" required:"true"`
	Count        *int      `json:"count" required:"true"`
	LanguageCode *string   `json:"language_code"`
	Keywords     *[]string `json:"keywords"`
}

// planArgs are the arguments of a content_plan.generate job.
type planArgs struct {
	Topic    string   `json:"topic"`
	Count    int      `json:"count"`
	Language string   `json:"language"`
	Keywords []string `json:"keywords"`
}

// checkLanguage validates one language code under field.
func checkLanguage(v *httpapi.Validator, field, lang string) {
	v.Check(httpapi.ValidLanguage(lang), field, fmt.Sprintf("%q is not a language code", lang))
}

// checkText trims *s and checks it holds at most max characters (and
// something, when required).
func checkText(v *httpapi.Validator, field string, s *string, max int, required bool) {
	*s = strings.TrimSpace(*s)
	if required {
		v.Check(*s != "", field, "must not be empty")
	}
	v.Check(utf8.RuneCountInString(*s) <= max, field, fmt.Sprintf("must be at most %d characters", max))
}

// checkKeywords validates and trims a keywords list.
func checkKeywords(v *httpapi.Validator, in *[]string) []string {
	out := []string{}
	if in == nil {
		return out
	}
	v.Check(len(*in) <= maxKeywords, "keywords", fmt.Sprintf("must list at most %d keywords", maxKeywords))
	for _, k := range *in {
		k = strings.TrimSpace(k)
		v.Check(k != "" && utf8.RuneCountInString(k) <= maxKeyword, "keywords", fmt.Sprintf("each must be 1 to %d characters", maxKeyword))
		out = append(out, k)
	}
	return out
}

// submitPlan is POST /content-plans: content_plan.generate, 20 credits.
func (sv *Service) submitPlan(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req planRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	a := planArgs{Topic: *req.Topic, Count: *req.Count, Language: s.Project.DefaultLanguage}
	var v httpapi.Validator
	checkText(&v, "topic", &a.Topic, maxTopic, true)
	v.Check(a.Count >= 1 && a.Count <= MaxPlanItems, "count", fmt.Sprintf("must be 1 to %d", MaxPlanItems))
	if req.LanguageCode != nil {
		a.Language = *req.LanguageCode
		checkLanguage(&v, "language_code", a.Language)
	}
	a.Keywords = checkKeywords(&v, req.Keywords)
	if err := v.Err(); err != nil {
		return err
	}
	job, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (jobs.Job, error) {
		return jobs.Submit(r.Context(), tx, s, sv.river, jobs.Spec{
			Type: TypePlan, Args: a, Charges: []jobs.Charge{{Op: "content_plan", Cost: PlanCost}}, WriteScope: "blog:write",
		})
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, job)
}

// planSchema is the structured answer of a plan of count posts.
func planSchema(count int) map[string]any {
	return object(map[string]any{
		"items": map[string]any{"type": "array", "minItems": count, "maxItems": count, "items": object(map[string]any{
			"title":    map[string]any{"type": "string", "minLength": 1, "maxLength": maxItemTitle},
			"summary":  map[string]any{"type": "string", "maxLength": maxItemSummary},
			"keywords": map[string]any{"type": "array", "maxItems": maxItemWords, "items": map[string]any{"type": "string", "maxLength": 60}},
		})},
	})
}

// planJob asks for the plan outside any transaction; the plan is stored
// when the job completes, so a failed or retried job stores none twice.
func (sv *Service) planJob(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
	var a planArgs
	if err := run.Decode(&a); err != nil {
		return nil, jobs.Fail(jobs.CodeInvalid, "the job's arguments are unreadable: "+err.Error())
	}
	if err := run.Progress(ctx, 10, "Planning the posts"); err != nil {
		return nil, err
	}
	p := run.Scope.Project
	system := fmt.Sprintf("You plan the blog of the website %q%s: distinct, useful posts that people search for, "+
		"written in the language with code %s. Each item has a title, a two-sentence summary and its search keywords.", p.Name, industryOf(p, ""), a.Language)
	prompt := a.Topic
	if len(a.Keywords) > 0 {
		prompt += "\n" + strings.Join(a.Keywords, ", ")
	}
	var out struct {
		Items []struct {
			Title    string   `json:"title"`
			Summary  string   `json:"summary"`
			Keywords []string `json:"keywords"`
		} `json:"items"`
	}
	if err := sv.ai.JSON(ctx, ai.JSONRequest{System: system, Prompt: prompt, Name: "content_plan", Schema: planSchema(a.Count)}, &out); err != nil {
		return nil, err
	}
	if len(out.Items) != a.Count {
		return nil, &ai.UpstreamError{Status: 200, Attempts: 1, Msg: fmt.Sprintf("asked for %d items, got %d", a.Count, len(out.Items))}
	}
	items := make([]PlanItem, len(out.Items))
	used := map[string]bool{}
	for i, it := range out.Items {
		title := truncate(strings.TrimSpace(it.Title), maxItemTitle)
		if title == "" {
			title = truncate(a.Topic, maxItemTitle)
		}
		items[i] = PlanItem{Title: title, Slug: uniqueSlug(slug.Make(title), used), Summary: truncate(strings.TrimSpace(it.Summary), maxItemSummary), Keywords: []string{}}
		for _, k := range it.Keywords {
			if k = strings.TrimSpace(k); k != "" && len(items[i].Keywords) < maxItemWords {
				items[i].Keywords = append(items[i].Keywords, truncate(k, maxKeyword))
			}
		}
	}
	return func(ctx context.Context, tx pgx.Tx) (any, error) {
		raw, err := json.Marshal(items)
		if err != nil {
			return nil, err
		}
		if err := insertPlan(ctx, tx, a.Topic, a.Language, raw, run.JobID); err != nil {
			return nil, err
		}
		return PlanResult{Items: items}, nil
	}, nil
}

// uniqueSlug returns base, or base-2, base-3, … , the first not in used,
// and marks it used.
func uniqueSlug(base string, used map[string]bool) string {
	s := base
	for n := 2; used[s]; n++ {
		s = base + "-" + strconv.Itoa(n)
	}
	used[s] = true
	return s
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return strings.TrimSpace(string([]rune(s)[:n]))
}

// industryOf describes the site's trade for a prompt: the one asked for,
// else the project's.
func industryOf(p *tenant.Project, asked string) string {
	if asked == "" {
		asked = p.Industry
	}
	if asked == "" {
		return ""
	}
	return " (" + asked + ")"
}

var errNoPlan = httpapi.NotFound("no such content plan")

// listPlans is GET /content-plans: newest first; ?job_id= finds the plan
// of one job.
func (sv *Service) listPlans(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	jobID := r.URL.Query().Get("job_id")
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Plan, error) {
		return readPlans(r.Context(), s.Reader(), jobID, before, limit)
	}, func(p Plan) string { return httpapi.IDText(p.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

// getPlan is GET /content-plans/{id}.
func (sv *Service) getPlan(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", errNoPlan)
	if err != nil {
		return err
	}
	p, err := loadPlan(r.Context(), s.Reader(), id)
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, p)
}

// itemRequest is the optional body of POST /content-plans/{id}/items/{n}/generate.
type itemRequest struct {
	TargetLanguages *[]string `json:"target_languages"`
	Tone            *string   `json:"tone"`
}

// generateItem is POST /content-plans/{id}/items/{n}/generate: item n
// (from 0) becomes a blog_post.generate job, started, checked and charged
// by the blog pillar as POST /blog-posts type ai is. An n the plan does
// not have names no item: 404.
func (sv *Service) generateItem(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", errNoPlan)
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(chi.URLParam(r, "n"))
	if err != nil || n < 0 || strings.Trim(chi.URLParam(r, "n"), "0123456789") != "" {
		return httpapi.NotFound("no such item: n counts the plan's items from 0")
	}
	var req itemRequest
	if r.ContentLength != 0 {
		if err := httpapi.Decode(r, &req); err != nil {
			return err
		}
	}
	job, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (jobs.Job, error) {
		p, err := loadPlan(r.Context(), tx, id)
		if err != nil {
			return jobs.Job{}, err
		}
		if n >= len(p.Items) {
			return jobs.Job{}, httpapi.NotFound(fmt.Sprintf("the plan has %d items (n from 0 to %d)", len(p.Items), len(p.Items)-1))
		}
		it := p.Items[n]
		topic := it.Title
		if it.Summary != "" {
			topic = truncate(it.Title+": "+it.Summary, maxTopic)
		}
		keywords := it.Keywords
		return sv.blog.SubmitGenerate(r.Context(), tx, s, blog.GenerateRequest{
			Topic: topic, LanguageCode: &p.LanguageCode, Keywords: &keywords, TargetLanguages: req.TargetLanguages, Tone: req.Tone,
		})
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, job)
}
