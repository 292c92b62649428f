package content

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
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
	return MediaURLAt(sv.mediaURL, projectID, key)
}

// MediaURLAt is the URL of a project's media key under the media base
// URL base (PLINTH_MEDIA_URL, else PLINTH_PUBLIC_URL).
func MediaURLAt(base, projectID, key string) string {
	return strings.TrimRight(base, "/") + "/v1/public/media/" + projectID + "/" + key
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

// MediaCSP is the Content-Security-Policy of every media answer: a
// stored file that a browser would render as a document (one an archive
// or a direct write put there) runs in a sandbox, with no script, no
// same-origin access and nothing loaded.
const MediaCSP = "sandbox; default-src 'none'"

// serveMedia serves a stored image (uploaded or generated) of the project
// named in the path, with the public surface's caching headers. Only an
// object below the project's own prefix is served, whatever a row names,
// and with a type of the fixed list the bytes show (mediaType), never
// the type a row states.
func (sv *Service) serveMedia(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	key := chi.URLParam(r, "key")
	var object string
	var err error
	switch {
	case key == LogoKey: // the logo: only where its bytes are
		object, err = logoObject(r.Context(), s.Reader())
	case !KeyPattern.MatchString(key):
		err = httpapi.ErrNotFound
	default:
		var img imageRow
		img, err = getImage(r.Context(), s.Reader(), key, false)
		object = img.object(s.Project.ID)
	}
	if errors.Is(err, httpapi.ErrNotFound) || (err == nil && !storage.InProject(s.Project.ID, object)) {
		return httpapi.NotFound("no such media")
	}
	if err != nil {
		return err
	}
	obj, err := sv.media.Open(r.Context(), object)
	if errors.Is(err, storage.ErrNotFound) {
		return httpapi.NotFound("no such media")
	}
	if err != nil {
		return err
	}
	defer obj.Close()
	ct, err := mediaType(obj)
	if err != nil {
		return err
	}
	h := w.Header()
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", MediaCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", httpapi.PublicCacheControl)
	h.Set("ETag", fmt.Sprintf(`"%x-%x"`, obj.Size(), obj.ModTime().UnixNano()))
	http.ServeContent(w, r, "", obj.ModTime(), obj)
	return nil
}

// mediaType is the Content-Type a stored object is served with: the
// image type its first bytes show when it is one of imageFormats (what
// an upload accepts), else application/octet-stream.
func mediaType(obj storage.Object) (string, error) {
	var head [512]byte // what http.DetectContentType reads
	n, err := io.ReadFull(obj, head[:])
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", err
	}
	if _, err := obj.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	if ct := http.DetectContentType(head[:n]); imageFormats[ct] != "" {
		return ct, nil
	}
	return "application/octet-stream", nil
}
