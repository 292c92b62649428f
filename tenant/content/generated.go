package content

import (
	"bytes"
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/ai"
)

// StoreGenerated keeps an image another pillar's job generated (a social
// post's image) in the project's media: it stores the bytes now, under a
// key derived from prompt and ref (the same ref always gives the same
// key, so a re-run overwrites rather than duplicates), and returns its
// public URL and the registration of the Image (source ai), to run in the
// transaction that commits the job's effects.
func (sv *Service) StoreGenerated(ctx context.Context, projectID, prompt, ref string, img *ai.Image) (string, func(context.Context, pgx.Tx) error, error) {
	key := imageKey(prompt, ref)
	size, err := sv.media.Put(ctx, mediaKey(projectID, key), bytes.NewReader(img.Data))
	if err != nil {
		return "", nil, fmt.Errorf("store image: %w", err)
	}
	alt := prompt
	if utf8.RuneCountInString(alt) > 200 {
		alt = string([]rune(alt)[:200])
	}
	url := sv.MediaURL(projectID, key)
	register := func(ctx context.Context, tx pgx.Tx) error {
		ct := img.ContentType
		_, err := PutImage(ctx, tx, Image{Key: key, URL: url, Alt: alt, Width: &img.Width, Height: &img.Height,
			ContentType: &ct, SizeBytes: &size, Source: SourceAI})
		return err
	}
	return url, register, nil
}
