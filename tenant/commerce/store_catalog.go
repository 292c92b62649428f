package commerce

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/plinth-dev/plinth/internal/httpapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
)

// The catalogue's store: categories, products and variants. Every function
// runs in the caller's project transaction and translates database errors
// into the pillar's failures, so handlers never see pgx errors.

// Failures of a row that does not exist.
var (
	// errNoResource answers a path id that is not a positive integer.
	errNoResource = httpapi.NotFound("no such resource")
	errNoCategory = httpapi.NotFound("no such product category")
	errNoProduct  = httpapi.NotFound("no such product")
	errNoVariant  = httpapi.NotFound("no such variant")
)

// execOne runs a statement meant to change one row; notFound when it
// changed none.
func execOne(ctx context.Context, tx pgx.Tx, notFound error, query string, args ...any) error {
	tag, err := tx.Exec(ctx, query, args...)
	if err == nil && tag.RowsAffected() == 0 {
		return notFound
	}
	return err
}

func isUnique(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// slugTaken turns a duplicate slug into 409 conflict naming it.
func slugTaken(err error, what string) error {
	if isUnique(err) {
		return httpapi.Conflict(httpapi.CodeConflict, "a "+what+" with this slug already exists")
	}
	return err
}

// stockBelowReserved turns the stock check into a 409: stock cannot go
// below what pending checkouts hold.
func stockBelowReserved(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23514" && (pe.ConstraintName == "products_stock" || pe.ConstraintName == "product_variants_stock") {
		return httpapi.Conflict(httpapi.CodeConflict, "stock_quantity cannot go below the units reserved by pending checkouts")
	}
	return err
}

// ---- categories

const categoryCols = `id, name, slug, description, image, parent_id, sort_order, is_active, created_at, updated_at`

// scanCategory reads a category without children (a leaf until
// categoryTree attaches them).
func scanCategory(row pgx.Row) (*Category, error) {
	c := &Category{Children: []*Category{}}
	err := row.Scan(&c.ID, &c.Name, &c.Slug, &c.Description, &c.Image, &c.ParentID, &c.SortOrder, &c.IsActive, &c.CreatedAt, &c.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoCategory
	}
	c.CreatedAt, c.UpdatedAt = c.CreatedAt.UTC(), c.UpdatedAt.UTC()
	return c, err
}

// categoryTree returns the categories as a forest ordered by sort_order,
// then id; with activeOnly, inactive categories and their subtrees are left
// out.
func categoryTree(ctx context.Context, tx tenant.Querier, activeOnly bool) (_ []*Category, err error) {
	defer httpapi.Wrap(&err, "categoryTree")
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

// getCategory returns category id with its subtree.
func getCategory(ctx context.Context, tx tenant.Querier, id int64) (_ *Category, err error) {
	defer httpapi.Wrap(&err, "getCategory(%d)", id)
	tree, err := categoryTree(ctx, tx, false)
	if err != nil {
		return nil, err
	}
	if c := findCategory(tree, id); c != nil {
		return c, nil
	}
	return nil, errNoCategory
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

// checkParent refuses an unknown parent (422) and a parent that would make
// a cycle: the category itself or one of its descendants.
func checkParent(ctx context.Context, tx pgx.Tx, self int64, parent *int64) (err error) {
	defer httpapi.Wrap(&err, "checkParent")
	if parent == nil {
		return nil
	}
	if *parent == self {
		return httpapi.Invalid("parent_id", "a category cannot be its own parent")
	}
	var exists, cycle bool
	err = tx.QueryRow(ctx, `WITH RECURSIVE up AS (
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

// insertCategory stores a new category under slug sl.
func insertCategory(ctx context.Context, tx pgx.Tx, in categoryInput, sl string) (_ *Category, err error) {
	defer httpapi.Wrap(&err, "insertCategory")
	if err := checkParent(ctx, tx, 0, in.ParentID.Value); err != nil {
		return nil, err
	}
	c, err := scanCategory(tx.QueryRow(ctx, `INSERT INTO product_categories (name, slug, description, image, parent_id, sort_order, is_active)
		VALUES ($1, $2, COALESCE($3, ''), COALESCE($4, ''), $5, COALESCE($6, 0), COALESCE($7, true)) RETURNING `+categoryCols,
		*in.Name, sl, in.Description, in.Image, in.ParentID.Value, in.SortOrder, in.IsActive))
	return c, slugTaken(err, "product category")
}

// updateCategory applies a PATCH to category id and returns it with its
// subtree.
func updateCategory(ctx context.Context, tx pgx.Tx, id int64, in categoryInput) (_ *Category, err error) {
	defer httpapi.Wrap(&err, "updateCategory(%d)", id)
	if in.ParentID.Set {
		if err := checkParent(ctx, tx, id, in.ParentID.Value); err != nil {
			return nil, err
		}
	}
	c, err := scanCategory(tx.QueryRow(ctx, `UPDATE product_categories SET
			name = COALESCE($2, name), slug = COALESCE($3, slug), description = COALESCE($4, description),
			image = COALESCE($5, image), parent_id = CASE WHEN $6 THEN $7 ELSE parent_id END,
			sort_order = COALESCE($8, sort_order), is_active = COALESCE($9, is_active), updated_at = now()
		WHERE id = $1 RETURNING `+categoryCols,
		id, in.Name, in.Slug, in.Description, in.Image, in.ParentID.Set, in.ParentID.Value, in.SortOrder, in.IsActive))
	if err != nil {
		return nil, slugTaken(err, "product category")
	}
	tree, err := categoryTree(ctx, tx, false)
	if err != nil {
		return nil, err
	}
	if f := findCategory(tree, id); f != nil {
		c.Children = f.Children
	}
	return c, nil
}

// deleteCategory removes a category: its children become roots and its
// products lose their category (ON DELETE SET NULL).
func deleteCategory(ctx context.Context, tx pgx.Tx, id int64) (err error) {
	defer httpapi.Wrap(&err, "deleteCategory(%d)", id)
	return execOne(ctx, tx, errNoCategory, `DELETE FROM product_categories WHERE id = $1`, id)
}

// checkCategory refuses an unknown category_id (422).
func checkCategory(ctx context.Context, tx pgx.Tx, id *int64) (err error) {
	defer httpapi.Wrap(&err, "checkCategory")
	if id == nil {
		return nil
	}
	var ok bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM product_categories WHERE id = $1)`, *id).Scan(&ok); err != nil {
		return err
	}
	if !ok {
		return httpapi.Invalid("category_id", "no such product category")
	}
	return nil
}

// ---- products

const productCols = `id, name, slug, price, currency, status, description, short_description, compare_at_price, type, sku,
	stock_quantity, track_inventory, weight, images, metadata, category_id, featured, published_at, created_at, updated_at, translations`

// variantsColumn is a column to read after productCols: the variants of
// the row of products (active ones only with activeOnly), ordered by
// sort_order then id, as one JSON array, so that a product and its
// variants are one query, one round trip on a read. Its objects are the
// rows of variantCols, whose names are the JSON names of Variant.
func variantsColumn(activeOnly bool) string {
	filter := ""
	if activeOnly {
		filter = " AND is_active"
	}
	return `, COALESCE((SELECT json_agg(v ORDER BY v.sort_order, v.id) FROM (SELECT ` + variantCols + `
		FROM product_variants WHERE product_id = products.id` + filter + `) v), '[]')`
}

// scanProduct reads a product, with its variants when the query reads
// variantsColumn after productCols (withVariants), else with none.
func scanProduct(row pgx.Row, withVariants bool) (*Product, error) {
	p := &Product{Variants: []*Variant{}}
	dest := []any{&p.ID, &p.Name, &p.Slug, &p.Price, &p.Currency, &p.Status, &p.Description, &p.ShortDescription,
		&p.CompareAtPrice, &p.Type, &p.SKU, &p.StockQuantity, &p.TrackInventory, &p.Weight, &p.Images, &p.Metadata,
		&p.CategoryID, &p.Featured, &p.PublishedAt, &p.CreatedAt, &p.UpdatedAt, &p.Translations}
	if withVariants {
		dest = append(dest, &p.Variants)
	}
	err := row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoProduct
	}
	if err != nil {
		return nil, err
	}
	if p.Images == nil {
		p.Images = []string{}
	}
	if p.Metadata == nil {
		p.Metadata = map[string]any{}
	}
	if p.Translations == nil {
		p.Translations = map[string]ProductText{}
	}
	if p.PublishedAt != nil {
		t := p.PublishedAt.UTC()
		p.PublishedAt = &t
	}
	p.CreatedAt, p.UpdatedAt = p.CreatedAt.UTC(), p.UpdatedAt.UTC()
	for _, v := range p.Variants {
		if v.Options == nil {
			v.Options = map[string]string{}
		}
	}
	return p, nil
}

// getProduct reads product id without its variants.
func getProduct(ctx context.Context, tx tenant.Querier, id int64) (_ *Product, err error) {
	defer httpapi.Wrap(&err, "getProduct(%d)", id)
	return scanProduct(tx.QueryRow(ctx, `SELECT `+productCols+` FROM products WHERE id = $1`, id), false)
}

// loadProduct reads product id with all its variants.
func loadProduct(ctx context.Context, tx tenant.Querier, id int64) (_ *Product, err error) {
	defer httpapi.Wrap(&err, "loadProduct(%d)", id)
	return scanProduct(tx.QueryRow(ctx, `SELECT `+productCols+variantsColumn(false)+` FROM products WHERE id = $1`, id), true)
}

// publicProduct reads the active product whose id or slug is key, with
// its active variants.
func publicProduct(ctx context.Context, tx tenant.Querier, key string, id int64) (_ *Product, err error) {
	defer httpapi.Wrap(&err, "publicProduct(%q)", key)
	return scanProduct(tx.QueryRow(ctx, `SELECT `+productCols+variantsColumn(true)+` FROM products
		WHERE status = 'active' AND (id = $1 OR slug = $2) ORDER BY id = $1 DESC LIMIT 1`, id, key), true)
}

// productSlugTaken reports whether a product already has slug sl.
func productSlugTaken(ctx context.Context, tx pgx.Tx, sl string) (_ bool, err error) {
	defer httpapi.Wrap(&err, "productSlugTaken")
	var taken bool
	err = tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM products WHERE slug = $1)`, sl).Scan(&taken)
	return taken, err
}

// productSlug is the slug of a new product: the one sent, else one made
// from its name that no product has yet.
func productSlug(ctx context.Context, tx pgx.Tx, in productInput) (_ string, err error) {
	defer httpapi.Wrap(&err, "productSlug")
	if in.Slug != nil {
		return *in.Slug, nil
	}
	return slug.Unique(ctx, slug.Make(*in.Name), func(ctx context.Context, c string) (bool, error) {
		return productSlugTaken(ctx, tx, c)
	})
}

// insertProduct stores a new product and the variants it is created with.
func insertProduct(ctx context.Context, tx pgx.Tx, in productInput) (_ *Product, err error) {
	defer httpapi.Wrap(&err, "insertProduct")
	if err := checkCategory(ctx, tx, in.CategoryID.Value); err != nil {
		return nil, err
	}
	sl, err := productSlug(ctx, tx, in)
	if err != nil {
		return nil, err
	}
	images := []string{}
	if in.Images != nil {
		images = *in.Images
	}
	meta := map[string]any{}
	if in.Metadata != nil && *in.Metadata != nil {
		meta = *in.Metadata
	}
	p, err := scanProduct(tx.QueryRow(ctx, `INSERT INTO products (name, slug, price, currency, status, description, short_description,
			compare_at_price, type, sku, stock_quantity, track_inventory, weight, images, metadata, category_id, featured, published_at, translations)
		VALUES ($1, $2, $3, COALESCE($4, 'usd'), COALESCE($5, 'draft'), COALESCE($6, ''), COALESCE($7, ''), $8, COALESCE($9, 'physical'),
			COALESCE($10, ''), COALESCE($11, 0), COALESCE($12, false), $13, $14, $15, $16, COALESCE($17, false),
			CASE WHEN $5 = 'active' THEN now() END, COALESCE($18::jsonb, '{}'))
		RETURNING `+productCols,
		*in.Name, sl, *in.Price, in.Currency, in.Status, in.Description, in.ShortDescription, in.CompareAtPrice.Value, in.Type,
		in.SKU, in.StockQuantity, in.TrackInventory, in.Weight.Value, images, meta, in.CategoryID.Value, in.Featured, in.Translations), false)
	if err != nil {
		return nil, slugTaken(err, "product")
	}
	if in.Variants != nil {
		for _, vi := range *in.Variants {
			v, err := insertVariant(ctx, tx, p, vi)
			if err != nil {
				return nil, err
			}
			p.Variants = append(p.Variants, v)
		}
	}
	return p, nil
}

// updateProduct applies a PATCH to product id and returns it with its
// variants.
func updateProduct(ctx context.Context, tx pgx.Tx, id int64, in productInput) (_ *Product, err error) {
	defer httpapi.Wrap(&err, "updateProduct(%d)", id)
	if err := checkCategory(ctx, tx, in.CategoryID.Value); err != nil {
		return nil, err
	}
	p, err := scanProduct(tx.QueryRow(ctx, `UPDATE products SET
			name = COALESCE($2, name), slug = COALESCE($3, slug), price = COALESCE($4, price), currency = COALESCE($5, currency),
			status = COALESCE($6, status), description = COALESCE($7, description), short_description = COALESCE($8, short_description),
			compare_at_price = CASE WHEN $9 THEN $10 ELSE compare_at_price END, type = COALESCE($11, type), sku = COALESCE($12, sku),
			stock_quantity = COALESCE($13, stock_quantity), track_inventory = COALESCE($14, track_inventory),
			weight = CASE WHEN $15 THEN $16 ELSE weight END, images = COALESCE($17, images), metadata = COALESCE($18, metadata),
			category_id = CASE WHEN $19 THEN $20 ELSE category_id END, featured = COALESCE($21, featured),
			translations = COALESCE($22::jsonb, translations),
			published_at = CASE WHEN COALESCE($6, status) = 'active' THEN COALESCE(published_at, now()) ELSE published_at END,
			updated_at = now()
		WHERE id = $1 RETURNING `+productCols+variantsColumn(false),
		id, in.Name, in.Slug, in.Price, in.Currency, in.Status, in.Description, in.ShortDescription,
		in.CompareAtPrice.Set, in.CompareAtPrice.Value, in.Type, in.SKU, in.StockQuantity, in.TrackInventory,
		in.Weight.Set, in.Weight.Value, in.Images, in.Metadata, in.CategoryID.Set, in.CategoryID.Value, in.Featured, in.Translations), true)
	if err != nil {
		return nil, stockBelowReserved(slugTaken(err, "product"))
	}
	return p, nil
}

// deleteProduct removes a product and its variants. Orders keep their
// frozen lines.
func deleteProduct(ctx context.Context, tx pgx.Tx, id int64) (err error) {
	defer httpapi.Wrap(&err, "deleteProduct(%d)", id)
	return execOne(ctx, tx, errNoProduct, `DELETE FROM products WHERE id = $1`, id)
}

// listProducts returns up to limit products with ids below after (0: from
// the newest), newest first, with their variants (active ones only when
// public).
func listProducts(ctx context.Context, tx tenant.Querier, f productFilter, after int64, limit int, public bool) (_ []*Product, err error) {
	defer httpapi.Wrap(&err, "listProducts")
	rows, err := tx.Query(ctx, `SELECT `+productCols+variantsColumn(public)+` FROM products
		WHERE ($1::bigint = 0 OR id < $1)
		  AND ($2::text IS NULL OR status = $2)
		  AND ($3::bigint IS NULL OR category_id IN (WITH RECURSIVE d AS (
				SELECT id FROM product_categories WHERE id = $3
				UNION SELECT c.id FROM product_categories c JOIN d ON c.parent_id = d.id) SELECT id FROM d))
		  AND ($4::boolean IS NULL OR featured = $4)
		  AND ($5::text IS NULL OR type = $5)
		  AND ($6::text IS NULL OR name ILIKE '%' || $6 || '%')
		  AND ($7::bigint[] IS NULL OR id = ANY($7))
		ORDER BY id DESC LIMIT $8`,
		after, f.status, f.categoryID, f.featured, f.typ, f.q, f.ids, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (*Product, error) { return scanProduct(r, true) })
}

// ---- variants

const variantCols = `id, product_id, name, price, sku, stock_quantity, options, sort_order, is_active`

func scanVariant(row pgx.Row) (*Variant, error) {
	v := &Variant{}
	err := row.Scan(&v.ID, &v.ProductID, &v.Name, &v.Price, &v.SKU, &v.StockQuantity, &v.Options, &v.SortOrder, &v.IsActive)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errNoVariant
	}
	if v.Options == nil {
		v.Options = map[string]string{}
	}
	return v, err
}

// insertVariant stores a variant of p; its price defaults to p's.
func insertVariant(ctx context.Context, tx pgx.Tx, p *Product, in variantInput) (_ *Variant, err error) {
	defer httpapi.Wrap(&err, "insertVariant")
	opts := map[string]string{}
	if in.Options != nil && *in.Options != nil {
		opts = *in.Options
	}
	return scanVariant(tx.QueryRow(ctx, `INSERT INTO product_variants (product_id, name, price, sku, stock_quantity, options, sort_order, is_active)
		VALUES ($1, $2, COALESCE($3::bigint, $4::bigint), COALESCE($5, ''), COALESCE($6, 0), $7, COALESCE($8, 0), COALESCE($9, true))
		RETURNING `+variantCols, p.ID, *in.Name, in.Price, p.Price, in.SKU, in.StockQuantity, opts, in.SortOrder, in.IsActive))
}

// addVariant stores a variant of product pid (errNoProduct when absent).
func addVariant(ctx context.Context, tx pgx.Tx, pid int64, in variantInput) (_ *Variant, err error) {
	defer httpapi.Wrap(&err, "addVariant")
	p, err := getProduct(ctx, tx, pid)
	if err != nil {
		return nil, err
	}
	return insertVariant(ctx, tx, p, in)
}

// getVariant reads variant vid of product pid.
func getVariant(ctx context.Context, tx tenant.Querier, pid, vid int64) (_ *Variant, err error) {
	defer httpapi.Wrap(&err, "getVariant")
	return scanVariant(tx.QueryRow(ctx, `SELECT `+variantCols+` FROM product_variants WHERE id = $1 AND product_id = $2`, vid, pid))
}

// updateVariant applies a PATCH to variant vid of product pid, which it
// marks updated.
func updateVariant(ctx context.Context, tx pgx.Tx, pid, vid int64, in variantInput) (_ *Variant, err error) {
	defer httpapi.Wrap(&err, "updateVariant(%d, %d)", pid, vid)
	v, err := scanVariant(tx.QueryRow(ctx, `UPDATE product_variants SET
			name = COALESCE($3, name), price = COALESCE($4, price), sku = COALESCE($5, sku),
			stock_quantity = COALESCE($6, stock_quantity), options = COALESCE($7, options),
			sort_order = COALESCE($8, sort_order), is_active = COALESCE($9, is_active)
		WHERE id = $1 AND product_id = $2 RETURNING `+variantCols,
		vid, pid, in.Name, in.Price, in.SKU, in.StockQuantity, in.Options, in.SortOrder, in.IsActive))
	if err != nil {
		return nil, stockBelowReserved(err)
	}
	_, err = tx.Exec(ctx, `UPDATE products SET updated_at = now() WHERE id = $1`, pid)
	return v, err
}

// deleteVariant removes variant vid of product pid.
func deleteVariant(ctx context.Context, tx pgx.Tx, pid, vid int64) (err error) {
	defer httpapi.Wrap(&err, "deleteVariant")
	return execOne(ctx, tx, errNoVariant, `DELETE FROM product_variants WHERE id = $1 AND product_id = $2`, vid, pid)
}
