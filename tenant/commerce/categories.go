package commerce

import (
	"context"
	"errors"
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

const categoryCols = `id, name, slug, description, image, parent_id, sort_order, is_active, created_at, updated_at`

func scanCategory(row pgx.Row) (*Category, error) {
	c := &Category{Children: []*Category{}}
	err := row.Scan(&c.ID, &c.Name, &c.Slug, &c.Description, &c.Image, &c.ParentID, &c.SortOrder, &c.IsActive, &c.CreatedAt, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, httpapi.NotFound("no such product category")
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, err
}

// categoryTree returns the categories as a forest ordered by sort_order,
// then id; with activeOnly, inactive categories and their subtrees are left
// out.
func categoryTree(ctx context.Context, tx pgx.Tx, activeOnly bool) ([]*Category, error) {
	rows, err := tx.Query(ctx, `SELECT `+categoryCols+` FROM product_categories ORDER BY sort_order, id`)
	if err != nil {
		return nil, err
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Category, error) { return scanCategory(r) })
	if err != nil {
		return nil, err
	}
	byID := make(map[int64]*Category, len(all))
	for _, c := range all {
		byID[c.ID] = c
	}
	roots := []*Category{}
	for _, c := range all {
		if activeOnly && !c.IsActive {
			continue
		}
		if c.ParentID == nil {
			roots = append(roots, c)
		} else if p, ok := byID[*c.ParentID]; ok {
			p.Children = append(p.Children, c)
		}
	}
	// With activeOnly, a child of an inactive parent was attached to that
	// parent, which is not in the tree: the whole subtree is hidden.
	return roots, nil
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
	var err error
	var tree []*Category
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		tree, err = categoryTree(r.Context(), tx, public)
		return err
	})
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
	var err error
	var in categoryInput
	if err := decodeInput(r, &in, true); err != nil {
		return err
	}
	sl := slug.Make(*in.Name)
	if in.Slug != nil {
		sl = *in.Slug
	}
	var c *Category
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		if err := checkParent(r.Context(), tx, 0, in.ParentID.Value); err != nil {
			return err
		}
		c, err = scanCategory(tx.QueryRow(r.Context(), `INSERT INTO product_categories (name, slug, description, image, parent_id, sort_order, is_active)
			VALUES ($1, $2, COALESCE($3, ''), COALESCE($4, ''), $5, COALESCE($6, 0), COALESCE($7, true)) RETURNING `+categoryCols,
			*in.Name, sl, in.Description, in.Image, in.ParentID.Value, in.SortOrder, in.IsActive))
		return slugTaken(err, "product category")
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 201, c)
}

// slugTaken turns a duplicate slug into 409 conflict naming it.
func slugTaken(err error, what string) error {
	if isUnique(err) {
		return httpapi.Conflict(httpapi.CodeConflict, "a "+what+" with this slug already exists")
	}
	return err
}

// checkParent refuses an unknown parent (422) and a parent that would make
// a cycle: the category itself or one of its descendants.
func checkParent(ctx context.Context, tx pgx.Tx, self int64, parent *int64) error {
	if parent == nil {
		return nil
	}
	if *parent == self {
		return httpapi.Invalid("parent_id", "a category cannot be its own parent")
	}
	var exists, cycle bool
	err := tx.QueryRow(ctx, `WITH RECURSIVE up AS (
			SELECT id, parent_id FROM product_categories WHERE id = $1
			UNION SELECT c.id, c.parent_id FROM product_categories c JOIN up ON c.id = up.parent_id)
		SELECT EXISTS (SELECT 1 FROM up WHERE id = $1), EXISTS (SELECT 1 FROM up WHERE id = $2)`, *parent, self).Scan(&exists, &cycle)
	if err != nil {
		return err
	}
	if !exists {
		return httpapi.Invalid("parent_id", "no such product category")
	}
	if cycle {
		return httpapi.Invalid("parent_id", "would make the category a descendant of itself")
	}
	return nil
}

func (s *Service) getCategory(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var c *Category
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		tree, err := categoryTree(r.Context(), tx, false)
		if err != nil {
			return err
		}
		c = findCategory(tree, id)
		if c == nil {
			return httpapi.NotFound("no such product category")
		}
		return nil
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, c)
}

func findCategory(tree []*Category, id int64) *Category {
	for _, c := range tree {
		if c.ID == id {
			return c
		}
		if f := findCategory(c.Children, id); f != nil {
			return f
		}
	}
	return nil
}

func (s *Service) updateCategory(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	var in categoryInput
	if err := decodeInput(r, &in, false); err != nil {
		return err
	}
	var c *Category
	err = sc.Tx(r.Context(), func(tx pgx.Tx) error {
		if in.ParentID.Set {
			if err := checkParent(r.Context(), tx, id, in.ParentID.Value); err != nil {
				return err
			}
		}
		c, err = scanCategory(tx.QueryRow(r.Context(), `UPDATE product_categories SET
				name = COALESCE($2, name), slug = COALESCE($3, slug), description = COALESCE($4, description),
				image = COALESCE($5, image), parent_id = CASE WHEN $6 THEN $7 ELSE parent_id END,
				sort_order = COALESCE($8, sort_order), is_active = COALESCE($9, is_active), updated_at = now()
			WHERE id = $1 RETURNING `+categoryCols,
			id, in.Name, in.Slug, in.Description, in.Image, in.ParentID.Set, in.ParentID.Value, in.SortOrder, in.IsActive))
		if err != nil {
			return slugTaken(err, "product category")
		}
		tree, err := categoryTree(r.Context(), tx, false)
		if err != nil {
			return err
		}
		if f := findCategory(tree, id); f != nil {
			c.Children = f.Children
		}
		return nil
	})
	if err != nil {
		return err
	}
	return httpapi.JSON(w, 200, c)
}

// deleteCategory removes a category: its children become roots and its
// products lose their category (ON DELETE SET NULL).
func (s *Service) deleteCategory(w http.ResponseWriter, r *http.Request, sc *tenant.Scope) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	return deleteRow(w, r, sc, "no such product category", `DELETE FROM product_categories WHERE id = $1`, id)
}
