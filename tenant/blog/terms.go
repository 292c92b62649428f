package blog

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// termRequest is the body of POST /categories and POST /tags.
type termRequest struct {
	Name *string `json:"name" required:"true"`
	Slug *string `json:"slug"`
}

// termPatch is the body of PATCH /categories/{id}.
type termPatch struct {
	Name *string `json:"name"`
	Slug *string `json:"slug"`
}

// checkTerm cleans the name of a category or tag and checks the fields;
// it returns the name as it is to be stored.
func checkTerm(name, slug *string) (*string, error) {
	name = clean(name, cleanText)
	var v httpapi.Validator
	checkLen(&v, "name", name, maxName, true)
	checkSlug(&v, slug)
	return name, v.Err()
}

// createTerm inserts a category or tag (kind) and answers 201 with it.
func createTerm(w http.ResponseWriter, r *http.Request, s *tenant.Scope, kind string) error {
	var err error
	var req termRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if req.Name, err = checkTerm(req.Name, req.Slug); err != nil {
		return err
	}
	t := Term{Name: *req.Name}
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		if t.Slug, err = pickSlug(r.Context(), tx, kind, req.Slug, t.Name, 0); err != nil {
			return err
		}
		return tx.QueryRow(r.Context(), `INSERT INTO blog_terms (kind, name, slug) VALUES ($1, $2, $3) RETURNING id`,
			kind, t.Name, t.Slug).Scan(&t.ID)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, t)
}

// termID reads the {id} of a category or tag route; anything but a
// positive integer names nothing (404).
func termID(r *http.Request) (int64, error) {
	id, ok := isID(chi.URLParam(r, "id"))
	if !ok || id <= 0 {
		return 0, httpapi.ErrNotFound
	}
	return id, nil
}

// deleteTerm deletes a category (its posts keep no category) or a tag
// (taken off its posts).
func deleteTerm(w http.ResponseWriter, r *http.Request, s *tenant.Scope, kind string) error {
	id, err := termID(r)
	if err != nil {
		return err
	}
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		tag, err := tx.Exec(r.Context(), `DELETE FROM blog_terms WHERE kind = $1 AND id = $2`, kind, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return httpapi.ErrNotFound
		}
		if kind == spaceTag { // a category is unset by its foreign key
			_, err = tx.Exec(r.Context(), `UPDATE blog_posts SET tag_ids = array_remove(tag_ids, $1::bigint) WHERE $1::bigint = ANY (tag_ids)`, id)
		}
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.NoContent(w)
}

func createCategory(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return createTerm(w, r, s, spaceCategory)
}

func createTag(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return createTerm(w, r, s, spaceTag)
}

func deleteCategory(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return deleteTerm(w, r, s, spaceCategory)
}

func deleteTag(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return deleteTerm(w, r, s, spaceTag)
}

// listCategories pages through the categories, newest first.
func listCategories(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	page, err := httpapi.ParsePage(r)
	if err != nil {
		return err
	}
	before, err := httpapi.CursorID(page.Cursor)
	if err != nil {
		return err
	}
	var out []Term
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		rows, err := tx.Query(r.Context(), `SELECT id, name, slug FROM blog_terms WHERE kind = 'category' AND ($1 = 0 OR id < $1) ORDER BY id DESC LIMIT $2`,
			before, page.Limit+1)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanTerm)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, httpapi.NewList(out, page.Limit, func(t Term) string { return strconv.FormatInt(t.ID, 10) }))
}

// listTags answers every tag, newest first, as {data} (the contract's shape).
func listTags(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	var err error
	out := []Term{}
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		rows, err := tx.Query(r.Context(), `SELECT id, name, slug FROM blog_terms WHERE kind = 'tag' ORDER BY id DESC`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanTerm)
		return err
	})
	if err != nil {
		return err
	}
	if out == nil {
		out = []Term{}
	}
	return httpapi.JSON(w, http.StatusOK, map[string]any{"data": out})
}

// patchCategory renames a category; its slug changes only when given.
func patchCategory(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := termID(r)
	if err != nil {
		return err
	}
	var req termPatch
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	if req.Name, err = checkTerm(req.Name, req.Slug); err != nil {
		return err
	}
	var t Term
	err = s.Tx(r.Context(), func(tx pgx.Tx) error {
		ctx := r.Context()
		t, err = getCategory(ctx, tx, id)
		if err != nil {
			return err
		}
		if req.Slug != nil && *req.Slug != t.Slug {
			if t.Slug, err = pickSlug(ctx, tx, spaceCategory, req.Slug, "", id); err != nil {
				return err
			}
		}
		if req.Name != nil {
			t.Name = *req.Name
		}
		_, err = tx.Exec(ctx, `UPDATE blog_terms SET name = $2, slug = $3 WHERE id = $1`, id, t.Name, t.Slug)
		return err
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, t)
}

func getCategory(ctx context.Context, tx pgx.Tx, id int64) (Term, error) {
	var t Term
	err := tx.QueryRow(ctx, `SELECT id, name, slug FROM blog_terms WHERE kind = 'category' AND id = $1 FOR UPDATE`, id).Scan(&t.ID, &t.Name, &t.Slug)
	if errors.Is(err, pgx.ErrNoRows) {
		return t, httpapi.ErrNotFound
	}
	return t, err
}
