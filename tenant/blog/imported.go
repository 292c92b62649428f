package blog

import (
	"context"
	"encoding/json"
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
	type post struct {
		id    int64
		texts map[string]map[string]any
	}
	for after := int64(0); ; {
		rows, err := tx.Query(ctx, `SELECT id, texts FROM blog_posts WHERE id > $1 ORDER BY id LIMIT $2`, after, importBatch)
		if err != nil {
			return err
		}
		posts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (post, error) {
			var p post
			err := r.Scan(&p.id, &p.texts)
			return p, err
		})
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
			b, err := json.Marshal(p.texts)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE blog_posts SET texts = $2 WHERE id = $1`, p.id, b); err != nil {
				return fmt.Errorf("blog post %d: %w", p.id, err)
			}
		}
		if len(posts) < importBatch {
			break
		}
		after = posts[len(posts)-1].id
	}
	type term struct {
		id   int64
		name string
	}
	rows, err := tx.Query(ctx, `SELECT id, name FROM blog_terms`)
	if err != nil {
		return err
	}
	terms, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (term, error) {
		var t term
		err := r.Scan(&t.id, &t.name)
		return t, err
	})
	if err != nil {
		return fmt.Errorf("blog terms: %w", err)
	}
	for _, t := range terms {
		if c := cleanText(t.name); c != t.name {
			if _, err := tx.Exec(ctx, `UPDATE blog_terms SET name = $2 WHERE id = $1`, t.id, c); err != nil {
				return fmt.Errorf("blog term %d: %w", t.id, err)
			}
		}
	}
	return nil
}
