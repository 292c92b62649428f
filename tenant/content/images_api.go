package content

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/credits"
	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant"
)

// RegisterCost is the price of registering an image by upload or URL swap
// (image_register).
const RegisterCost = 1 * credits.Unit

// fetchTimeout bounds the fetch of a URL swap.
const fetchTimeout = 20 * time.Second

// postImage is POST /images: a multipart upload registers an image, a
// JSON body starts image.generate.
func (sv *Service) postImage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	if isMultipart(r) {
		return sv.uploadImage(w, r, s)
	}
	return sv.submitImage(w, r, s)
}

// objectOf is where img's bytes are stored.
func objectOf(projectID string, img Image) string {
	if img.Object != "" {
		return img.Object
	}
	return mediaKey(projectID, img.Key)
}

// dropObject removes a stored object that no row refers to any more. A
// failure only leaves an unreachable file behind, so it is logged.
func (sv *Service) dropObject(ctx context.Context, object string) {
	if object == "" {
		return
	}
	if err := sv.media.Delete(context.WithoutCancel(ctx), object); err != nil && !errors.Is(err, storage.ErrNotFound) {
		httpapi.Logger(ctx).WarnContext(ctx, "media object left behind", "object", object, "err", err)
	}
}

func checkAlt(v *httpapi.Validator, alt string) {
	v.Check(utf8.RuneCountInString(alt) <= maxAltLen, "alt", fmt.Sprintf("must be at most %d characters", maxAltLen))
	v.Check(utf8.ValidString(alt), "alt", "must be valid UTF-8")
}

func (sv *Service) uploadImage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	up, err := readUpload(r, "key", "alt")
	if err != nil {
		return err
	}
	key, explicit := up.fields["key"]
	var v httpapi.Validator
	if explicit {
		checkKey(&v, "key", key)
	}
	checkAlt(&v, up.fields["alt"])
	if err := v.Err(); err != nil {
		return err
	}
	ctx := r.Context()
	pid := s.Project.ID
	// The bytes go to a fresh object first; the row that makes them
	// visible is written with the charge, and the object is removed again
	// if that transaction fails.
	img := Image{URL: "", Alt: up.fields["alt"], Width: &up.img.width, Height: &up.img.height,
		ContentType: &up.img.contentType, Source: SourceUpload}
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		if !explicit {
			base := slug.Make(keyFromFilename(up.filename))
			if len(base) > 190 {
				base = strings.TrimRight(base[:190], "-")
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':image-key'))`); err != nil {
				return err
			}
			if key, err = slug.Unique(ctx, base, func(ctx context.Context, k string) (bool, error) {
				var ok bool
				err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM images WHERE key = $1)`, k).Scan(&ok)
				return ok, err
			}); err != nil {
				return err
			}
		}
		img.Key, img.URL, img.Object = key, sv.MediaURL(pid, key), objectKey(pid, key)
		size, err := sv.media.Put(ctx, img.Object, bytes.NewReader(up.img.data))
		if err != nil {
			return fmt.Errorf("store upload: %w", err)
		}
		img.SizeBytes = &size
		stored, err := scanImage(tx.QueryRow(ctx, `INSERT INTO images (key, url, alt, width, height, content_type, size_bytes, source, object)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+imageCols,
			img.Key, img.URL, img.Alt, img.Width, img.Height, img.ContentType, img.SizeBytes, img.Source, img.Object))
		if err != nil {
			return err
		}
		img = stored
		return credits.Charge(ctx, tx, s, "image_register", RegisterCost, "image:"+key)
	})
	if err != nil {
		if img.Object != "" {
			sv.dropObject(ctx, img.Object)
		}
		if ae := httpapi.AsError(err); ae.Status == http.StatusConflict && ae.Code == httpapi.CodeConflict {
			return httpapi.Conflict(httpapi.CodeConflict, "an image with the key "+key+" exists; PUT /images/"+key+" replaces it by URL, or DELETE it first")
		}
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, img)
}

// SwapRequest is the body of PUT /images/{key}.
type SwapRequest struct {
	URL *string `json:"url" required:"true"`
	Alt *string `json:"alt"`
}

// fetchImage downloads raw through the SSRF-guarded client and checks that
// it is an image; the error is meant for the user (a 422 on url).
func (sv *Service) fetchImage(ctx context.Context, raw string) (checkedImage, error) {
	if sv.fetch == nil {
		return checkedImage{}, errors.New("cannot be fetched: this server fetches no URLs")
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	res, err := sv.fetch(ctx, raw)
	if err != nil {
		return checkedImage{}, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return checkedImage{}, fmt.Errorf("answered HTTP %d, not 200 with an image", res.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(res.Body, MaxUpload+1))
	if err != nil {
		return checkedImage{}, errors.New("could not be read to the end")
	}
	if len(data) > MaxUpload {
		return checkedImage{}, errors.New("points to a file larger than 10 MiB")
	}
	img, err := inspect(data)
	if err != nil {
		return img, errors.New("points to content that " + err.Error())
	}
	return img, nil
}

// swapImage is PUT /images/{key}: the image at url is fetched, verified and
// stored, and key (created if new) serves it from then on.
func (sv *Service) swapImage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	key := chi.URLParam(r, "key")
	var req SwapRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	var v httpapi.Validator
	checkKey(&v, "key", key)
	v.Check(len(*req.URL) <= maxURLLen, "url", fmt.Sprintf("must be at most %d characters", maxURLLen))
	if req.Alt != nil {
		checkAlt(&v, *req.Alt)
	}
	if err := v.Err(); err != nil {
		return err
	}
	ctx := r.Context()
	got, err := sv.fetchImage(ctx, *req.URL)
	if err != nil {
		return httpapi.Invalid("url", err.Error())
	}
	pid := s.Project.ID
	size := int64(len(got.data))
	img := Image{Key: key, URL: sv.MediaURL(pid, key), Width: &got.width, Height: &got.height,
		ContentType: &got.contentType, SizeBytes: &size, Source: SourceURL, Object: objectKey(pid, key)}
	if _, err := sv.media.Put(ctx, img.Object, bytes.NewReader(got.data)); err != nil {
		return fmt.Errorf("store fetched image: %w", err)
	}
	var previous string
	err = s.Tx(ctx, func(tx pgx.Tx) error {
		old, err := scanImage(tx.QueryRow(ctx, `SELECT `+imageCols+` FROM images WHERE key = $1 FOR UPDATE`, key))
		switch {
		case err == nil:
			previous = objectOf(pid, old)
			img.Alt = old.Alt
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if req.Alt != nil {
			img.Alt = *req.Alt
		}
		if err := credits.Charge(ctx, tx, s, "image_register", RegisterCost, "image:"+key); err != nil {
			return err
		}
		img, err = PutImage(ctx, tx, img)
		return err
	})
	if err != nil {
		sv.dropObject(ctx, img.Object)
		return err
	}
	sv.dropObject(ctx, previous)
	return httpapi.JSON(w, http.StatusOK, img)
}

func (sv *Service) listImages(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	page, after, keyAfter, err := timePage(r)
	if err != nil {
		return err
	}
	source := r.URL.Query().Get("source")
	if source != "" && source != SourceUpload && source != SourceURL && source != SourceAI {
		return httpapi.Invalid("source", "must be upload, url or ai")
	}
	var out []Image
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		out, err = queryAll(r.Context(), tx, scanImage, `SELECT `+imageCols+` FROM images
			WHERE ($1::timestamptz IS NULL OR (created_at, key) < ($1, $2)) AND ($3 = '' OR source = $3)
			ORDER BY created_at DESC, key DESC LIMIT $4`, after, keyAfter, source, page.Limit+1)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, httpapi.NewList(out, page.Limit, func(img Image) string {
		return makeTimeCursor(img.CreatedAt, img.Key)
	}))
}

func (sv *Service) getImage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	key := chi.URLParam(r, "key")
	var img Image
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		img, err = GetImage(r.Context(), tx, key)
		return err
	})
	if errors.Is(err, httpapi.ErrNotFound) {
		return httpapi.NotFound("no image with the key " + key)
	}
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, img)
}

func (sv *Service) deleteImage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	key := chi.URLParam(r, "key")
	var img Image
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		img, err = scanImage(tx.QueryRow(r.Context(), `DELETE FROM images WHERE key = $1 RETURNING `+imageCols, key))
		if errors.Is(err, pgx.ErrNoRows) {
			return httpapi.NotFound("no image with the key " + key)
		}
		return err
	})
	if err != nil {
		return err
	}
	sv.dropObject(r.Context(), objectOf(s.Project.ID, img))
	return httpapi.NoContent(w)
}
