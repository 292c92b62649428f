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
	generated, err := sv.storeGenerated(ctx, projectID, prompt, ref, img)
	if err != nil {
		return "", nil, err
	}
	register := func(ctx context.Context, tx pgx.Tx) error {
		_, err := PutImage(ctx, tx, generated)
		return err
	}
	return generated.URL, register, nil
}

// storeGenerated stores a generated image's bytes at {project}/{key}, the
// key derived from prompt and ref, and returns the Image to register
// (its alt the prompt's first 200 characters).
func (sv *Service) storeGenerated(ctx context.Context, projectID, prompt, ref string, img *ai.Image) (Image, error) {
	key := imageKey(prompt, ref)
	size, err := sv.media.Put(ctx, mediaKey(projectID, key), bytes.NewReader(img.Data))
	if err != nil {
		return Image{}, fmt.Errorf("store image: %w", err)
	}
	alt := prompt
	if utf8.RuneCountInString(alt) > 200 {
		alt = string([]rune(alt)[:200])
	}
	ct := img.ContentType
	return Image{Key: key, URL: sv.MediaURL(projectID, key), Alt: alt, Width: &img.Width, Height: &img.Height,
		ContentType: &ct, SizeBytes: &size, Source: SourceAI}, nil
}
