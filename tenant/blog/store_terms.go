package blog

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

const termColumns = `id, name, slug`

func scanTerm(row pgx.CollectableRow) (Term, error) {
	var t Term
	err := row.Scan(&t.ID, &t.Name, &t.Slug)
	return t, err
}

// lockTerms returns those of ids that are terms of kind and holds them
// (FOR KEY SHARE) until the transaction ends.
func lockTerms(ctx context.Context, tx pgx.Tx, kind string, ids []int64) (_ []int64, err error) {
	defer httpapi.Wrap(&err, "lockTerms(%s)", kind)
	rows, err := tx.Query(ctx, `SELECT id FROM blog_terms WHERE kind = $1 AND id = ANY($2) FOR KEY SHARE`, kind, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[int64])
}

// categoryByID reads the category with id (nil: none, or deleted).
func categoryByID(ctx context.Context, q tenant.Querier, id *int64) (_ *Term, err error) {
	defer httpapi.Wrap(&err, "categoryByID")
	if id == nil {
		return nil, nil
	}
	var c Term
	err = q.QueryRow(ctx, `SELECT `+termColumns+` FROM blog_terms WHERE kind = 'category' AND id = $1`, *id).Scan(&c.ID, &c.Name, &c.Slug)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// insertTerm inserts a category or tag (kind) named name, under the slug
// given or else one derived from name (pickSlug).
func insertTerm(ctx context.Context, tx pgx.Tx, kind, name string, given *string) (_ Term, err error) {
	defer httpapi.Wrap(&err, "insertTerm(%s)", kind)
	t := Term{Name: name}
	if t.Slug, err = pickSlug(ctx, tx, kind, given, name, 0); err != nil {
		return Term{}, err
	}
	err = tx.QueryRow(ctx, `INSERT INTO blog_terms (kind, name, slug) VALUES ($1, $2, $3) RETURNING id`,
		kind, t.Name, t.Slug).Scan(&t.ID)
	return t, err
}

// deleteTerm deletes a category (its posts keep no category) or a tag
// (taken off its posts); httpapi.ErrNotFound when absent.
func deleteTerm(ctx context.Context, tx pgx.Tx, kind string, id int64) (err error) {
	defer httpapi.Wrap(&err, "deleteTerm(%s, %d)", kind, id)
	tag, err := tx.Exec(ctx, `DELETE FROM blog_terms WHERE kind = $1 AND id = $2`, kind, id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return httpapi.ErrNotFound
	}
	if kind == spaceTag { // a category is unset by its foreign key
		_, err = tx.Exec(ctx, `UPDATE blog_posts SET tag_ids = array_remove(tag_ids, $1::bigint) WHERE $1::bigint = ANY (tag_ids)`, id)
	}
	return err
}

// categories returns up to limit categories older than the one with id
// before (0: from the newest).
func categories(ctx context.Context, tx tenant.Querier, before int64, limit int) (_ []Term, err error) {
	defer httpapi.Wrap(&err, "categories")
	rows, err := tx.Query(ctx, `SELECT `+termColumns+` FROM blog_terms WHERE kind = 'category' AND ($1 = 0 OR id < $1) ORDER BY id DESC LIMIT $2`,
		before, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanTerm)
}

// tags returns every tag, newest first.
func tags(ctx context.Context, tx tenant.Querier) (_ []Term, err error) {
	defer httpapi.Wrap(&err, "tags")
	rows, err := tx.Query(ctx, `SELECT `+termColumns+` FROM blog_terms WHERE kind = 'tag' ORDER BY id DESC`)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, scanTerm)
	if out == nil {
		out = []Term{}
	}
	return out, err
}

// updateCategory renames the category with id (name nil: kept) and moves
// it to the slug given when it differs; httpapi.ErrNotFound when absent.
func updateCategory(ctx context.Context, tx pgx.Tx, id int64, name, given *string) (_ Term, err error) {
	defer httpapi.Wrap(&err, "updateCategory(%d)", id)
	var t Term
	err = tx.QueryRow(ctx, `SELECT `+termColumns+` FROM blog_terms WHERE kind = 'category' AND id = $1 FOR UPDATE`, id).Scan(&t.ID, &t.Name, &t.Slug)
	if errors.Is(err, pgx.ErrNoRows) {
		return Term{}, httpapi.ErrNotFound
	}
	if err != nil {
		return Term{}, err
	}
	if given != nil && *given != t.Slug {
		if t.Slug, err = pickSlug(ctx, tx, spaceCategory, given, "", id); err != nil {
			return Term{}, err
		}
	}
	if name != nil {
		t.Name = *name
	}
	_, err = tx.Exec(ctx, `UPDATE blog_terms SET name = $2, slug = $3 WHERE id = $1`, id, t.Name, t.Slug)
	return t, err
}

// termName is a category's or tag's id and name.
type termName struct {
	id   int64
	name string
}

// termNames reads every category's and tag's name.
func termNames(ctx context.Context, tx pgx.Tx) (_ []termName, err error) {
	defer httpapi.Wrap(&err, "termNames")
	rows, err := tx.Query(ctx, `SELECT id, name FROM blog_terms`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (termName, error) {
		var t termName
		err := r.Scan(&t.id, &t.name)
		return t, err
	})
}

// setTermName renames category or tag id.
func setTermName(ctx context.Context, tx pgx.Tx, id int64, name string) (err error) {
	defer httpapi.Wrap(&err, "setTermName(%d)", id)
	_, err = tx.Exec(ctx, `UPDATE blog_terms SET name = $2 WHERE id = $1`, id, name)
	return err
}
