// Package blog is the blog pillar: posts with a text per language,
// categories, tags, the scheduler that publishes scheduled posts, the AI
// jobs blog_post.generate and the translation of a post, and the public
// reads of published posts (decisions.md section 5 "Blog").
//
// # States and transitions of a post
//
//	draft, scheduled, archived → published  POST /publish, PATCH status, or the scheduler
//	                                        when scheduled_at has come (blog_post.published)
//	any                        → scheduled  POST /schedule {scheduled_at} (in the future)
//	any                        → archived   POST /archive
//	any                        → draft      PATCH status draft
//
// Publishing an already published post changes nothing and fires nothing.
package blog

import (
	"context"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/jobs"
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

// Emitter records a webhook event inside the caller's transaction
// (webhook.Outbox).
type Emitter interface {
	Emit(ctx context.Context, tx pgx.Tx, s *tenant.Scope, topic string, data any) error
}

// Service holds what the blog routes, jobs and scheduler use.
type Service struct {
	River    *queue.Client
	AI       ai.Provider
	Media    storage.Store
	Projects tenant.ControlPlane
	// MediaURL is the public URL of a stored image of a project
	// (content.Service.MediaURL): generated featured images are
	// registered in the project's images like any generated image.
	MediaURL func(projectID, key string) string
	// Events receives blog_post.published and blog_post.translated.
	Events Emitter
}

// Register adds the pillar's job handlers to the runner.
func (sv *Service) Register(r *jobs.Runner) {
	r.Handle(TypeGenerate, 20*time.Minute, sv.generateJob)
	r.Handle(handlerTranslate, 30*time.Minute, sv.translateJob)
}

// Mount adds the pillar's routes to the authenticated /v1 router: blog:read
// for GET, blog:write for the rest (publish included).
func (sv *Service) Mount(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(tenant.Pillar("blog"))
		r.Get("/blog-posts", tenant.Handle(sv.listPosts))
		r.Post("/blog-posts", tenant.Handle(sv.createPost))
		r.Get("/blog-posts/{ref}", tenant.Handle(sv.getPost))
		r.Patch("/blog-posts/{ref}", tenant.Handle(sv.patchPost))
		r.Delete("/blog-posts/{ref}", tenant.Handle(sv.deletePost))
		r.Post("/blog-posts/{ref}/publish", tenant.Handle(sv.publishPost))
		r.Post("/blog-posts/{ref}/schedule", tenant.Handle(sv.schedulePost))
		r.Post("/blog-posts/{ref}/archive", tenant.Handle(sv.archivePost))
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

// MountPublic adds the keyless reads of published posts to /v1/public.
func (sv *Service) MountPublic(r chi.Router) {
	r.Get("/blog-posts", tenant.Handle(sv.publicList))
	r.Get("/blog-posts/{slug}", tenant.Handle(sv.publicGet))
}

// emit records an event when an emitter is wired.
func (sv *Service) emit(ctx context.Context, tx pgx.Tx, s *tenant.Scope, topic string, data any) error {
	if sv.Events == nil {
		return nil
	}
	return sv.Events.Emit(ctx, tx, s, topic, data)
}
