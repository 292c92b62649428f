package content

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/storage"
	"github.com/plinth-dev/plinth/tenant"
	"github.com/plinth-dev/plinth/tenant/credits"
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

// dropObject removes a stored object of the project that no row refers
// to any more. A failure only leaves an unreachable file behind, so it is
// logged. An object outside the project's prefix is never removed: a row
// that names one (an imported archive's, issue 33) is not the project's
// to delete.
func (sv *Service) dropObject(ctx context.Context, projectID, object string) {
	if object == "" {
		return
	}
	if !storage.InProject(projectID, object) {
		httpapi.Logger(ctx).WarnContext(ctx, "media object outside the project's prefix left alone", "project", projectID, "object", object)
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
	var object string
	img, err := tenant.TxV(ctx, s, func(tx pgx.Tx) (imageRow, error) {
		if !explicit {
			var err error
			if key, err = freeImageKey(ctx, tx, keyFromFilename(up.filename)); err != nil {
				return imageRow{}, err
			}
		}
		object = objectKey(pid, key)
		size, err := sv.media.Put(ctx, object, bytes.NewReader(up.img.data))
		if err != nil {
			return imageRow{}, fmt.Errorf("store upload: %w", err)
		}
		img, err := insertImage(ctx, tx, imageRow{Object: object, Image: Image{Key: key, URL: sv.MediaURL(pid, key), Alt: up.fields["alt"],
			Width: &up.img.width, Height: &up.img.height, ContentType: &up.img.contentType, SizeBytes: &size, Source: SourceUpload}})
		if err != nil {
			return img, err
		}
		return img, credits.Charge(ctx, tx, s, "image_register", RegisterCost, "image:"+key)
	})
	if err != nil {
		sv.dropObject(ctx, pid, object)
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, img.Image)
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
	fetched := imageRow{Object: objectKey(pid, key), Image: Image{Key: key, URL: sv.MediaURL(pid, key), Width: &got.width, Height: &got.height,
		ContentType: &got.contentType, SizeBytes: &size, Source: SourceURL}}
	if _, err := sv.media.Put(ctx, fetched.Object, bytes.NewReader(got.data)); err != nil {
		return fmt.Errorf("store fetched image: %w", err)
	}
	var previous string
	img, err := tenant.TxV(ctx, s, func(tx pgx.Tx) (imageRow, error) {
		img := fetched
		old, err := getImage(ctx, tx, key, true)
		switch {
		case err == nil:
			previous = old.object(pid)
			img.Alt = old.Alt
		case !errors.Is(err, httpapi.ErrNotFound):
			return img, err
		}
		if req.Alt != nil {
			img.Alt = *req.Alt
		}
		if err := credits.Charge(ctx, tx, s, "image_register", RegisterCost, "image:"+key); err != nil {
			return img, err
		}
		return putImage(ctx, tx, img)
	})
	if err != nil {
		sv.dropObject(ctx, pid, fetched.Object)
		return err
	}
	sv.dropObject(ctx, pid, previous)
	return httpapi.JSON(w, http.StatusOK, img.Image)
}

func (sv *Service) listImages(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	source := r.URL.Query().Get("source")
	list, err := httpapi.ListOf(r, decodeTimeCursor, func(after timeCursor, limit int) ([]Image, error) {
		// Checked once the page is read, so a bad limit or cursor is
		// reported first.
		if source != "" && source != SourceUpload && source != SourceURL && source != SourceAI {
			return nil, httpapi.Invalid("source", "must be upload, url or ai")
		}
		return listImages(r.Context(), s.Reader(), after, source, limit)
	}, func(img Image) string { return timeText(img.CreatedAt, img.Key) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

func (sv *Service) getImage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	img, err := GetImage(r.Context(), s.Reader(), chi.URLParam(r, "key"))
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, img)
}

func (sv *Service) deleteImage(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	img, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (imageRow, error) {
		return deleteImage(r.Context(), tx, chi.URLParam(r, "key"))
	})
	if err != nil {
		return err
	}
	sv.dropObject(r.Context(), s.Project.ID, img.object(s.Project.ID))
	return httpapi.NoContent(w)
}
