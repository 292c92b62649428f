package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/credits"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/jobs"
)

// ImageCost is the price of one generated image, in hundredths of a credit.
const ImageCost = 10 * credits.Unit

// Bounds of a generated image.
const (
	minImageSide     = 64
	maxImageSide     = 2048
	defaultImageSide = 1024
	maxPromptLen     = 4000
)

// GenerateImageRequest is the JSON body of POST /images.
type GenerateImageRequest struct {
	Prompt string `json:"prompt" required:"true"`
	Width  *int   `json:"width"`
	Height *int   `json:"height"`
}

type imageArgs struct {
	Prompt string `json:"prompt"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// ImageResult is an image.generate job's result.
type ImageResult struct {
	URL    string `json:"url"`
	Key    string `json:"key"`
	Width  int    `json:"width"`
	Height int    `json:"height"`
}

// submitImage starts image.generate for a JSON body. (The multipart upload
// form of POST /images belongs to the content API.)
func (sv *Service) submitImage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var req GenerateImageRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	a := imageArgs{Prompt: strings.TrimSpace(req.Prompt), Width: defaultImageSide, Height: defaultImageSide}
	var v httpapi.Validator
	v.Check(a.Prompt != "", "prompt", "must not be empty")
	v.Check(utf8.RuneCountInString(a.Prompt) <= maxPromptLen, "prompt", fmt.Sprintf("must be at most %d characters", maxPromptLen))
	side := func(field string, p *int, dst *int) {
		if p == nil {
			return
		}
		v.Check(*p >= minImageSide && *p <= maxImageSide, field, fmt.Sprintf("must be from %d to %d pixels", minImageSide, maxImageSide))
		*dst = *p
	}
	side("width", req.Width, &a.Width)
	side("height", req.Height, &a.Height)
	if err := v.Err(); err != nil {
		return err
	}
	job, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (jobs.Job, error) {
		return jobs.Submit(r.Context(), tx, s, sv.river, jobs.Spec{
			Type: TypeImage, Args: a, Charges: []jobs.Charge{{Op: "image", Cost: ImageCost}},
			Steps: []string{"generate", "store"}, WriteScope: "images:write",
		})
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusAccepted, job)
}

// imageKey names a generated image after its prompt and, for uniqueness,
// its job: the same job always writes the same key.
func imageKey(prompt, jobID string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(prompt) {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case b.Len() > 0 && !strings.HasSuffix(b.String(), "-"):
			b.WriteByte('-')
		}
	}
	sum := sha256.Sum256([]byte(jobID))
	base := strings.Trim(b.String(), "-")
	if base == "" {
		base = "image"
	}
	return base + "-" + hex.EncodeToString(sum[:5])
}

func mediaKey(projectID, key string) string { return projectID + "/" + key }

// MediaURL is where the public surface serves a stored image.
func (sv *Service) MediaURL(projectID, key string) string {
	return strings.TrimRight(sv.publicURL, "/") + "/v1/public/media/" + projectID + "/" + key
}

// imageJob generates the image, stores it under a key derived from the
// job, and registers it at completion.
func (sv *Service) imageJob(ctx context.Context, run *jobs.Run) (jobs.Commit, error) {
	var a imageArgs
	if err := run.Decode(&a); err != nil {
		return nil, jobs.Fail(jobs.CodeInvalid, "the job's arguments are unreadable: "+err.Error())
	}
	if err := run.Step(ctx, "generate", 10, "Generating the image"); err != nil {
		return nil, err
	}
	img, err := sv.ai.Image(ctx, ai.ImageRequest{Prompt: a.Prompt, Width: a.Width, Height: a.Height})
	if err != nil {
		return nil, err
	}
	if err := run.Step(ctx, "store", 80, "Storing the image"); err != nil {
		return nil, err
	}
	// Storing again under the same key on a re-run is harmless; the row
	// that makes the image visible is written with the completion.
	generated, err := sv.storeGenerated(ctx, run.Scope.Project.ID, a.Prompt, run.JobID, img)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, tx pgx.Tx) (any, error) {
		stored, err := PutImage(ctx, tx, generated)
		if err != nil {
			return nil, err
		}
		if err := sv.events.Emit(ctx, tx, run.Scope, TopicGenerated, stored); err != nil {
			return nil, err
		}
		return ImageResult{URL: stored.URL, Key: stored.Key, Width: img.Width, Height: img.Height}, nil
	}, nil
}

// serveMedia serves a stored image (uploaded or generated) of the project
// named in the path, with the public surface's caching headers.
func (sv *Service) serveMedia(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	key := chi.URLParam(r, "key")
	var img imageRow
	var err error
	switch {
	case key == LogoKey: // the logo: only where its bytes are
		img.Object, err = logoObject(r.Context(), s.Reader())
	case !KeyPattern.MatchString(key):
		err = httpapi.ErrNotFound
	default:
		img, err = getImage(r.Context(), s.Reader(), key, false)
	}
	if errors.Is(err, httpapi.ErrNotFound) || (err == nil && key == LogoKey && img.Object == "") {
		return httpapi.NotFound("no such media")
	}
	if err != nil {
		return err
	}
	obj, err := sv.media.Open(r.Context(), img.object(s.Project.ID))
	if errors.Is(err, storage.ErrNotFound) {
		return httpapi.NotFound("no such media")
	}
	if err != nil {
		return err
	}
	defer obj.Close()
	if img.ContentType != nil && *img.ContentType != "" {
		w.Header().Set("Content-Type", *img.ContentType)
	}
	w.Header().Set("Cache-Control", httpapi.PublicCacheControl)
	w.Header().Set("ETag", fmt.Sprintf(`"%x-%x"`, obj.Size(), obj.ModTime().UnixNano()))
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", obj.ModTime(), obj)
	return nil
}
