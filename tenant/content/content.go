// Package content is the content pillar: translation keys, components,
// pages, galleries, images and brand context, their public reads, and the
// translation.batch and image.generate job types.
package content

import (
	"context"
	"net/http"
	"regexp"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// Deps is what the pillar is built with.
type Deps struct {
	AI    ai.Provider
	Media storage.Store
	Queue *queue.Client
	// Events receives content.changed and image.generated.
	Events tenant.Emitter
	// Jobs runs the pillar's job types.
	Jobs *jobs.Runner
	// MediaURL is the base of the media URLs handed out, without /v1
	// (PLINTH_MEDIA_URL, else PLINTH_PUBLIC_URL).
	MediaURL string
	// Fetch gets a user-supplied URL for a URL swap; it must refuse
	// private and loopback addresses (the SSRF guard: GuardedFetch).
	Fetch func(ctx context.Context, rawURL string) (*http.Response, error)
}

// Service is the content pillar.
type Service struct {
	tenant.Base
	ai       ai.Provider
	media    storage.Store
	river    *queue.Client
	events   tenant.Emitter
	mediaURL string
	fetch    func(ctx context.Context, rawURL string) (*http.Response, error)
}

// New builds the pillar and registers its job types with d.Jobs.
func New(d Deps) *Service {
	sv := &Service{ai: d.AI, media: d.Media, river: d.Queue, events: d.Events, mediaURL: d.MediaURL, fetch: d.Fetch}
	d.Jobs.Handle(TypeTranslate, 30*time.Minute, sv.translateJob)
	d.Jobs.Handle(TypeImage, 10*time.Minute, sv.imageJob)
	return sv
}

// Job types of this pillar.
const (
	TypeTranslate = "translation.batch"
	TypeImage     = "image.generate"
)

// Routes mounts the pillar's keyed routes, with the scopes of
// docs/decisions.md section 3: content:* for keys, components and pages;
// galleries:*, images:* and brand:* for the rest.
func (sv *Service) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("content"))
		r.Get("/content/bulk", tenant.Handle(sv.getBulk))
		r.Put("/content", tenant.Handle(sv.putBatch))
		r.Post("/content/translate", tenant.Handle(sv.submitTranslate))
		r.Get("/content/{key}", tenant.Handle(sv.getKey))
		r.Put("/content/{key}", tenant.Handle(sv.putKey))
		r.Delete("/content/{key}", tenant.Handle(sv.deleteKey))
		r.Post("/content/{key}/publish", tenant.Handle(sv.publishKey))
		keyItem.Mount(r, "/content/{key}")

		r.Get("/components", tenant.Handle(sv.listComponents))
		r.Post("/components", tenant.Handle(sv.createComponent))
		r.Get("/components/{slug}", tenant.Handle(sv.getComponent))
		r.Patch("/components/{slug}", tenant.Handle(sv.patchComponent))
		r.Delete("/components/{slug}", tenant.Handle(sv.deleteComponent))
		r.Post("/components/{slug}/publish", tenant.Handle(sv.publishComponent))
		componentItem.Mount(r, "/components/{slug}")

		r.Get("/pages", tenant.Handle(sv.listPages))
		r.Post("/pages", tenant.Handle(sv.createPage))
		r.Get("/pages/{id_or_slug}", tenant.Handle(sv.getPage))
		r.Patch("/pages/{id_or_slug}", tenant.Handle(sv.patchPage))
		r.Delete("/pages/{id_or_slug}", tenant.Handle(sv.deletePage))
		r.Post("/pages/{id_or_slug}/publish", tenant.Handle(sv.publishPage))
		r.Post("/pages/{id_or_slug}/unpublish", tenant.Handle(sv.unpublishPage))
		pageItem.Mount(r, "/pages/{id_or_slug}")
	})
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("galleries"))
		r.Get("/galleries", tenant.Handle(sv.listGalleries))
		r.Post("/galleries", tenant.Handle(sv.createGallery))
		r.Get("/galleries/{slug}", tenant.Handle(sv.getGallery))
		r.Patch("/galleries/{slug}", tenant.Handle(sv.patchGallery))
		r.Delete("/galleries/{slug}", tenant.Handle(sv.deleteGallery))
		r.Post("/galleries/{slug}/publish", tenant.Handle(sv.publishGallery))
		galleryItem.Mount(r, "/galleries/{slug}")
	})
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("images"))
		r.Get("/images", tenant.Handle(sv.listImages))
		r.Post("/images", tenant.Handle(sv.postImage))
		r.Get("/images/{key}", tenant.Handle(sv.getImage))
		r.Put("/images/{key}", tenant.Handle(sv.swapImage))
		r.Delete("/images/{key}", tenant.Handle(sv.deleteImage))
	})
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("brand"))
		r.Get("/brand", tenant.Handle(sv.getBrand))
		r.Patch("/brand", tenant.Handle(sv.patchBrand))
		r.Post("/brand/logo", tenant.Handle(sv.uploadLogo))
		r.Post("/brand/publish", tenant.Handle(sv.publishBrand))
		brandItem.Mount(r, "/brand")
	})
}

// PublicRoutes mounts the pillar's reads of /v1/public. Every answer
// carries Cache-Control and an ETag (304 on If-None-Match).
func (sv *Service) PublicRoutes(r chi.Router) {
	r.Get("/content/bulk", tenant.Handle(sv.publicBulk))
	r.Get("/content/{key}", tenant.Handle(sv.publicKey))
	r.Get("/pages", tenant.Handle(sv.publicPages))
	r.Get("/pages/{slug}", tenant.Handle(sv.publicPage))
	r.Get("/galleries/{slug}", tenant.Handle(sv.publicGallery))
	r.Get("/components/{slug}", tenant.Handle(sv.publicComponent))
	r.Get("/brand", tenant.Handle(sv.publicBrand))
	r.Get("/media/{project}/{key}", tenant.Handle(sv.serveMedia))
}

// KeyPattern is the pattern of content keys and image keys.
var KeyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,199}$`)

// ValidKey reports whether k matches KeyPattern, without the regexp
// engine (a bulk read checks up to 500 keys per request).
func ValidKey(k string) bool {
	if len(k) == 0 || len(k) > 200 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && (c == '.' || c == '_' || c == '-'):
		default:
			return false
		}
	}
	return true
}

// ValueChange is one changed content value.
type ValueChange struct {
	Key           string  `json:"key"`
	Lang          string  `json:"lang"`
	Value         string  `json:"value"`
	PreviousValue *string `json:"previous_value"`
}

// Image is the Image resource.
type Image struct {
	Key         string    `json:"key"`
	URL         string    `json:"url"`
	Alt         string    `json:"alt"`
	Width       *int      `json:"width"`
	Height      *int      `json:"height"`
	ContentType *string   `json:"content_type"`
	SizeBytes   *int64    `json:"size_bytes"`
	Source      string    `json:"source"`
	CreatedAt   time.Time `json:"created_at"`
}

// Image sources.
const (
	SourceUpload = "upload"
	SourceURL    = "url"
	SourceAI     = "ai"
)
