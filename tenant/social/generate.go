package social

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// TypeGenerate is the job type of AI-written social posts.
const TypeGenerate = "social_post.generate"

// Costs of social_post.generate, in hundredths of a credit
// (docs/decisions.md section 7): the post, plus a surcharge per medium.
const (
	PostCost         = 5 * credits.Unit
	ImageSurcharge   = 3 * credits.Unit
	VideoSurcharge   = 40 * credits.Unit
	PremiumSurcharge = 300 * credits.Unit
)

// GenerateCost is the price of an AI post with its generated media.
func GenerateCost(images, videos, premiumVideos int) int64 {
	return PostCost + int64(images)*ImageSurcharge + int64(videos)*VideoSurcharge + int64(premiumVideos)*PremiumSurcharge
}

// Bounds of an AI post's request.
const (
	maxTopic     = 1000
	maxTone      = 100
	maxImages    = 4
	maxTwitter   = 280
	maxAIContent = 2200
)

// GenerateFields are the fields of POST /social-posts that only type "ai" takes.
type GenerateFields struct {
	Topic    *string `json:"topic"`
	Tone     *string `json:"tone"`
	Language *string `json:"language"`
	// Images is how many images to generate for the post (+3 credits each).
	Images *int `json:"images"`
	// Videos and PremiumVideos are how many videos to generate (+40 and
	// +300 credits each); refused while no AI provider makes videos.
	Videos        *int `json:"videos"`
	PremiumVideos *int `json:"premium_videos"`
}

// forbid refuses the AI fields on a manual post.
func (g GenerateFields) forbid(v *httpapi.Validator) {
	for name, set := range map[string]bool{"topic": g.Topic != nil, "tone": g.Tone != nil, "language": g.Language != nil,
		"images": g.Images != nil, "videos": g.Videos != nil, "premium_videos": g.PremiumVideos != nil} {
		v.Check(!set, name, `is only taken by type "ai"`)
	}
}

// generateArgs are the arguments of a social_post.generate job.
type generateArgs struct {
	Topic       string     `json:"topic"`
	Tone        string     `json:"tone"`
	Language    string     `json:"language"`
	Images      int        `json:"images"`
	Platforms   []string   `json:"platforms"`
	AccountIDs  []string   `json:"account_ids"`
	Media       []string   `json:"media"`
	ScheduledAt *time.Time `json:"scheduled_at"`
}

// GenerateResult is the result of social_post.generate.
type GenerateResult struct {
	SocialPostID int64    `json:"social_post_id"`
	Title        string   `json:"title"`
	Platforms    []string `json:"platforms"`
}

func (sv *Service) submitGenerate(w http.ResponseWriter, r *http.Request, s *tenant.Scope, req *CreateRequest) error {
	if req.Topic == nil {
		return httpapi.BadRequest(`missing required field "topic"`)
	}
	var v httpapi.Validator
	v.Check(req.Title == nil, "title", `is written by the AI for type "ai"`)
	v.Check(req.Content == nil, "content", `is written by the AI for type "ai"`)
	a := generateArgs{Topic: strings.TrimSpace(*req.Topic), Tone: strings.TrimSpace(deref(req.Tone)),
		Language: deref(req.Language), Images: deref(req.Images), AccountIDs: deref(req.AccountIDs), Media: deref(req.Media)}
	v.Check(a.Topic != "", "topic", "must not be empty")
	v.Check(utf8.RuneCountInString(a.Topic) <= maxTopic, "topic", fmt.Sprintf("must be at most %d characters", maxTopic))
	v.Check(utf8.RuneCountInString(a.Tone) <= maxTone, "tone", fmt.Sprintf("must be at most %d characters", maxTone))
	if a.Language == "" {
		a.Language = s.Project.DefaultLanguage
	}
	v.Check(len(a.Language) <= 16 && a.Language != "", "language", "must be a language code")
	videos, premium := deref(req.Videos), deref(req.PremiumVideos)
	v.Check(a.Images >= 0 && a.Images <= maxImages, "images", fmt.Sprintf("must be from 0 to %d", maxImages))
	// Neither built-in AI provider makes videos; the surcharges are
	// priced (GenerateCost) for when one does.
	msg := fmt.Sprintf("video generation is not available: the configured AI provider (%s) makes no videos", sv.ai.Name())
	v.Check(videos == 0, "videos", msg)
	v.Check(premium == 0, "premium_videos", msg)
	checkMedia(&v, a.Media)
	v.Check(len(a.Media)+a.Images <= maxMedia, "images", fmt.Sprintf("with media, at most %d items", maxMedia))
	a.ScheduledAt = parseSchedule(&v, req.ScheduledAt)
	steps := []string{"write"}
	if a.Images > 0 {
		steps = append(steps, "images")
	}
	job, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (jobs.Job, error) {
		platforms, err := checkTargets(r.Context(), tx, &v, deref(req.Platforms), a.AccountIDs)
		if err != nil {
			return jobs.Job{}, err
		}
		a.Platforms = platforms
		return jobs.Submit(r.Context(), tx, s, sv.river, jobs.Spec{
			Type: TypeGenerate, Args: a, Steps: steps, WriteScope: "social:write",
			Charges: []jobs.Charge{{Op: "social_post", Cost: GenerateCost(a.Images, videos, premium)}},
		})
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, job)
}

// written is the AI's answer for a post.
type written struct {
	Title    string   `json:"title"`
	Content  string   `json:"content"`
	Hashtags []string `json:"hashtags"`
}

var writtenSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"title":    map[string]any{"type": "string", "description": "a short internal title for the post"},
		"content":  map[string]any{"type": "string", "description": "the text of the post"},
		"hashtags": map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "up to five hashtags, without #"},
	},
	"required":             []string{"title", "content", "hashtags"},
	"additionalProperties": false,
}

// generateJob writes the post, makes its images, and creates the post
// (draft, or scheduled when scheduled_at was given) with the completion.
func (sv *Service) generateJob(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
	var a generateArgs
	if err := run.Decode(&a); err != nil {
		return nil, jobs.Fail(jobs.CodeInvalid, "the job's arguments are unreadable: "+err.Error())
	}
	if err := run.Step(ctx, "write", 10, "Writing the post"); err != nil {
		return nil, err
	}
	limit := maxAIContent
	for _, p := range a.Platforms {
		if p == "twitter" {
			limit = maxTwitter
		}
	}
	p := run.Scope.Project
	prompt := fmt.Sprintf("Write one social media post about: %s\nFor: %s (platforms: %s).\nLanguage: %s.\nAt most %d characters including hashtags.",
		a.Topic, p.Name, strings.Join(a.Platforms, ", "), a.Language, limit)
	if p.Industry != "" {
		prompt += "\nIndustry: " + p.Industry + "."
	}
	if a.Tone != "" {
		prompt += "\nTone: " + a.Tone + "."
	}
	var out written
	if err := sv.ai.JSON(ctx, ai.JSONRequest{
		System: "You write engaging, accurate social media posts for a business. Answer with JSON only.",
		Prompt: prompt, Name: "social_post", Schema: writtenSchema,
	}, &out); err != nil {
		return nil, err
	}
	title := strings.TrimSpace(out.Title)
	if title == "" {
		title = a.Topic
	}
	title = truncate(title, maxTitle)
	content := compose(out.Content, out.Hashtags, limit)

	media := append([]string(nil), a.Media...)
	var registers []func(context.Context, pgx.Tx) error
	for i := range a.Images {
		if err := run.Step(ctx, "images", 40+40*i/a.Images, fmt.Sprintf("Making image %d of %d", i+1, a.Images)); err != nil {
			return nil, err
		}
		img, err := sv.ai.Image(ctx, ai.ImageRequest{Prompt: fmt.Sprintf("%s. Image %d for a social media post: %s", title, i+1, a.Topic), Width: 1080, Height: 1080})
		if err != nil {
			return nil, err
		}
		u, register, err := sv.images.StoreGenerated(ctx, p.ID, title, fmt.Sprintf("%s-%d", run.JobID, i), img)
		if err != nil {
			return nil, err
		}
		media, registers = append(media, u), append(registers, register)
	}
	return func(ctx context.Context, tx pgx.Tx) (any, error) {
		for _, reg := range registers {
			if err := reg(ctx, tx); err != nil {
				return nil, err
			}
		}
		post := Post{Title: title, Content: content, Platforms: a.Platforms, AccountIDs: a.AccountIDs, Media: media, Status: StatusDraft}
		if a.ScheduledAt != nil {
			post.Status, post.ScheduledAt = StatusScheduled, a.ScheduledAt
		}
		post, err := insertPost(ctx, tx, normalise(post))
		if err != nil {
			return nil, err
		}
		if err := sv.enqueuePublish(ctx, tx, run.Scope, post); err != nil {
			return nil, err
		}
		return GenerateResult{SocialPostID: post.ID, Title: post.Title, Platforms: post.Platforms}, nil
	}, nil
}

// compose joins the text and its hashtags within limit characters,
// dropping hashtags first and then cutting the text at a word.
func compose(text string, hashtags []string, limit int) string {
	text = strings.TrimSpace(text)
	var tags []string
	for _, h := range hashtags {
		h = strings.Join(strings.Fields(strings.TrimPrefix(strings.TrimSpace(h), "#")), "")
		if h != "" && len(tags) < 5 {
			tags = append(tags, "#"+h)
		}
	}
	for n := len(tags); n >= 0; n-- {
		s := text
		if n > 0 {
			s += "\n\n" + strings.Join(tags[:n], " ")
		}
		if n == 0 || utf8.RuneCountInString(s) <= limit {
			text = s
			break
		}
	}
	if utf8.RuneCountInString(text) <= limit {
		return text
	}
	r := []rune(text)[:limit-1]
	if i := strings.LastIndexAny(string(r), " \n"); i > limit/2 {
		return strings.TrimSpace(string(r)[:i]) + "…"
	}
	return string(r) + "…"
}
