// Package social is the social pillar: accounts connected through OAuth
// (tokens sealed at rest), posts written by hand or by AI
// (social_post.generate), and their publishing to every platform, now or
// on schedule, with an outcome per platform.
//
// # Post states and transitions
//
//	draft      → scheduled   scheduled_at set (create or PATCH)
//	scheduled  → draft       scheduled_at set to null (PATCH)
//	draft, scheduled, failed, partially_published
//	           → publishing  POST /social-posts/{id}/publish, or the
//	                         post's scheduled job once scheduled_at has come
//	publishing → published            every target succeeded
//	publishing → partially_published  some succeeded, some failed
//	publishing → failed               every target failed
//
// Publishing again a failed or partially published post retries only the
// targets not yet published. social_post.published fires when a publish
// succeeded on at least one platform, social_post.failed when all failed;
// each in the transaction that ends the publish.
package social

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/oauth"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/ssrf"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/jobs"
	"github.com/plinth-dev/plinth/tenant/schedule"
)

// ImageStore keeps a generated image in the project's media library and
// returns its public URL; register runs in the transaction that commits
// the post using it.
type ImageStore interface {
	StoreGenerated(ctx context.Context, projectID, prompt, ref string, img *ai.Image) (url string, register func(context.Context, pgx.Tx) error, err error)
}

// Event topics of the pillar.
const (
	TopicPublished = "social_post.published"
	TopicFailed    = "social_post.failed"
)

// Deps is what the pillar is built with.
type Deps struct {
	Config config.Config
	Plane  tenant.ControlPlane
	Queue  *queue.Client
	AI     ai.Provider
	// Images stores generated images in the project's media library
	// (content.Service).
	Images ImageStore
	// Events receives social_post.published and social_post.failed.
	Events tenant.Emitter
	// Jobs runs social_post.generate.
	Jobs   *jobs.Runner
	Logger *slog.Logger
}

// Service is the social pillar.
type Service struct {
	tenant.Base
	plane tenant.ControlPlane
	// apps are the platforms with an OAuth app configured, by name.
	apps   map[string]*App
	river  *queue.Client
	ai     ai.Provider
	images ImageStore
	events tenant.Emitter
	// scheduled starts publishing scheduled posts at their time.
	scheduled *schedule.Schedule[startScheduled]
	// publicURL is the externally visible base (PLINTH_PUBLIC_URL).
	publicURL string
	// media fetches user-supplied media URLs (YouTube uploads).
	media *http.Client
	// stateTTL bounds an OAuth flow from connect to callback.
	stateTTL time.Duration
	// publishTimeout bounds one platform's publish of one post.
	publishTimeout time.Duration
	logger         *slog.Logger

	states *oauth.Signer
	sealer *oauth.Sealer
}

// New builds the pillar from the configuration (the platforms' OAuth
// apps, PLINTH_SOCIAL_*), with keys derived from the server secret, and
// registers social_post.generate with d.Jobs.
func New(d Deps) *Service {
	cfg := d.Config
	client := &http.Client{Timeout: 2 * time.Minute}
	sv := &Service{
		plane:          d.Plane,
		apps:           LoadApps(cfg.Getenv, cfg.PublicURL, client),
		river:          d.Queue,
		ai:             d.AI,
		images:         d.Images,
		events:         d.Events,
		publicURL:      cfg.PublicURL,
		media:          ssrf.NewClient(ssrf.Options{Dev: cfg.Dev, Timeout: 30 * time.Minute}),
		stateTTL:       10 * time.Minute,
		publishTimeout: 10 * time.Minute,
		logger:         d.Logger,
		states:         oauth.NewSigner(d.Plane.Secret()),
		sealer:         oauth.NewSealer(d.Plane.Secret()),
	}
	sv.scheduled = &schedule.Schedule[startScheduled]{Queue: d.Queue, ScheduledSQL: scheduledPostsSQL,
		Claim: claimScheduled, Claimed: sv.startClaimed}
	if d.Jobs != nil {
		d.Jobs.Handle(TypeGenerate, 15*time.Minute, sv.generateJob)
	}
	return sv
}

// Routes mounts the pillar's keyed routes. Posts take social:read and
// social:write; publishing social:publish; accounts and OAuth
// social:connect (docs/decisions.md section 3).
func (sv *Service) Routes(r chi.Router) {
	acc := r.With(tenant.RequireScope("social:connect"))
	acc.Get("/social-accounts", tenant.Handle(sv.listAccounts))
	acc.Delete("/social-accounts/{id}", tenant.Handle(sv.deleteAccount))
	acc.Post("/social-accounts/connect/{platform}", tenant.Handle(sv.connect))

	posts := r.With(tenant.ReadWrite("social"))
	posts.Get("/social-posts", tenant.Handle(sv.listPosts))
	posts.Post("/social-posts", tenant.Handle(sv.createPost))
	posts.Get("/social-posts/{id}", tenant.Handle(sv.getPost))
	posts.Patch("/social-posts/{id}", tenant.Handle(sv.patchPost))
	posts.Delete("/social-posts/{id}", tenant.Handle(sv.deletePost))
	r.With(tenant.RequireScope("social:publish")).Post("/social-posts/{id}/publish", tenant.Handle(sv.publish))
}

// Workers adds the publisher and the worker of scheduled posts.
func (sv *Service) Workers(w *river.Workers) {
	river.AddWorker(w, &PublishWorker{sv: sv})
	sv.scheduled.AddWorker(w)
}

// KeylessRoutes mounts the routes a browser reaches with no key: the
// OAuth callback (its signed, single-use state authenticates it) and the
// default page a connection ends on.
func (sv *Service) KeylessRoutes(r chi.Router) {
	r.Get("/social-accounts/callback/{platform}", httpapi.H(sv.callback))
	r.Get("/social-accounts/connected", sv.connectedPage)
}
