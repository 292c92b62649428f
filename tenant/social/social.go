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
//	                         scheduler once scheduled_at is due
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

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/config"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/oauth"
	"github.com/plinth-dev/plinth/internal/queue"
	"github.com/plinth-dev/plinth/internal/ssrf"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// Emitter records a webhook event in the caller's transaction.
type Emitter interface {
	Emit(ctx context.Context, tx pgx.Tx, s *tenant.Scope, topic string, data any) error
}

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

// Service holds what the social routes, jobs and workers use.
type Service struct {
	Central tenant.ControlPlane
	// Apps are the platforms with an OAuth app configured, by name.
	Apps   map[string]*App
	River  *queue.Client
	AI     ai.Provider
	Images ImageStore
	// Events, when set, receives social_post.published and social_post.failed.
	Events Emitter
	// PublicURL is the externally visible base (PLINTH_PUBLIC_URL).
	PublicURL string
	// Media fetches user-supplied media URLs (YouTube uploads).
	Media *http.Client
	// StateTTL bounds an OAuth flow from connect to callback.
	StateTTL time.Duration
	// PublishTimeout bounds one platform's publish of one post.
	PublishTimeout time.Duration
	Logger         *slog.Logger

	states *oauth.Signer
	sealer *oauth.Sealer
}

// New builds the service from the configuration: the platforms' OAuth
// apps (PLINTH_SOCIAL_*), keys derived from the server secret.
func New(cfg config.Config, c tenant.ControlPlane, logger *slog.Logger) *Service {
	client := &http.Client{Timeout: 2 * time.Minute}
	return &Service{
		Central:        c,
		Apps:           LoadApps(cfg.Getenv, cfg.PublicURL, client),
		PublicURL:      cfg.PublicURL,
		Media:          ssrf.NewClient(ssrf.Options{Dev: cfg.Dev, Timeout: 30 * time.Minute}),
		StateTTL:       10 * time.Minute,
		PublishTimeout: 10 * time.Minute,
		Logger:         logger,
		states:         oauth.NewSigner(c.Secret()),
		sealer:         oauth.NewSealer(c.Secret()),
	}
}

// Register adds social_post.generate to the job runner.
func (sv *Service) Register(r *jobs.Runner) {
	r.Handle(TypeGenerate, 15*time.Minute, sv.generateJob)
}

// Mount adds the pillar's routes to the authenticated /v1 router. Posts
// take social:read and social:write; publishing social:publish; accounts
// and OAuth social:connect (decisions.md section 3).
func (sv *Service) Mount(r chi.Router) {
	acc := r.With(tenant.RequireScope("social:connect"))
	acc.Get("/social-accounts", tenant.Handle(sv.listAccounts))
	acc.Delete("/social-accounts/{id}", tenant.Handle(sv.deleteAccount))
	acc.Post("/social-accounts/connect/{platform}", tenant.Handle(sv.connect))

	posts := r.With(tenant.Pillar("social"))
	posts.Get("/social-posts", tenant.Handle(sv.listPosts))
	posts.Post("/social-posts", tenant.Handle(sv.createPost))
	posts.Get("/social-posts/{id}", tenant.Handle(sv.getPost))
	posts.Patch("/social-posts/{id}", tenant.Handle(sv.patchPost))
	posts.Delete("/social-posts/{id}", tenant.Handle(sv.deletePost))
	r.With(tenant.RequireScope("social:publish")).Post("/social-posts/{id}/publish", tenant.Handle(sv.publish))
}

// MountKeyless adds the routes a browser reaches with no key: the OAuth
// callback (its signed, single-use state authenticates it) and the
// default page a connection ends on.
func (sv *Service) MountKeyless(r chi.Router) {
	r.Get("/social-accounts/callback/{platform}", httpapi.H(sv.callback))
	r.Get("/social-accounts/connected", sv.connectedPage)
}
