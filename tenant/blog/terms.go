package blog

import (
	"net/http"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/tenant"
)

// Term is a category or a tag.
type Term struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
	Slug string `json:"slug"`
}

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
	var req termRequest
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	name, err := checkTerm(req.Name, req.Slug)
	if err != nil {
		return err
	}
	t, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Term, error) {
		return insertTerm(r.Context(), tx, kind, *name, req.Slug)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusCreated, t)
}

// deleteTermOf deletes a category or a tag (kind) and answers 204.
func deleteTermOf(w http.ResponseWriter, r *http.Request, s *tenant.Scope, kind string) error {
	id, err := httpapi.PathID(r, "id", httpapi.ErrNotFound)
	if err != nil {
		return err
	}
	if err := s.Tx(r.Context(), func(tx pgx.Tx) error { return deleteTerm(r.Context(), tx, kind, id) }); err != nil {
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
	return deleteTermOf(w, r, s, spaceCategory)
}

func deleteTag(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	return deleteTermOf(w, r, s, spaceTag)
}

// listCategories pages through the categories, newest first.
func listCategories(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	list, err := httpapi.ListOf(r, httpapi.CursorID, func(before int64, limit int) ([]Term, error) {
		return categories(r.Context(), s.Reader(), before, limit)
	}, func(t Term) string { return httpapi.IDText(t.ID) })
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, list)
}

// listTags answers every tag, newest first, as {data} (the contract's shape).
func listTags(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	out, err := tags(r.Context(), s.Reader())
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, map[string]any{"data": out})
}

// patchCategory renames a category; its slug changes only when given.
func patchCategory(w http.ResponseWriter, r *http.Request, s *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", httpapi.ErrNotFound)
	if err != nil {
		return err
	}
	var req termPatch
	if err := httpapi.Decode(r, &req); err != nil {
		return err
	}
	name, err := checkTerm(req.Name, req.Slug)
	if err != nil {
		return err
	}
	t, err := tenant.TxV(r.Context(), s, func(tx pgx.Tx) (Term, error) {
		return updateCategory(r.Context(), tx, id, name, req.Slug)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, http.StatusOK, t)
}
