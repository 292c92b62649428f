// Package sites is the pillar that writes a website from a brief: the job
// content_plan.generate (POST /content-plans: a plan of blog posts, stored
// and listable, whose items become blog_post.generate jobs) and the job
// website.generate (POST /websites/generate: brand, components, pages and
// their content keys in every language). It owns no content of its own:
// what it generates is written through the content and blog pillars, with
// their checks and events (docs/decisions.md section 5, "Websites").
package sites

import (
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/blog"
	"github.com/plinth-dev/plinth/tenant/content"
	"github.com/plinth-dev/plinth/tenant/credits"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// Job types of the pillar.
const (
	TypePlan    = "content_plan.generate"
	TypeWebsite = "website.generate"
)

// Prices in hundredths of a credit (docs/decisions.md section 5).
const (
	PlanCost              = 20 * credits.Unit
	WebsiteCost           = 200 * credits.Unit
	TranslateLanguageCost = blog.TranslateLanguageCost
)

// Deps is what the pillar is built with.
type Deps struct {
	AI    ai.Provider
	Queue *queue.Client
	// Content writes the generated site (its values emit content.changed).
	Content *content.Service
	// Blog starts the blog_post.generate job of a plan's item.
	Blog *blog.Service
	// Jobs runs the pillar's job types.
	Jobs *jobs.Runner
}

// Service is the sites pillar.
type Service struct {
	tenant.Base
	ai      ai.Provider
	river   *queue.Client
	content *content.Service
	blog    *blog.Service
}

// New builds the pillar and registers its job types with d.Jobs.
func New(d Deps) *Service {
	sv := &Service{ai: d.AI, river: d.Queue, content: d.Content, blog: d.Blog}
	d.Jobs.Handle(TypePlan, 10*time.Minute, sv.planJob)
	d.Jobs.Handle(TypeWebsite, 30*time.Minute, sv.websiteJob)
	return sv
}

// Routes mounts the pillar's keyed routes: content plans lead to blog
// posts, so they take blog:read and blog:write; a website is content,
// content:write.
func (sv *Service) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("blog"))
		r.Get("/content-plans", tenant.Handle(sv.listPlans))
		r.Post("/content-plans", tenant.Handle(sv.submitPlan))
		r.Get("/content-plans/{id}", tenant.Handle(sv.getPlan))
		r.Post("/content-plans/{id}/items/{n}/generate", tenant.Handle(sv.generateItem))
	})
	r.Group(func(r chi.Router) {
		r.Use(tenant.RequireScope("content:write"))
		r.Post("/websites/generate", tenant.Handle(sv.submitWebsite))
	})
}
