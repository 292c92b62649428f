package blog

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// importBatch is how many posts SanitizeImported reads at a time.
const importBatch = 200

// SanitizeImported passes the texts of a project restored from an archive
// through the sanitisers a write uses, in tx (bound to the project's
// schema, at this release's level): each post's content through the
// policy of stored HTML (cleanHTML), its other texts and every category
// and tag name through cleanText. An archive's markup is never kept as
// the archive states it (issue 33); a text a write stored is unchanged.
func SanitizeImported(ctx context.Context, tx pgx.Tx) error {
	cleaners := map[string]func(string) string{"content": cleanHTML, "title": cleanText, "excerpt": cleanText,
		"meta_title": cleanText, "meta_description": cleanText}
	for after := int64(0); ; {
		posts, err := postTexts(ctx, tx, after, importBatch)
		if err != nil {
			return fmt.Errorf("blog posts: %w", err)
		}
		for _, p := range posts {
			changed := false
			for _, t := range p.texts {
				for field, clean := range cleaners {
					if s, ok := t[field].(string); ok && clean(s) != s {
						t[field], changed = clean(s), true
					}
				}
			}
			if !changed {
				continue
			}
			if err := setPostTexts(ctx, tx, p.id, p.texts); err != nil {
				return fmt.Errorf("blog post %d: %w", p.id, err)
			}
		}
		if len(posts) < importBatch {
			break
		}
		after = posts[len(posts)-1].id
	}
	terms, err := termNames(ctx, tx)
	if err != nil {
		return fmt.Errorf("blog terms: %w", err)
	}
	for _, t := range terms {
		if c := cleanText(t.name); c != t.name {
			if err := setTermName(ctx, tx, t.id, c); err != nil {
				return fmt.Errorf("blog term %d: %w", t.id, err)
			}
		}
	}
	return nil
}
