package blog

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"html"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/content"
	"github.com/plinth-dev/plinth/tenant/credits"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// Prices in hundredths of a credit.
const (
	GenerateCost          = 60 * credits.Unit
	TranslateLanguageCost = 7 * credits.Unit
)

// Bounds of a generation request.
const (
	maxTopic     = 500
	maxKeywords  = 20
	maxKeyword   = 100
	maxTone      = 100
	maxLanguages = 20
)

// GenerateSteps are the steps of blog_post.generate, in order (the contract's).
var GenerateSteps = []string{"research", "write", "image", "translate", "seo"}

// generateArgs are the arguments of a blog_post.generate job.
type generateArgs struct {
	Topic           string   `json:"topic"`
	Language        string   `json:"language"`
	TargetLanguages []string `json:"target_languages"`
	Keywords        []string `json:"keywords"`
	Tone            string   `json:"tone"`
}

// GenerateResult is a blog_post.generate job's result.
type GenerateResult struct {
	PostID int64  `json:"post_id"`
	Slug   string `json:"slug"`
	Title  string `json:"title"`
}

// checkLanguages checks the target languages of a generation or a
// translation: valid codes, none twice, not the source language.
func checkLanguages(v *httpapi.Validator, field string, langs []string, source string) {
	v.Check(len(langs) <= maxLanguages, field, fmt.Sprintf("must list at most %d language codes", maxLanguages))
	seen := map[string]bool{}
	for _, l := range langs {
		checkLanguage(v, field, l)
		v.Check(l != source, field, fmt.Sprintf("%q is the post's own language", l))
		v.Check(!seen[l], field, fmt.Sprintf("%q is listed twice", l))
		seen[l] = true
	}
}

// languageCharges are the charges of translating into n languages.
func languageCharges(n int) []jobs.Charge {
	c := make([]jobs.Charge, n)
	for i := range c {
		c[i] = jobs.Charge{Op: "translate_language", Cost: TranslateLanguageCost}
	}
	return c
}

// GenerateRequest is what blog_post.generate starts from: the fields of
// POST /blog-posts type ai (nil: the default).
type GenerateRequest struct {
	Topic           string
	LanguageCode    *string
	TargetLanguages *[]string
	Keywords        *[]string
	Tone            *string
}

// submitGenerate answers POST /blog-posts type ai.
func (sv *Service) submitGenerate(w http.ResponseWriter, r *http.Request, s *tenant.Scope, req *createRequest) error {
	if req.Topic == nil {
		return httpapi.BadRequest(`missing required field "topic" for a post of type ai`)
	}
	g := GenerateRequest{Topic: *req.Topic, LanguageCode: req.LanguageCode, TargetLanguages: req.TargetLanguages, Keywords: req.Keywords, Tone: req.Tone}
	job, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (jobs.Job, error) {
		return sv.SubmitGenerate(r.Context(), tx, s, g)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, job)
}

// SubmitGenerate checks req and starts blog_post.generate in tx: 60
// credits plus 7 per target language, charged now and refunded if the
// job fails. Other pillars start posts through it (a content plan's
// item), so every generated post is checked and charged alike. It takes
// the project's job admission lock: call it last in tx.
func (sv *Service) SubmitGenerate(ctx context.Context, tx pgx.Tx, s *tenant.Scope, req GenerateRequest) (jobs.Job, error) {
	a := generateArgs{Topic: strings.TrimSpace(req.Topic), Language: s.Project.DefaultLanguage, TargetLanguages: []string{}, Keywords: []string{}}
	var v httpapi.Validator
	checkLen(&v, "topic", &a.Topic, maxTopic, true)
	if req.LanguageCode != nil {
		a.Language = *req.LanguageCode
		checkLanguage(&v, "language_code", a.Language)
	}
	if req.TargetLanguages != nil {
		a.TargetLanguages = *req.TargetLanguages
		checkLanguages(&v, "target_languages", a.TargetLanguages, a.Language)
	}
	if req.Keywords != nil {
		v.Check(len(*req.Keywords) <= maxKeywords, "keywords", fmt.Sprintf("must list at most %d keywords", maxKeywords))
		for _, k := range *req.Keywords {
			k = strings.TrimSpace(k)
			v.Check(k != "" && utf8.RuneCountInString(k) <= maxKeyword, "keywords", fmt.Sprintf("each must be 1 to %d characters", maxKeyword))
			a.Keywords = append(a.Keywords, k)
		}
	}
	if req.Tone != nil {
		a.Tone = strings.TrimSpace(*req.Tone)
		checkLen(&v, "tone", &a.Tone, maxTone, false)
	}
	if err := v.Err(); err != nil {
		return jobs.Job{}, err
	}
	charges := append([]jobs.Charge{{Op: "blog_post", Cost: GenerateCost}}, languageCharges(len(a.TargetLanguages))...)
	return jobs.Submit(ctx, tx, s, sv.river, jobs.Spec{
		Type: TypeGenerate, Args: a, Charges: charges, Steps: GenerateSteps, WriteScope: "blog:write",
	})
}

// Schemas of the structured answers the generation asks for.
var (
	researchSchema = object(map[string]any{
		"angle":    map[string]any{"type": "string"},
		"outline":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "minItems": 3, "maxItems": 6},
		"keywords": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "maxItems": 8},
	})
	postSchema = object(map[string]any{
		"title":   map[string]any{"type": "string", "maxLength": 120},
		"excerpt": map[string]any{"type": "string", "maxLength": 300},
		"sections": map[string]any{"type": "array", "minItems": 3, "maxItems": 8, "items": object(map[string]any{
			"heading": map[string]any{"type": "string"},
			"body":    map[string]any{"type": "string"},
		})},
	})
	seoSchema = object(map[string]any{
		"meta_title":       map[string]any{"type": "string", "maxLength": 60},
		"meta_description": map[string]any{"type": "string", "maxLength": 160},
	})
)

// object is a strict JSON Schema object of props, all required.
func object(props map[string]any) map[string]any {
	req := make([]string, 0, len(props))
	for k := range props {
		req = append(req, k)
	}
	return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
}

type research struct {
	Angle    string   `json:"angle"`
	Outline  []string `json:"outline"`
	Keywords []string `json:"keywords"`
}

type draft struct {
	Title    string `json:"title"`
	Excerpt  string `json:"excerpt"`
	Sections []struct {
		Heading string `json:"heading"`
		Body    string `json:"body"`
	} `json:"sections"`
}

type seo struct {
	MetaTitle       string `json:"meta_title"`
	MetaDescription string `json:"meta_description"`
}

// html renders the draft's sections as the post's content.
func (d draft) html() string {
	var b strings.Builder
	for _, s := range d.Sections {
		if h := strings.TrimSpace(s.Heading); h != "" {
			b.WriteString("<h2>" + html.EscapeString(h) + "</h2>\n")
		}
		for _, para := range strings.Split(s.Body, "\n\n") {
			if para = strings.TrimSpace(para); para != "" {
				b.WriteString("<p>" + html.EscapeString(para) + "</p>\n")
			}
		}
	}
	return b.String()
}

// generateJob researches, writes, illustrates, translates and optimises a
// post, all outside any transaction; the post, its texts, its image and
// the events are written at completion, once.
func (sv *Service) generateJob(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
	var a generateArgs
	if err := run.Decode(&a); err != nil {
		return nil, jobs.Fail(jobs.CodeInvalid, "the job's arguments are unreadable: "+err.Error())
	}
	p := run.Scope.Project
	site := p.Name
	if p.Industry != "" {
		site += ", " + p.Industry
	}
	system := fmt.Sprintf("You write blog posts for the website %q, in the language with code %s.", site, a.Language)
	if a.Tone != "" {
		system += " Tone: " + a.Tone + "."
	}

	if err := run.Step(ctx, "research", 5, "Researching the topic"); err != nil {
		return nil, err
	}
	prompt := "Research a blog post about: " + a.Topic
	if len(a.Keywords) > 0 {
		prompt += "\nKeywords to cover: " + strings.Join(a.Keywords, ", ")
	}
	prompt += "\nGive the post's angle, an outline of its sections and its search keywords."
	var res research
	if err := sv.ai.JSON(ctx, ai.JSONRequest{System: system, Prompt: prompt, Name: "research", Schema: researchSchema}, &res); err != nil {
		return nil, err
	}

	if err := run.Step(ctx, "write", 20, "Writing the post"); err != nil {
		return nil, err
	}
	prompt = fmt.Sprintf("Write a blog post about: %s\nAngle: %s\nOutline:\n- %s\nGive a title, a one-paragraph excerpt and the sections (a heading and plain-text paragraphs separated by blank lines).",
		a.Topic, res.Angle, strings.Join(res.Outline, "\n- "))
	var d draft
	if err := sv.ai.JSON(ctx, ai.JSONRequest{System: system, Prompt: prompt, Name: "post", Schema: postSchema}, &d); err != nil {
		return nil, err
	}
	orig := Translation{Lang: a.Language, Title: cleanText(d.Title), Excerpt: cleanText(d.Excerpt), Content: cleanHTML(d.html())}
	if strings.TrimSpace(orig.Title) == "" {
		orig.Title = cleanText(a.Topic)
	}

	if err := run.Step(ctx, "image", 45, "Illustrating the post"); err != nil {
		return nil, err
	}
	img, err := sv.ai.Image(ctx, ai.ImageRequest{Prompt: "Featured image for a blog post titled: " + orig.Title, Width: 1536, Height: 1024})
	if err != nil {
		return nil, err
	}
	imgKey := imageKey(orig.Title, run.JobID)
	// Stored again under the same key on a re-run: harmless; the image is
	// registered with the post at completion.
	size, err := sv.media.Put(ctx, p.ID+"/"+imgKey, bytes.NewReader(img.Data)) // content's layout of generated media
	if err != nil {
		return nil, fmt.Errorf("store image: %w", err)
	}

	texts := map[string]Translation{}
	if len(a.TargetLanguages) > 0 {
		if err := run.Step(ctx, "translate", 60, "Translating the post"); err != nil {
			return nil, err
		}
	}
	for i, lang := range a.TargetLanguages {
		if err := run.Progress(ctx, 60+25*i/len(a.TargetLanguages), "Translating into "+lang); err != nil {
			return nil, err
		}
		out, err := sv.ai.Translate(ctx, ai.TranslateRequest{From: a.Language, To: lang, Texts: []string{orig.Title, orig.Excerpt, orig.Content}, Context: site})
		if err != nil {
			return nil, err
		}
		texts[lang] = Translation{Lang: lang, Title: cleanText(out[0]), Excerpt: cleanText(out[1]), Content: cleanHTML(out[2])}
	}

	if err := run.Step(ctx, "seo", 85, "Writing the search metadata"); err != nil {
		return nil, err
	}
	var meta seo
	prompt = fmt.Sprintf("Write the search-engine title (at most 60 characters) and description (at most 160) of this blog post.\nTitle: %s\nExcerpt: %s\nKeywords: %s",
		orig.Title, orig.Excerpt, strings.Join(slices.Concat(a.Keywords, res.Keywords), ", "))
	if err := sv.ai.JSON(ctx, ai.JSONRequest{System: system, Prompt: prompt, Name: "seo", Schema: seoSchema}, &meta); err != nil {
		return nil, err
	}
	orig.MetaTitle, orig.MetaDescription = cleanText(meta.MetaTitle), cleanText(meta.MetaDescription)
	for _, lang := range a.TargetLanguages {
		out, err := sv.ai.Translate(ctx, ai.TranslateRequest{From: a.Language, To: lang, Texts: []string{orig.MetaTitle, orig.MetaDescription}, Context: site})
		if err != nil {
			return nil, err
		}
		t := texts[lang]
		t.MetaTitle, t.MetaDescription = cleanText(out[0]), cleanText(out[1])
		texts[lang] = t
	}

	return func(ctx context.Context, tx pgx.Tx) (any, error) {
		url := sv.mediaURL(p.ID, imgKey)
		ct := img.ContentType
		if _, err := content.PutImage(ctx, tx, content.Image{Key: imgKey, URL: url, Alt: truncate(orig.Title, 200),
			Width: &img.Width, Height: &img.Height, ContentType: &ct, SizeBytes: &size, Source: content.SourceAI}); err != nil {
			return nil, err
		}
		row := &postRow{Status: StatusDraft, Language: a.Language, FeaturedImage: &url}
		id, err := insertPost(ctx, tx, row, nil, orig)
		if err != nil {
			return nil, err
		}
		for _, lang := range a.TargetLanguages {
			if err := putText(ctx, tx, id, texts[lang]); err != nil {
				return nil, err
			}
		}
		if err := sv.emitTranslated(ctx, tx, run.Scope, id, a.TargetLanguages); err != nil {
			return nil, err
		}
		return GenerateResult{PostID: id, Slug: row.Slug, Title: orig.Title}, nil
	}, nil
}

// emitTranslated fires blog_post.translated once per language, with the
// post in that language.
func (sv *Service) emitTranslated(ctx context.Context, tx pgx.Tx, s *tenant.Scope, postID int64, langs []string) error {
	if len(langs) == 0 {
		return nil
	}
	p, err := loadPostID(ctx, tx, postID, false)
	if err != nil {
		return err
	}
	if err := markPosts(ctx, tx, []*postRow{p}); err != nil { // the event is the GET resource
		return err
	}
	for _, lang := range langs {
		if err := sv.emit(ctx, tx, s, TopicTranslated, toAPIPost(p, []string{lang})); err != nil {
			return err
		}
	}
	return nil
}

// imageKey names a post's generated image after its title and, for
// uniqueness, its job: the same job always writes the same key.
func imageKey(title, jobID string) string {
	base := slug.Make(title)
	if len(base) > 40 {
		base = strings.Trim(base[:40], "-")
	}
	sum := sha256.Sum256([]byte(jobID))
	return "blog-" + base + "-" + hex.EncodeToString(sum[:5])
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
