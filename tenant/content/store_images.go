package content

import (
	"context"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
)

// imageRow is a row of images: the Image and where its bytes are stored.
type imageRow struct {
	Image
	// Object is empty for {project}/{key} (generated images), else the
	// object an upload or URL swap wrote.
	Object string
}

// object is where the row's bytes are stored.
func (row imageRow) object(projectID string) string {
	if row.Object != "" {
		return row.Object
	}
	return mediaKey(projectID, row.Key)
}

// noImage is the failure of an image key that names no image.
func noImage(key string) error { return httpapi.NotFound("no image with the key " + key) }

const imageCols = `key, url, alt, width, height, content_type, size_bytes, source, created_at, COALESCE(object, '')`

func scanImage(row pgx.Row) (imageRow, error) {
	var r imageRow
	err := row.Scan(&r.Key, &r.URL, &r.Alt, &r.Width, &r.Height, &r.ContentType, &r.SizeBytes, &r.Source, &r.CreatedAt, &r.Object)
	r.CreatedAt = r.CreatedAt.UTC()
	return r, err
}

// PutImage inserts img, or replaces the image of the same key, and
// returns it as stored; its bytes are at {project}/{key}.
func PutImage(ctx context.Context, tx pgx.Tx, img Image) (_ Image, err error) {
	defer httpapi.Wrap(&err, "PutImage")
	row, err := putImage(ctx, tx, imageRow{Image: img})
	return row.Image, err
}

// putImage inserts row, or replaces the image of the same key, and
// returns it as stored.
func putImage(ctx context.Context, tx pgx.Tx, row imageRow) (_ imageRow, err error) {
	defer httpapi.Wrap(&err, "putImage(%q)", row.Key)
	err = tx.QueryRow(ctx, `INSERT INTO images (key, url, alt, width, height, content_type, size_bytes, source, object)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULLIF($9, ''))
		ON CONFLICT (key) DO UPDATE SET url = EXCLUDED.url, alt = EXCLUDED.alt, width = EXCLUDED.width, height = EXCLUDED.height,
			content_type = EXCLUDED.content_type, size_bytes = EXCLUDED.size_bytes, source = EXCLUDED.source, object = EXCLUDED.object
		RETURNING created_at`,
		row.Key, row.URL, row.Alt, row.Width, row.Height, row.ContentType, row.SizeBytes, row.Source, row.Object).Scan(&row.CreatedAt)
	row.CreatedAt = row.CreatedAt.UTC()
	return row, err
}

// insertImage inserts row; a taken key is a 409 that says how to replace
// the image.
func insertImage(ctx context.Context, tx pgx.Tx, row imageRow) (_ imageRow, err error) {
	defer httpapi.Wrap(&err, "insertImage(%q)", row.Key)
	stored, err := scanImage(tx.QueryRow(ctx, `INSERT INTO images (key, url, alt, width, height, content_type, size_bytes, source, object)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING `+imageCols,
		row.Key, row.URL, row.Alt, row.Width, row.Height, row.ContentType, row.SizeBytes, row.Source, row.Object))
	return stored, unique(err, httpapi.Conflict(httpapi.CodeConflict,
		"an image with the key "+row.Key+" exists; PUT /images/"+row.Key+" replaces it by URL, or DELETE it first"))
}

// freeImageKey derives from base an image key no image has, with -2, -3,
// … . Derivations are serialised per project, as pickSlug's are.
func freeImageKey(ctx context.Context, tx pgx.Tx, base string) (_ string, err error) {
	defer httpapi.Wrap(&err, "freeImageKey")
	base = slug.Make(base)
	if len(base) > 190 {
		base = strings.TrimRight(base[:190], "-")
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext(current_schema() || ':image-key'))`); err != nil {
		return "", err
	}
	return slug.Unique(ctx, base, func(ctx context.Context, k string) (bool, error) {
		var ok bool
		err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM images WHERE key = $1)`, k).Scan(&ok)
		return ok, err
	})
}

// GetImage reads the image of key (a failure of kind httpapi.ErrNotFound
// when absent).
func GetImage(ctx context.Context, tx tenant.Querier, key string) (_ Image, err error) {
	defer httpapi.Wrap(&err, "GetImage(%s)", key)
	row, err := getImage(ctx, tx, key, false)
	return row.Image, err
}

// getImage reads the image of key; lock holds the row until tx ends.
func getImage(ctx context.Context, tx tenant.Querier, key string, lock bool) (_ imageRow, err error) {
	defer httpapi.Wrap(&err, "getImage(%s)", key)
	q := `SELECT ` + imageCols + ` FROM images WHERE key = $1`
	if lock {
		q += ` FOR UPDATE`
	}
	row, err := scanImage(tx.QueryRow(ctx, q, key))
	return row, noRows(err, noImage(key))
}

// listImages reads up to limit images of source (any when empty) after
// the position after.
func listImages(ctx context.Context, tx tenant.Querier, after timeCursor, source string, limit int) (_ []Image, err error) {
	defer httpapi.Wrap(&err, "listImages")
	scan := func(row pgx.Row) (Image, error) {
		r, err := scanImage(row)
		return r.Image, err
	}
	return queryAll(ctx, tx, scan, `SELECT `+imageCols+` FROM images
		WHERE ($1::timestamptz IS NULL OR (created_at, key) < ($1, $2)) AND ($3 = '' OR source = $3)
		ORDER BY created_at DESC, key DESC LIMIT $4`, after.at, after.name, source, limit)
}

// deleteImage deletes the image of key and returns it.
func deleteImage(ctx context.Context, tx pgx.Tx, key string) (_ imageRow, err error) {
	defer httpapi.Wrap(&err, "deleteImage(%s)", key)
	row, err := scanImage(tx.QueryRow(ctx, `DELETE FROM images WHERE key = $1 RETURNING `+imageCols, key))
	return row, noRows(err, noImage(key))
}

// imageObjects calls fn with the key and object of each image that
// names an object, by key.
func imageObjects(ctx context.Context, tx pgx.Tx, fn func(key, object string)) (err error) {
	defer httpapi.Wrap(&err, "imageObjects")
	var key, object string
	rows, err := tx.Query(ctx, `SELECT key, object FROM images WHERE object IS NOT NULL ORDER BY key`)
	if err != nil {
		return err
	}
	_, err = pgx.ForEachRow(rows, []any{&key, &object}, func() error {
		fn(key, object)
		return nil
	})
	return err
}

// reconcileImages gives each image the URL urlBase + its key and the
// content type, size and dimensions of its object in objects (keyed by
// the full object key, the project's prefix and the image key when the
// row names none; null when objects lacks it).
func reconcileImages(ctx context.Context, tx pgx.Tx, projectID, urlBase string, objects map[string]ImportedObject) (err error) {
	defer httpapi.Wrap(&err, "reconcileImages")
	n := len(objects)
	keys, types, sizes, widths, heights := make([]string, 0, n), make([]string, 0, n), make([]int64, 0, n), make([]int32, 0, n), make([]int32, 0, n)
	for k, o := range objects {
		keys, types, sizes = append(keys, k), append(types, o.ContentType), append(sizes, o.Size)
		widths, heights = append(widths, int32(o.Width)), append(heights, int32(o.Height))
	}
	_, err = tx.Exec(ctx, `WITH m AS (SELECT * FROM unnest($3::text[], $4::text[], $5::bigint[], $6::int[], $7::int[]) AS m (object, ct, size, w, h))
		UPDATE images i SET url = $2 || i.key, content_type = m.ct, size_bytes = m.size, width = m.w, height = m.h
		FROM images j LEFT JOIN m ON m.object = COALESCE(j.object, $1 || '/' || j.key)
		WHERE i.key = j.key`, projectID, urlBase, keys, types, sizes, widths, heights)
	return err
}

// setLogoURL serves the brand's logo, when it has one, at url.
func setLogoURL(ctx context.Context, tx pgx.Tx, url string) (err error) {
	defer httpapi.Wrap(&err, "setLogoURL")
	_, err = tx.Exec(ctx, `UPDATE brand SET logo_url = CASE WHEN logo_object IS NULL THEN NULL ELSE $1 END`, url)
	return err
}
