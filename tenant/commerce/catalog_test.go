package commerce_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/plinth-dev/plinth/central/apitest"
)

func TestCategoriesTree(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	root := f.do(t, "POST", "/product-categories", map[string]any{"name": "Clothing"}).Expect(t, 201).JSON(t)
	assert.Equal(t, "clothing", root["slug"])
	assert.Equal(t, true, root["is_active"])
	assert.Nil(t, root["parent_id"])
	assert.Equal(t, []any{}, root["children"])
	rootID := num(root["id"])
	shirts := f.do(t, "POST", "/product-categories", map[string]any{"name": "Shirts", "parent_id": rootID, "sort_order": 2,
		"description": "Tops", "image": "https://cdn.test/shirts.jpg"}).Expect(t, 201).JSON(t)
	hats := f.do(t, "POST", "/product-categories", map[string]any{"name": "Hats", "parent_id": rootID, "sort_order": 1}).Expect(t, 201).JSON(t)
	linen := f.do(t, "POST", "/product-categories", map[string]any{"name": "Linen", "parent_id": num(shirts["id"]), "is_active": false}).Expect(t, 201).JSON(t)
	f.do(t, "POST", "/product-categories", map[string]any{"name": "Toys"}).Expect(t, 201)

	// Duplicate slug, derived or explicit: 409 conflict.
	f.do(t, "POST", "/product-categories", map[string]any{"name": "Clothing", "parent_id": rootID}).Problem(t, 409, "conflict")
	f.do(t, "POST", "/product-categories", map[string]any{"name": "Other", "slug": "hats"}).Problem(t, 409, "conflict")
	f.do(t, "POST", "/product-categories", map[string]any{"parent_id": rootID}).Problem(t, 400, "bad_request")
	f.do(t, "POST", "/product-categories", map[string]any{"name": "X", "parent_id": 99999}).Problem(t, 422, "validation_failed")
	f.do(t, "POST", "/product-categories", map[string]any{"name": "X", "slug": "Bad Slug"}).Problem(t, 422, "validation_failed")
	// sort_order is a 32-bit integer: beyond it is a bad value, not a server error.
	f.do(t, "POST", "/product-categories", map[string]any{"name": "X", "sort_order": int64(1) << 40}).Problem(t, 422, "validation_failed")

	list := f.do(t, "GET", "/product-categories", nil).Expect(t, 200).JSON(t)
	data := list["data"].([]any)
	require.Len(t, data, 2)
	clothing := data[0].(map[string]any)
	assert.Equal(t, "Clothing", clothing["name"])
	kids := clothing["children"].([]any)
	require.Len(t, kids, 2)
	assert.Equal(t, "Hats", kids[0].(map[string]any)["name"], "children by sort_order")
	assert.Equal(t, "Shirts", kids[1].(map[string]any)["name"])
	assert.Equal(t, "Linen", kids[1].(map[string]any)["children"].([]any)[0].(map[string]any)["name"])
	assert.Equal(t, false, list["has_more"])

	// Moving a category under its own descendant would make a cycle.
	f.do(t, "PATCH", fmt.Sprintf("/product-categories/%d", rootID), map[string]any{"parent_id": num(linen["id"])}).Problem(t, 422, "validation_failed")
	f.do(t, "PATCH", fmt.Sprintf("/product-categories/%d", rootID), map[string]any{"parent_id": rootID}).Problem(t, 422, "validation_failed")
	f.do(t, "PATCH", fmt.Sprintf("/product-categories/%d", num(hats["id"])), map[string]any{"slug": "shirts"}).Problem(t, 409, "conflict")
	// Null moves to the root; fields not sent are kept.
	moved := f.do(t, "PATCH", fmt.Sprintf("/product-categories/%d", num(shirts["id"])), map[string]any{"parent_id": nil, "name": "Shirts & Tops"}).Expect(t, 200).JSON(t)
	assert.Nil(t, moved["parent_id"])
	assert.Equal(t, "Shirts & Tops", moved["name"])
	assert.Equal(t, "shirts", moved["slug"])
	assert.Equal(t, "Tops", moved["description"])
	assert.Len(t, moved["children"], 1)
	assert.Len(t, f.do(t, "GET", "/product-categories", nil).Expect(t, 200).JSON(t)["data"], 3)

	got := f.do(t, "GET", fmt.Sprintf("/product-categories/%d", rootID), nil).Expect(t, 200).JSON(t)
	assert.Len(t, got["children"], 1)

	// Deleting a category frees its products and children.
	pid := f.product(t, map[string]any{"category_id": num(shirts["id"])})
	f.do(t, "DELETE", fmt.Sprintf("/product-categories/%d", num(shirts["id"])), nil).Expect(t, 204)
	assert.Nil(t, f.do(t, "GET", fmt.Sprintf("/products/%d", pid), nil).Expect(t, 200).JSON(t)["category_id"])
	f.do(t, "DELETE", fmt.Sprintf("/product-categories/%d", num(shirts["id"])), nil).Problem(t, 404, "not_found")
	f.do(t, "GET", fmt.Sprintf("/product-categories/%d", num(shirts["id"])), nil).Problem(t, 404, "not_found")
	linenNow := f.do(t, "GET", fmt.Sprintf("/product-categories/%d", num(linen["id"])), nil).Expect(t, 200).JSON(t)
	assert.Nil(t, linenNow["parent_id"])
}

func TestProductsCRUD(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	cat := num(f.do(t, "POST", "/product-categories", map[string]any{"name": "Mugs"}).Expect(t, 201).JSON(t)["id"])
	p := f.do(t, "POST", "/products", map[string]any{
		"name": "Blue Mug", "price": 1299, "currency": "usd", "status": "active", "description": "<p>Big</p>",
		"short_description": "A mug", "compare_at_price": 1599, "type": "physical", "sku": "MUG-B", "stock_quantity": 7,
		"track_inventory": true, "weight": 0.35, "images": []string{"https://cdn.test/m.jpg"}, "metadata": map[string]any{"color": "blue"},
		"category_id": cat, "featured": true,
	}).Expect(t, 201).JSON(t)
	id := num(p["id"])
	want := map[string]any{"name": "Blue Mug", "slug": "blue-mug", "price": float64(1299), "currency": "usd", "status": "active",
		"description": "<p>Big</p>", "short_description": "A mug", "compare_at_price": float64(1599), "type": "physical", "sku": "MUG-B",
		"stock_quantity": float64(7), "track_inventory": true, "weight": 0.35, "images": []any{"https://cdn.test/m.jpg"},
		"metadata": map[string]any{"color": "blue"}, "category_id": float64(cat), "featured": true, "variants": []any{}}
	for k, v := range want {
		assert.Equal(t, v, p[k], k)
	}
	assert.NotNil(t, p["published_at"])
	assert.True(t, strings.HasSuffix(p["created_at"].(string), "Z"))

	// Defaults, and a derived slug made unique.
	d := f.do(t, "POST", "/products", map[string]any{"name": "Blue Mug", "price": 0}).Expect(t, 201).JSON(t)
	assert.Equal(t, "blue-mug-2", d["slug"])
	assert.Equal(t, "draft", d["status"])
	assert.Equal(t, "usd", d["currency"])
	assert.Equal(t, "physical", d["type"])
	assert.Nil(t, d["published_at"])
	assert.Nil(t, d["compare_at_price"])
	assert.Equal(t, []any{}, d["images"])
	assert.Equal(t, map[string]any{}, d["metadata"])
	f.do(t, "POST", "/products", map[string]any{"name": "Dup", "price": 1, "slug": "blue-mug"}).Problem(t, 409, "conflict")

	bad := []struct {
		name   string
		body   map[string]any
		status int
		field  string
	}{
		{"missing name", map[string]any{"price": 1}, 400, ""},
		{"missing price", map[string]any{"name": "X"}, 400, ""},
		{"unknown field", map[string]any{"name": "X", "price": 1, "colour": "red"}, 400, ""},
		{"short description 501", map[string]any{"name": "X", "price": 1, "short_description": strings.Repeat("é", 501)}, 422, "short_description"},
		{"negative price", map[string]any{"name": "X", "price": -1}, 422, "price"},
		{"price as text", map[string]any{"name": "X", "price": "12"}, 422, "price"},
		{"fractional price", map[string]any{"name": "X", "price": 12.5}, 422, "price"},
		{"uppercase currency", map[string]any{"name": "X", "price": 1, "currency": "USD"}, 422, "currency"},
		{"status", map[string]any{"name": "X", "price": 1, "status": "live"}, 422, "status"},
		{"type", map[string]any{"name": "X", "price": 1, "type": "food"}, 422, "type"},
		{"category", map[string]any{"name": "X", "price": 1, "category_id": 99999}, 422, "category_id"},
		{"image", map[string]any{"name": "X", "price": 1, "images": []string{"not a url"}}, 422, "images"},
		{"stock", map[string]any{"name": "X", "price": 1, "stock_quantity": -1}, 422, "stock_quantity"},
		{"variant without name", map[string]any{"name": "X", "price": 1, "variants": []any{map[string]any{"price": 2}}}, 422, "variants[0].name"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			code := "bad_request"
			if c.status == 422 {
				code = "validation_failed"
			}
			p := f.do(t, "POST", "/products", c.body).Problem(t, c.status, code)
			if c.field != "" {
				assert.Contains(t, p["errors"], c.field)
			}
		})
	}
	f.do(t, "POST", "/products", map[string]any{"name": "X", "price": 1, "short_description": strings.Repeat("é", 500)}).Expect(t, 201)

	// PATCH changes what it names; null clears nullable fields.
	u := f.do(t, "PATCH", fmt.Sprintf("/products/%d", id), map[string]any{"price": 999, "compare_at_price": nil, "weight": nil,
		"category_id": nil, "status": "archived", "images": []string{}}).Expect(t, 200).JSON(t)
	assert.Equal(t, float64(999), u["price"])
	assert.Nil(t, u["compare_at_price"])
	assert.Nil(t, u["weight"])
	assert.Nil(t, u["category_id"])
	assert.Equal(t, []any{}, u["images"])
	assert.Equal(t, "archived", u["status"])
	assert.Equal(t, "Blue Mug", u["name"])
	assert.Equal(t, p["published_at"], u["published_at"])
	f.do(t, "PATCH", fmt.Sprintf("/products/%d", id), map[string]any{"short_description": strings.Repeat("a", 501)}).Problem(t, 422, "validation_failed")
	f.do(t, "PATCH", fmt.Sprintf("/products/%d", id), map[string]any{"variants": []any{}}).Problem(t, 400, "bad_request")
	f.do(t, "PATCH", "/products/99999", map[string]any{"price": 1}).Problem(t, 404, "not_found")

	f.do(t, "GET", fmt.Sprintf("/products/%d", id), nil).Expect(t, 200)
	f.do(t, "DELETE", fmt.Sprintf("/products/%d", id), nil).Expect(t, 204)
	f.do(t, "GET", fmt.Sprintf("/products/%d", id), nil).Problem(t, 404, "not_found")
	f.do(t, "DELETE", fmt.Sprintf("/products/%d", id), nil).Problem(t, 404, "not_found")

	// Scopes.
	reader := f.p.NewKey(false, "commerce:read")
	f.env.Do("GET", "/v1/products", reader, nil).Expect(t, 200)
	p403 := f.env.Do("POST", "/v1/products", reader, map[string]any{"name": "X", "price": 1}).Problem(t, 403, "forbidden")
	assert.Equal(t, "this key lacks the scope commerce:write", p403["detail"])
	blog := f.p.NewKey(false, "blog:*")
	f.env.Do("GET", "/v1/products", blog, nil).Problem(t, 403, "forbidden")
	f.env.Do("GET", "/v1/products", "", nil).Problem(t, 401, "unauthorized")
}

func TestProductListFilters(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	parent := num(f.do(t, "POST", "/product-categories", map[string]any{"name": "Home"}).Expect(t, 201).JSON(t)["id"])
	child := num(f.do(t, "POST", "/product-categories", map[string]any{"name": "Kitchen", "parent_id": parent}).Expect(t, 201).JSON(t)["id"])
	a := f.product(t, map[string]any{"name": "Pan 100%", "category_id": child, "featured": true})
	b := f.product(t, map[string]any{"name": "Lamp", "category_id": parent, "type": "digital"})
	c := f.product(t, map[string]any{"name": "Panel", "status": "draft"})

	ids := func(path string) []int64 {
		var out []int64
		for _, p := range f.do(t, "GET", path, nil).Expect(t, 200).JSON(t)["data"].([]any) {
			out = append(out, num(p.(map[string]any)["id"]))
		}
		return out
	}
	assert.Equal(t, []int64{c, b, a}, ids("/products"))
	assert.Equal(t, []int64{b, a}, ids("/products?status=active"))
	assert.Equal(t, []int64{b, a}, ids(fmt.Sprintf("/products?category_id=%d", parent)), "a category includes its subcategories")
	assert.Equal(t, []int64{a}, ids(fmt.Sprintf("/products?category_id=%d", child)))
	assert.Equal(t, []int64{a}, ids("/products?featured=true"))
	assert.Equal(t, []int64{b}, ids("/products?type=digital"))
	assert.Equal(t, []int64{c, a}, ids("/products?q=pan"))
	assert.Equal(t, []int64{a}, ids("/products?q=100%25"))
	assert.Equal(t, []int64{c, a}, ids(fmt.Sprintf("/products?ids=%d,%d", a, c)))
	f.do(t, "GET", "/products?status=gone", nil).Problem(t, 422, "validation_failed")
	f.do(t, "GET", "/products?featured=maybe", nil).Problem(t, 422, "validation_failed")
	f.do(t, "GET", "/products?limit=0", nil).Problem(t, 422, "validation_failed")
	f.do(t, "GET", "/products?cursor=!!", nil).Problem(t, 422, "validation_failed")
	f.do(t, "GET", "/products?cursor=bm90LWEtbnVtYmVy", nil).Problem(t, 422, "validation_failed") // "not-a-number"

	page := f.do(t, "GET", "/products?limit=2", nil).Expect(t, 200).JSON(t)
	assert.Equal(t, true, page["has_more"])
	rest := f.do(t, "GET", "/products?limit=2&cursor="+page["next_cursor"].(string), nil).Expect(t, 200).JSON(t)
	assert.Equal(t, false, rest["has_more"])
	assert.Equal(t, float64(a), rest["data"].([]any)[0].(map[string]any)["id"])
}

func TestVariants(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	pid := f.product(t, map[string]any{"price": 2500})
	base := fmt.Sprintf("/products/%d/variants", pid)
	v := f.do(t, "POST", base, map[string]any{"name": "Small", "options": map[string]any{"size": "S"}, "stock_quantity": 4, "sku": "S-1"}).Expect(t, 201).JSON(t)
	assert.Equal(t, map[string]any{"id": v["id"], "product_id": float64(pid), "name": "Small", "price": float64(2500), "sku": "S-1",
		"stock_quantity": float64(4), "options": map[string]any{"size": "S"}, "sort_order": float64(0), "is_active": true}, v)
	vid := num(v["id"])
	f.do(t, "POST", base, map[string]any{"name": "Large", "price": 2900, "sort_order": -1}).Expect(t, 201)
	f.do(t, "POST", base, map[string]any{"price": 1}).Problem(t, 400, "bad_request")
	f.do(t, "POST", base, map[string]any{"name": "X", "price": -5}).Problem(t, 422, "validation_failed")
	f.do(t, "POST", base, map[string]any{"name": "X", "sort_order": -(int64(1) << 40)}).Problem(t, 422, "validation_failed")
	f.do(t, "POST", "/products/99999/variants", map[string]any{"name": "X"}).Problem(t, 404, "not_found")

	list := f.do(t, "GET", base, nil).Expect(t, 200).JSON(t)["data"].([]any)
	require.Len(t, list, 2)
	assert.Equal(t, "Large", list[0].(map[string]any)["name"], "by sort_order")
	assert.Len(t, f.do(t, "GET", fmt.Sprintf("/products/%d", pid), nil).Expect(t, 200).JSON(t)["variants"], 2)

	u := f.do(t, "PATCH", fmt.Sprintf("%s/%d", base, vid), map[string]any{"price": 2600, "is_active": false}).Expect(t, 200).JSON(t)
	assert.Equal(t, float64(2600), u["price"])
	assert.Equal(t, false, u["is_active"])
	assert.Equal(t, "Small", u["name"])
	f.do(t, "GET", fmt.Sprintf("%s/%d", base, vid), nil).Expect(t, 200)
	other := f.product(t, nil)
	f.do(t, "GET", fmt.Sprintf("/products/%d/variants/%d", other, vid), nil).Problem(t, 404, "not_found")
	f.do(t, "DELETE", fmt.Sprintf("%s/%d", base, vid), nil).Expect(t, 204)
	f.do(t, "DELETE", fmt.Sprintf("%s/%d", base, vid), nil).Problem(t, 404, "not_found")
}

// Stock cannot be lowered below what pending checkouts hold.
func TestStockBelowReserved(t *testing.T) {
	t.Parallel()
	f := setup(t)
	pid := f.product(t, map[string]any{"track_inventory": true, "stock_quantity": 5})
	admin := f.p.Key
	f.env.Do("POST", "/v1/orders", admin, map[string]any{"items": []any{item(pid, 3)}}).Expect(t, 201)
	p := f.do(t, "PATCH", fmt.Sprintf("/products/%d", pid), map[string]any{"stock_quantity": 2}).Problem(t, 409, "conflict")
	assert.Contains(t, p["detail"], "reserved")
	f.do(t, "PATCH", fmt.Sprintf("/products/%d", pid), map[string]any{"stock_quantity": 3}).Expect(t, 200)
}

func TestPublicCatalog(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	cat := f.do(t, "POST", "/product-categories", map[string]any{"name": "Shop"}).Expect(t, 201).JSON(t)
	hidden := f.do(t, "POST", "/product-categories", map[string]any{"name": "Hidden", "is_active": false}).Expect(t, 201).JSON(t)
	f.do(t, "POST", "/product-categories", map[string]any{"name": "Under hidden", "parent_id": num(hidden["id"])}).Expect(t, 201)
	f.do(t, "POST", "/product-categories", map[string]any{"name": "Sub", "parent_id": num(cat["id"])}).Expect(t, 201)
	active := f.do(t, "POST", "/products", map[string]any{"name": "Active One", "price": 100, "status": "active",
		"variants": []any{map[string]any{"name": "On"}, map[string]any{"name": "Off", "is_active": false}}}).Expect(t, 201).JSON(t)
	draft := f.product(t, map[string]any{"name": "Draft One", "status": "draft"})
	archived := f.product(t, map[string]any{"name": "Old One", "status": "archived"})

	get := func(path string, hdr map[string]string) *apitest.Resp {
		return f.env.Send(apitest.Request{Method: "GET", Path: "/v1/public" + path, Header: hdr})
	}
	proj := map[string]string{"X-Service-Project-Key": f.p.ID}

	list := get("/products", proj).Expect(t, 200)
	assert.Equal(t, "public, max-age=60", list.Header.Get("Cache-Control"))
	etag := list.Header.Get("ETag")
	require.NotEmpty(t, etag)
	data := list.JSON(t)["data"].([]any)
	require.Len(t, data, 1)
	assert.Equal(t, "Active One", data[0].(map[string]any)["name"])
	assert.Len(t, data[0].(map[string]any)["variants"], 1, "inactive variants are not public")
	assert.Equal(t, 304, get("/products", map[string]string{"X-Service-Project-Key": f.p.ID, "If-None-Match": etag}).Status)
	get("/products?project_id="+f.p.ID+"&status=draft", nil).Expect(t, 200)
	assert.Len(t, get("/products?project_id="+f.p.ID+"&status=draft", nil).JSON(t)["data"], 1, "status cannot widen the public list")

	byID := get(fmt.Sprintf("/products/%d", num(active["id"])), proj).Expect(t, 200).JSON(t)
	assert.Equal(t, "active-one", byID["slug"])
	bySlug := get("/products/active-one", proj).Expect(t, 200).JSON(t)
	assert.Equal(t, byID["id"], bySlug["id"])
	get(fmt.Sprintf("/products/%d", draft), proj).Problem(t, 404, "not_found")
	get("/products/draft-one", proj).Problem(t, 404, "not_found")
	get(fmt.Sprintf("/products/%d", archived), proj).Problem(t, 404, "not_found")

	cats := get("/product-categories", proj).Expect(t, 200)
	assert.Equal(t, "public, max-age=60", cats.Header.Get("Cache-Control"))
	tree := cats.JSON(t)["data"].([]any)
	require.Len(t, tree, 1, "inactive categories and their subtrees are hidden")
	assert.Equal(t, "Shop", tree[0].(map[string]any)["name"])
	assert.Len(t, tree[0].(map[string]any)["children"], 1)

	get("/products", map[string]string{"X-Service-Project-Key": "prj_000000000000000000000000"}).Problem(t, 404, "not_found")
	// The public surface is read-only.
	assert.NotEqual(t, 201, f.env.Send(apitest.Request{Method: "POST", Path: "/v1/public/products", Header: proj, Body: map[string]any{"name": "x", "price": 1}}).Status)
}

// TestProductVariantsAsRead pins the bytes of a product's variants on
// every read that returns them (the product, the list, /variants, the
// public product, a PATCH): the same objects, in the same order
// (sort_order, then id), as GET of each variant answers it; a product
// without variants has an empty list; /variants of no product is a 404.
func TestProductVariantsAsRead(t *testing.T) {
	t.Parallel()
	f := setupCatalog(t)
	pid := f.product(t, map[string]any{"name": "Loaf", "price": 2500, "status": "active"})
	base := fmt.Sprintf("/products/%d/variants", pid)
	var vids []int64
	for _, in := range []map[string]any{
		{"name": "B", "sort_order": 1, "options": map[string]any{"size": "M", "colour": "red"}, "stock_quantity": 3, "sku": "B-1"},
		{"name": "A", "sort_order": 1, "price": 99999999, "is_active": false},
		{"name": "C", "sort_order": -2},
	} {
		vids = append(vids, num(f.do(t, "POST", base, in).Expect(t, 201).JSON(t)["id"]))
	}
	one := func(vid int64) string {
		return strings.TrimSpace(string(f.do(t, "GET", fmt.Sprintf("%s/%d", base, vid), nil).Expect(t, 200).Body))
	}
	// By sort_order, then id: C (-2), B (1, first), A (1, second).
	want := "[" + one(vids[2]) + "," + one(vids[0]) + "," + one(vids[1]) + "]"
	field := func(body []byte, name string) string {
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(body, &m))
		return string(m[name])
	}
	product := f.do(t, "GET", fmt.Sprintf("/products/%d", pid), nil).Expect(t, 200).Body
	assert.Equal(t, want, field(product, "variants"))
	assert.Equal(t, want, field(f.do(t, "GET", base, nil).Expect(t, 200).Body, "data"))
	var list struct{ Data []json.RawMessage }
	require.NoError(t, json.Unmarshal(f.do(t, "GET", "/products", nil).Expect(t, 200).Body, &list))
	require.Len(t, list.Data, 1)
	assert.Equal(t, strings.TrimSpace(string(product)), string(list.Data[0]))
	patched := f.do(t, "PATCH", fmt.Sprintf("/products/%d", pid), map[string]any{"name": "Loaf"}).Expect(t, 200).Body
	assert.Equal(t, want, field(patched, "variants"))
	public := f.env.Send(apitest.Request{Method: "GET", Path: fmt.Sprintf("/v1/public/products/%d", pid),
		Header: map[string]string{"X-Service-Project-Key": f.p.ID}}).Expect(t, 200).Body
	assert.Equal(t, "["+one(vids[2])+","+one(vids[0])+"]", field(public, "variants"), "active variants only")

	bare := f.product(t, nil)
	assert.Equal(t, "[]", field(f.do(t, "GET", fmt.Sprintf("/products/%d", bare), nil).Expect(t, 200).Body, "variants"))
	assert.Equal(t, "[]", field(f.do(t, "GET", fmt.Sprintf("/products/%d/variants", bare), nil).Expect(t, 200).Body, "data"))
	f.do(t, "GET", "/products/99999/variants", nil).Problem(t, 404, "not_found")
}
