package content

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/storage"
)

// This file is what an archive's import (provisioning/archive, run by
// the control plane) asks of the pillar: the media an archive brings are
// checked as an upload is, and the rows that name them are made to agree
// with what was stored, never trusted as the archive states them.

// ImageInfo is what InspectImage reads of an image's bytes.
type ImageInfo struct {
	ContentType   string
	Width, Height int
}

// InspectImage checks data as an upload is checked: a PNG, JPEG, GIF or
// WebP by its sniffed type, whose header decodes as that format, at most
// 16384 pixels a side. The error says why not. (The size bound, MaxUpload,
// is the caller's: it must not read more.)
func InspectImage(data []byte) (ImageInfo, error) {
	img, err := inspect(data)
	return ImageInfo{ContentType: img.contentType, Width: img.width, Height: img.height}, err
}

// ImportedObject is a media object an import stored below the new
// project's prefix: its inspection and size.
type ImportedObject struct {
	ImageInfo
	Size int64
}

// ReconcileImport makes the media rows of a project restored from an
// archive agree with what the import stored, in tx (bound to the
// project's schema, at this release's level). Every image and the brand
// logo must name an object below the project's own prefix: a row that
// names another (another project's image, an export archive) refuses the
// archive, as an error of kind httpapi.ErrInvalid. Each image's
// content_type, size_bytes, width and height become those of its object
// in objects (keyed by the full object key; null when the archive did not
// hold it), and the images' and the logo's URLs this server's media URLs
// under mediaBase.
func ReconcileImport(ctx context.Context, tx pgx.Tx, projectID, mediaBase string, objects map[string]ImportedObject) error {
	var foreign error
	err := imageObjects(ctx, tx, func(key, object string) {
		if foreign == nil && !storage.InProject(projectID, object) {
			foreign = httpapi.Fail(httpapi.ErrInvalid, fmt.Sprintf("image %s: its object %q is not below the project's media", key, object))
		}
	})
	if err != nil || foreign != nil {
		return errors.Join(err, foreign)
	}
	logo, err := logoObject(ctx, tx)
	if err != nil && !errors.Is(err, httpapi.ErrNotFound) { // no brand row: no logo
		return err
	}
	if logo != "" && !storage.InProject(projectID, logo) {
		return httpapi.Fail(httpapi.ErrInvalid, fmt.Sprintf("brand: its logo object %q is not below the project's media", logo))
	}

	if err := reconcileImages(ctx, tx, projectID, MediaURLAt(mediaBase, projectID, ""), objects); err != nil {
		return fmt.Errorf("images: %w", err)
	}
	if err := setLogoURL(ctx, tx, MediaURLAt(mediaBase, projectID, LogoKey)); err != nil {
		return fmt.Errorf("brand: %w", err)
	}
	return nil
}
