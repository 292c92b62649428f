package commerce

import (
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
)

// Category is the Product category resource; lists nest children.
type Category struct {
	ID          int64       `json:"id"`
	Name        string      `json:"name"`
	Slug        string      `json:"slug"`
	Description string      `json:"description"`
	Image       string      `json:"image"`
	ParentID    *int64      `json:"parent_id"`
	SortOrder   int         `json:"sort_order"`
	IsActive    bool        `json:"is_active"`
	Children    []*Category `json:"children"`
	CreatedAt   time.Time   `json:"created_at"`
	UpdatedAt   time.Time   `json:"updated_at"`
}

func (s *Service) listCategories(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	return s.categoryList(w, r, sc, false)
}

func (s *Service) publicListCategories(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	return s.categoryList(w, r, sc, true)
}

// categoryList serves the whole tree and, with public, the tree of active
// categories.
func (s *Service) categoryList(w http.ResponseWriter, r *http.Request, sc *tenant.Scope, public bool) error {
	tree, err := categoryTree(r.Context(), sc.Reader(), public)
	if err != nil {
		return err
	}
	list := httpapi.List[*Category]{Data: tree}
	if public {
		return httpapi.PublicJSON(w, r, list)
	}
	return httpapi.JSON(w, 200, list)
}

// categoryInput is the body of a create (Name required) or a PATCH.
type categoryInput struct {
	Name        *string         `json:"name"`
	Slug        *string         `json:"slug"`
	Description *string         `json:"description"`
	Image       *string         `json:"image"`
	ParentID    Nullable[int64] `json:"parent_id"`
	SortOrder   *int            `json:"sort_order"`
	IsActive    *bool           `json:"is_active"`
}

func (in *categoryInput) validate(create bool) error {
	var v httpapi.Validator
	if in.Name != nil {
		checkName(&v, "name", in.Name)
	} else if create {
		return httpapi.BadRequest(`missing required field "name"`)
	}
	if in.Slug != nil {
		v.Check(slug.Valid(*in.Slug), "slug", "must match ^[a-z0-9][a-z0-9-]{0,254}$")
	}
	if in.Description != nil {
		v.Check(utf8.RuneCountInString(*in.Description) <= 10000, "description", "must be at most 10000 characters")
	}
	if in.Image != nil {
		v.Check(*in.Image == "" || validURL(*in.Image), "image", "must be an absolute http(s) URL")
	}
	if in.ParentID.Value != nil {
		v.Check(*in.ParentID.Value > 0, "parent_id", "must be a category id")
	}
	if in.SortOrder != nil {
		v.Check(validSortOrder(*in.SortOrder), "sort_order", sortOrderMsg)
	}
	return v.Err()
}

func (s *Service) createCategory(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	var in categoryInput
	if err := decodeInput(r, &in, true); err != nil {
		return err
	}
	sl := slug.Make(*in.Name)
	if in.Slug != nil {
		sl = *in.Slug
	}
	c, err := tenant.TxV(r.Context(), sc, func(tx pgx.Tx) (*Category, error) {
		return insertCategory(r.Context(), tx, in, sl)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, c)
}

func (s *Service) updateCategory(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	id, err := httpapi.PathID(r, "id", errNoResource)
	if err != nil {
		return err
	}
	var in categoryInput
	if err := decodeInput(r, &in, false); err != nil {
		return err
	}
	c, err := tenant.TxV(r.Context(), sc, func(tx pgx.Tx) (*Category, error) {
		return updateCategory(r.Context(), tx, id, in)
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, c)
}
