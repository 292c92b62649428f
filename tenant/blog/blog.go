// Package blog is the blog pillar: posts with a text per language,
// categories, tags, the job that publishes a scheduled post at its time,
// the AI jobs blog_post.generate and the translation of a post, and the
// public reads of published posts (docs/decisions.md section 5, "Blog").
//
// # States and transitions of a post
//
//	draft, scheduled, archived → published  POST /publish, PATCH status, or the post's
//	                                        scheduled job when scheduled_at has come (blog_post.published)
//	any                        → scheduled  POST /schedule {scheduled_at} (in the future)
//	any                        → archived   POST /archive
//	any                        → draft      POST /unpublish or PATCH status draft
//
// Publishing an already published post changes nothing and fires nothing,
// unless it has a draft.
//
// # Drafts over live (drafts.go)
//
// PATCH ?draft=true (or autosave=true) and PUT .../translations/{lang}
// ?draft=true write the post's draft, not the live post; only POST
// /publish makes a draft live (whole, or some languages), never PATCH
// status published nor the scheduled job. Versions: GET .../versions,
// GET .../versions/{n}, POST .../versions/{n}/restore (into the draft).
package blog

import (
	"context"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/jobs"
	"github.com/plinth-dev/plinth/tenant/schedule"
)

// Event topics of the pillar.
const (
	TopicPublished  = "blog_post.published"
	TopicTranslated = "blog_post.translated"
)

// Job types and handlers of the pillar.
const (
	TypeGenerate = "blog_post.generate"
	// TypeTranslate is the contract's job type of POST /blog-posts/{id}/translate;
	// content keys share it, so the post's handler is named apart.
	TypeTranslate    = "translation.batch"
	handlerTranslate = "blog_post.translate"
)

// Deps is what the pillar is built with.
type Deps struct {
	Queue *queue.Client
	AI    ai.Provider
	Media storage.Store
	// MediaURL is the public URL of a stored image of a project
	// (content.Service.MediaURL): generated featured images are
	// registered in the project's images like any generated image.
	MediaURL func(projectID, key string) string
	// Events receives blog_post.published and blog_post.translated.
	Events tenant.Emitter
	// Jobs runs the pillar's job types.
	Jobs *jobs.Runner
}

// Service is the blog pillar.
type Service struct {
	tenant.Base
	river *queue.Client
	ai    ai.Provider
	media storage.Store
	// scheduled publishes scheduled posts at their time.
	scheduled *schedule.Schedule[publishScheduled]
	mediaURL  func(projectID, key string) string
	events    tenant.Emitter
}

// publishScheduled names the kind of the scheduled-publish job
// (PublishScheduledArgs).
type publishScheduled struct{}

func (publishScheduled) Kind() string { return "blog.publish_scheduled" }

// New builds the pillar and registers its job types with d.Jobs.
func New(d Deps) *Service {
	sv := &Service{river: d.Queue, ai: d.AI, media: d.Media, mediaURL: d.MediaURL, events: d.Events}
	sv.scheduled = &schedule.Schedule[publishScheduled]{Queue: d.Queue, ScheduledSQL: scheduledPostsSQL,
		Claim: claimScheduled, Claimed: sv.publishClaimed}
	d.Jobs.Handle(TypeGenerate, 20*time.Minute, sv.generateJob)
	d.Jobs.Handle(handlerTranslate, 30*time.Minute, sv.translateJob)
	return sv
}

// Routes mounts the pillar's keyed routes: blog:read for GET, blog:write
// for the rest (publish included).
func (sv *Service) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("blog"))
		r.Get("/blog-posts", tenant.Handle(sv.listPosts))
		r.Post("/blog-posts", tenant.Handle(sv.createPost))
		r.Get("/blog-posts/{ref}", tenant.Handle(sv.getPost))
		r.Patch("/blog-posts/{ref}", tenant.Handle(sv.patchPost))
		r.Delete("/blog-posts/{ref}", tenant.Handle(sv.deletePost))
		r.Post("/blog-posts/{ref}/publish", tenant.Handle(sv.publishPost))
		r.Post("/blog-posts/{ref}/schedule", tenant.Handle(sv.schedulePost))
		r.Post("/blog-posts/{ref}/archive", tenant.Handle(sv.archivePost))
		r.Post("/blog-posts/{ref}/unpublish", tenant.Handle(sv.unpublishPost))
		postItem.Mount(r, "/blog-posts/{ref}")
		r.Put("/blog-posts/{ref}/translations/{lang}", tenant.Handle(sv.putTranslation))
		r.Post("/blog-posts/{ref}/translate", tenant.Handle(sv.submitTranslate))

		r.Get("/categories", tenant.Handle(listCategories))
		r.Post("/categories", tenant.Handle(createCategory))
		r.Patch("/categories/{id}", tenant.Handle(patchCategory))
		r.Delete("/categories/{id}", tenant.Handle(deleteCategory))

		r.Get("/tags", tenant.Handle(listTags))
		r.Post("/tags", tenant.Handle(createTag))
		r.Delete("/tags/{id}", tenant.Handle(deleteTag))
	})
}

// PublicRoutes mounts the keyless reads of published posts.
func (sv *Service) PublicRoutes(r chi.Router) {
	r.Get("/blog-posts", tenant.Handle(sv.publicList))
	r.Get("/blog-posts/{slug}", tenant.Handle(sv.publicGet))
}

// Workers adds the worker of scheduled posts.
func (sv *Service) Workers(w *river.Workers) { sv.scheduled.AddWorker(w) }

// emit records an event when an emitter is wired.
func (sv *Service) emit(ctx context.Context, tx pgx.Tx, s *tenant.Scope, topic string, data any) error {
	if sv.events == nil {
		return nil
	}
	return sv.events.Emit(ctx, tx, s, topic, data)
}
