// Package content is the content pillar: translation keys, components,
// pages, galleries, images and brand context, their public reads, and the
// translation.batch and image.generate job types.
package content

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/httpapi"
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
	Jobs      *jobs.Runner
	PublicURL string // base of the URLs handed out, without /v1
	// Fetch gets a user-supplied URL for a URL swap; it must refuse
	// private and loopback addresses (the SSRF guard: GuardedFetch).
	Fetch func(ctx context.Context, rawURL string) (*http.Response, error)
}

// Service is the content pillar.
type Service struct {
	ai        ai.Provider
	media     storage.Store
	river     *queue.Client
	events    tenant.Emitter
	publicURL string
	fetch     func(ctx context.Context, rawURL string) (*http.Response, error)
}

// New builds the pillar and registers its job types with d.Jobs.
func New(d Deps) *Service {
	sv := &Service{ai: d.AI, media: d.Media, river: d.Queue, events: d.Events, publicURL: d.PublicURL, fetch: d.Fetch}
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

		r.Get("/components", tenant.Handle(sv.listComponents))
		r.Post("/components", tenant.Handle(sv.createComponent))
		r.Get("/components/{slug}", tenant.Handle(sv.getComponent))
		r.Patch("/components/{slug}", tenant.Handle(sv.patchComponent))
		r.Delete("/components/{slug}", tenant.Handle(sv.deleteComponent))

		r.Get("/pages", tenant.Handle(sv.listPages))
		r.Post("/pages", tenant.Handle(sv.createPage))
		r.Get("/pages/{id_or_slug}", tenant.Handle(sv.getPage))
		r.Patch("/pages/{id_or_slug}", tenant.Handle(sv.patchPage))
		r.Delete("/pages/{id_or_slug}", tenant.Handle(sv.deletePage))
	})
	r.Group(func(r chi.Router) {
		r.Use(tenant.ReadWrite("galleries"))
		r.Get("/galleries", tenant.Handle(sv.listGalleries))
		r.Post("/galleries", tenant.Handle(sv.createGallery))
		r.Get("/galleries/{slug}", tenant.Handle(sv.getGallery))
		r.Patch("/galleries/{slug}", tenant.Handle(sv.patchGallery))
		r.Delete("/galleries/{slug}", tenant.Handle(sv.deleteGallery))
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
	})
}

// PublicRoutes mounts the pillar's reads of /v1/public. Every answer
// carries Cache-Control and an ETag (304 on If-None-Match).
func (sv *Service) PublicRoutes(r chi.Router) {
	r.Get("/content/bulk", tenant.Handle(sv.publicBulk))
	r.Get("/content/{key}", tenant.Handle(sv.publicKey))
	r.Get("/pages/{slug}", tenant.Handle(sv.publicPage))
	r.Get("/galleries/{slug}", tenant.Handle(sv.publicGallery))
	r.Get("/media/{project}/{key}", tenant.Handle(sv.serveMedia))
}

// KeylessRoutes mounts nothing: every content route has a key or is public.
func (sv *Service) KeylessRoutes(chi.Router) {}

// Workers adds nothing: the pillar's work runs as jobs of the jobs pillar.
func (sv *Service) Workers(*river.Workers) {}

// KeyPattern is the pattern of content keys and image keys.
var KeyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,199}$`)

// ValidKey reports whether k matches KeyPattern, without the regexp
// engine (the public bulk read checks up to 500 keys per request).
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

// SetValue writes key's value in lang. It reports the change, or false
// when the value was already the same (no write, no change).
func SetValue(ctx context.Context, tx pgx.Tx, key, lang, value string) (ValueChange, bool, error) {
	c := ValueChange{Key: key, Lang: lang, Value: value}
	err := tx.QueryRow(ctx, `SELECT value FROM content_values WHERE key = $1 AND lang = $2 FOR UPDATE`, key, lang).Scan(&c.PreviousValue)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return c, false, err
	}
	if c.PreviousValue != nil && *c.PreviousValue == value {
		return c, false, nil
	}
	_, err = tx.Exec(ctx, `INSERT INTO content_values (key, lang, value) VALUES ($1, $2, $3)
		ON CONFLICT (key, lang) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`, key, lang, value)
	return c, err == nil, err
}

// Values returns the values in lang of keys (all of lang's keys when keys
// is nil), by key.
func Values(ctx context.Context, tx pgx.Tx, lang string, keys []string) (map[string]string, error) {
	rows, err := tx.Query(ctx, `SELECT key, value FROM content_values WHERE lang = $1 AND ($2::text[] IS NULL OR key = ANY($2))`, lang, keys)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}

// queryAll runs a query in tx and scans each row of its result with scan.
func queryAll[T any](ctx context.Context, tx pgx.Tx, scan func(pgx.Row) (T, error), sql string, args ...any) ([]T, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (T, error) { return scan(row) })
}

// execFound runs a write in tx; notFound is its error when no row matched.
func execFound(ctx context.Context, tx pgx.Tx, notFound error, sql string, args ...any) error {
	tag, err := tx.Exec(ctx, sql, args...)
	if err == nil && tag.RowsAffected() == 0 {
		return notFound
	}
	return err
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

	// Object is where the bytes are stored: empty for {project}/{key}
	// (generated images), else the object an upload or URL swap wrote.
	Object string `json:"-"`
}

// Image sources.
const (
	SourceUpload = "upload"
	SourceURL    = "url"
	SourceAI     = "ai"
)

// PutImage inserts img, or replaces the image of the same key, and
// returns it as stored.
func PutImage(ctx context.Context, tx pgx.Tx, img Image) (Image, error) {
	err := tx.QueryRow(ctx, `INSERT INTO images (key, url, alt, width, height, content_type, size_bytes, source, object)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''))
		ON CONFLICT (key) DO UPDATE SET url = EXCLUDED.url, alt = EXCLUDED.alt, width = EXCLUDED.width, height = EXCLUDED.height,
			content_type = EXCLUDED.content_type, size_bytes = EXCLUDED.size_bytes, source = EXCLUDED.source, object = EXCLUDED.object
		RETURNING created_at`,
		img.Key, img.URL, img.Alt, img.Width, img.Height, img.ContentType, img.SizeBytes, img.Source, img.Object).Scan(&img.CreatedAt)
	img.CreatedAt = img.CreatedAt.UTC()
	return img, err
}

// GetImage reads the image of key (httpapi.ErrNotFound when absent).
func GetImage(ctx context.Context, tx pgx.Tx, key string) (Image, error) {
	img, err := scanImage(tx.QueryRow(ctx, `SELECT `+imageCols+` FROM images WHERE key = $1`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return img, httpapi.ErrNotFound
	}
	return img, err
}

const imageCols = `key, url, alt, width, height, content_type, size_bytes, source, created_at, COALESCE(object, '')`

func scanImage(row pgx.Row) (Image, error) {
	var img Image
	err := row.Scan(&img.Key, &img.URL, &img.Alt, &img.Width, &img.Height, &img.ContentType, &img.SizeBytes, &img.Source, &img.CreatedAt, &img.Object)
	img.CreatedAt = img.CreatedAt.UTC()
	return img, err
}
