package openapi

// commerce documents the routes of tenant/commerce (catalogue, orders,
// checkout, the connected payment account) and the processor's webhook.
func (d *doc) commerce() {
	const noCredits = "No credits are charged."
	rowID := M{"type": "integer", "minimum": 1, "description": "Anything but a positive integer is 404."}
	catID := M{"id": rowID}
	prodID := M{"id": rowID}
	varIDs := M{"id": rowID, "variant_id": rowID}
	orderID := M{"id": rowID}
	publicCache := M{
		"Cache-Control": M{"required": true, "schema": M{"type": "string", "enum": []any{"public, max-age=60"}}},
		"ETag":          M{"required": true, "description": "A strong tag of the body; send it back in If-None-Match.", "schema": str()},
	}
	ifNoneMatch := M{"name": "If-None-Match", "in": "header", "description": "An ETag of an earlier answer: 304 when it still matches.", "schema": str()}
	publicOK := func(desc string, s M) []resp {
		return []resp{{status: 200, desc: desc, content: jsonOf(s), headers: publicCache},
			{status: 304, desc: "Not modified: the If-None-Match tag still matches.", headers: publicCache}}
	}

	// Product categories.
	d.add("GET", "/v1/product-categories", op{id: "listProductCategories", summary: "Product categories as a tree", tag: "commerce", scope: "commerce:read",
		desc: "Every category, as a forest of roots with nested `children`, each level ordered by sort_order then id. " +
			"Not paginated: the whole tree in one page (has_more false).",
		ok: []resp{{status: 200, desc: "The roots, children nested.", content: jsonOf(list(ref("ProductCategory")))}}})
	d.add("POST", "/v1/product-categories", op{id: "createProductCategory", summary: "Create a product category", tag: "commerce", scope: "commerce:write",
		desc:       "The slug is derived from the name when omitted. A slug already taken: 409 conflict; an unknown parent_id: 422. " + noCredits,
		idempotent: true, body: jsonOf(obj(commerceCategoryBody(), "name")), errs: []int{409, 422},
		ok: []resp{{status: 201, desc: "The category.", content: jsonOf(ref("ProductCategory"))}}})
	d.add("GET", "/v1/product-categories/{id}", op{id: "getProductCategory", summary: "A product category with its subtree", tag: "commerce", scope: "commerce:read",
		params: catID, errs: []int{404},
		ok: []resp{{status: 200, desc: "The category.", content: jsonOf(ref("ProductCategory"))}}})
	d.add("PATCH", "/v1/product-categories/{id}", op{id: "updateProductCategory", summary: "Update a product category", tag: "commerce", scope: "commerce:write",
		desc: "Changes the fields sent; `parent_id: null` makes it a root. A parent that is the category itself or one of its " +
			"descendants, or does not exist: 422. A slug already taken: 409 conflict.",
		params: catID, idempotent: true, body: jsonOf(obj(commerceCategoryBody())), errs: []int{404, 409, 422},
		ok: []resp{{status: 200, desc: "The category with its subtree.", content: jsonOf(ref("ProductCategory"))}}})
	d.add("DELETE", "/v1/product-categories/{id}", op{id: "deleteProductCategory", summary: "Delete a product category", tag: "commerce", scope: "commerce:write",
		desc:   "Its children become roots and its products lose their category.",
		params: catID, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})

	// Products.
	productFilters := []M{
		{"name": "category_id", "in": "query", "description": "Products of this category and of its subcategories.", "schema": M{"type": "integer", "minimum": 1}},
		{"name": "featured", "in": "query", "schema": M{"type": "boolean"}},
		{"name": "type", "in": "query", "schema": M{"type": "string", "enum": commerceProductTypes()}},
		{"name": "q", "in": "query", "description": "A case-insensitive substring of the name.", "schema": str()},
		{"name": "ids", "in": "query", "description": "Comma-separated product ids, at most 100.", "schema": str()},
	}
	d.add("GET", "/v1/products", op{id: "listProducts", summary: "Products, newest first", tag: "commerce", scope: "commerce:read",
		desc: "Each product with all its variants.",
		query: append(append(pageParams(), M{"name": "status", "in": "query", "schema": M{"type": "string", "enum": commerceProductStatuses()}}),
			productFilters...),
		errs: []int{422},
		ok:   []resp{{status: 200, desc: "The products.", content: jsonOf(list(ref("Product")))}}})
	create := commerceProductBody()
	create["variants"] = M{"type": "array", "maxItems": 100, "items": obj(commerceVariantBody(), "name"),
		"description": "Variants created with the product; a variant's price defaults to the product's."}
	d.add("POST", "/v1/products", op{id: "createProduct", summary: "Create a product", tag: "commerce", scope: "commerce:write",
		desc: "Defaults: currency usd, status draft, type physical. The slug is derived from the name when omitted (-2, -3, … on " +
			"collision); an explicit slug already taken is 409 conflict. published_at is set when the product becomes active. " + noCredits,
		idempotent: true, body: jsonOf(obj(create, "name", "price")), errs: []int{409, 422},
		ok: []resp{{status: 201, desc: "The product with its variants.", content: jsonOf(ref("Product"))}}})
	d.add("GET", "/v1/products/{id}", op{id: "getProduct", summary: "A product", tag: "commerce", scope: "commerce:read",
		params: prodID, errs: []int{404},
		ok: []resp{{status: 200, desc: "The product with all its variants.", content: jsonOf(ref("Product"))}}})
	d.add("PATCH", "/v1/products/{id}", op{id: "updateProduct", summary: "Update a product", tag: "commerce", scope: "commerce:write",
		desc: "Changes the fields sent; null clears compare_at_price, weight and category_id. Variants are managed under " +
			"/products/{id}/variants (`variants` here is 400). 409 conflict: a slug already taken, or stock_quantity below the " +
			"units pending checkouts hold.",
		params: prodID, idempotent: true, body: jsonOf(obj(commerceProductBody())), errs: []int{404, 409, 422},
		ok: []resp{{status: 200, desc: "The product with its variants.", content: jsonOf(ref("Product"))}}})
	d.add("DELETE", "/v1/products/{id}", op{id: "deleteProduct", summary: "Delete a product", tag: "commerce", scope: "commerce:write",
		desc:   "Deletes its variants too; orders keep their lines.",
		params: prodID, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})

	// Variants.
	d.add("GET", "/v1/products/{id}/variants", op{id: "listProductVariants", summary: "Variants of a product", tag: "commerce", scope: "commerce:read",
		desc:   "All of them, ordered by sort_order then id; not paginated.",
		params: prodID, errs: []int{404},
		ok: []resp{{status: 200, desc: "The variants.", content: jsonOf(list(ref("ProductVariant")))}}})
	d.add("POST", "/v1/products/{id}/variants", op{id: "createProductVariant", summary: "Add a variant", tag: "commerce", scope: "commerce:write",
		desc:   "The price defaults to the product's. " + noCredits,
		params: prodID, idempotent: true, body: jsonOf(obj(commerceVariantBody(), "name")), errs: []int{404, 422},
		ok: []resp{{status: 201, desc: "The variant.", content: jsonOf(ref("ProductVariant"))}}})
	d.add("GET", "/v1/products/{id}/variants/{variant_id}", op{id: "getProductVariant", summary: "A variant", tag: "commerce", scope: "commerce:read",
		params: varIDs, errs: []int{404},
		ok: []resp{{status: 200, desc: "The variant.", content: jsonOf(ref("ProductVariant"))}}})
	d.add("PATCH", "/v1/products/{id}/variants/{variant_id}", op{id: "updateProductVariant", summary: "Update a variant", tag: "commerce", scope: "commerce:write",
		desc:   "Changes the fields sent. 409 conflict when stock_quantity would go below the units pending checkouts hold.",
		params: varIDs, idempotent: true, body: jsonOf(obj(commerceVariantBody())), errs: []int{404, 409, 422},
		ok: []resp{{status: 200, desc: "The variant.", content: jsonOf(ref("ProductVariant"))}}})
	d.add("DELETE", "/v1/products/{id}/variants/{variant_id}", op{id: "deleteProductVariant", summary: "Delete a variant", tag: "commerce", scope: "commerce:write",
		params: varIDs, idempotent: true, errs: []int{404},
		ok: []resp{{status: 204, desc: "Deleted."}}})

	// Orders.
	d.add("GET", "/v1/orders", op{id: "listOrders", summary: "Orders, newest first", tag: "commerce", scope: "commerce:read",
		query: append(pageParams(),
			M{"name": "status", "in": "query", "schema": M{"type": "string", "enum": commerceOrderStatuses()}},
			M{"name": "payment_status", "in": "query", "schema": M{"type": "string", "enum": commercePaymentStatuses()}}),
		errs: []int{422},
		ok:   []resp{{status: 200, desc: "The orders.", content: jsonOf(list(ref("Order")))}}})
	d.add("POST", "/v1/orders", op{id: "createOrder", summary: "Record a manual order", tag: "commerce", scope: "commerce:admin",
		desc: "An order taken outside checkout, priced from the catalogue (any product not archived). payment_status `paid` records " +
			"it as paid at once (stock sold; events order.created and order.paid); `unpaid` (the default) leaves it pending with " +
			"its tracked stock reserved (order.created). Not enough stock: 409 conflict. " + noCredits,
		idempotent: true,
		body: jsonOf(obj(M{
			"items":          commerceItemsBody(),
			"customer":       commerceCustomerBody(),
			"payment_status": M{"type": "string", "enum": []any{"unpaid", "paid"}},
		}, "items")),
		errs: []int{409, 422},
		ok:   []resp{{status: 201, desc: "The order.", content: jsonOf(ref("Order"))}}})
	d.add("GET", "/v1/orders/{id}", op{id: "getOrder", summary: "An order", tag: "commerce", scope: "commerce:read",
		params: orderID, errs: []int{404},
		ok: []resp{{status: 200, desc: "The order.", content: jsonOf(ref("Order"))}}})
	d.add("POST", "/v1/orders/{id}/fulfill", op{id: "fulfillOrder", summary: "Mark an order delivered", tag: "commerce", scope: "commerce:write",
		desc:   "A paid or processing order becomes delivered (event order.fulfilled); any other state is 409 conflict.",
		params: orderID, idempotent: true, errs: []int{404, 409},
		ok: []resp{{status: 200, desc: "The order.", content: jsonOf(ref("Order"))}}})
	d.add("POST", "/v1/orders/{id}/cancel", op{id: "cancelOrder", summary: "Cancel an order", tag: "commerce", scope: "commerce:write",
		desc: "A pending, paid or processing order becomes cancelled (event order.cancelled): a pending checkout's session is " +
			"expired at the processor and its reserved stock freed; a paid order's units go back to stock. Cancelling does not " +
			"refund. 409 conflict: the order is delivered or cancelled, or the buyer has already completed its checkout. " +
			"502 when the processor cannot be reached.",
		params: orderID, idempotent: true, errs: []int{404, 409, 502},
		ok: []resp{{status: 200, desc: "The order.", content: jsonOf(ref("Order"))}}})
	d.add("POST", "/v1/orders/{id}/refund", op{id: "refundOrder", summary: "Refund an order in full or in part", tag: "commerce", scope: "commerce:admin",
		desc: "Without a body or an amount, what is not yet refunded is. A checkout payment is refunded through the processor on the " +
			"connected account (the Idempotency-Key is passed on); a manual order paid outside it is refunded as a record. " +
			"Event order.refunded. 409 conflict: the order is not paid or fully refunded, or its payment is not known yet; 422: an " +
			"amount above what is left; 502: the processor failed.",
		params: orderID, idempotent: true, bodyOptional: true,
		body: jsonOf(obj(M{"amount": M{"type": "integer", "minimum": 1, "description": "In the currency's minor unit; at most what is not yet refunded."}})),
		errs: []int{404, 409, 422, 502},
		ok:   []resp{{status: 200, desc: "The order.", content: jsonOf(ref("Order"))}}})

	// Checkout and the connected account.
	d.add("POST", "/v1/checkout-sessions", op{id: "createCheckoutSession", summary: "Start a hosted checkout", tag: "commerce", scope: "commerce:write",
		desc: "Creates a pending order (event order.created) holding the tracked stock of its lines, then a hosted checkout " +
			"session for it on the project's connected account, payable for one hour; send the buyer to checkout_url. Only " +
			"active products and variants, in one currency. 409: `connect_not_ready` before the account can take charges, " +
			"`conflict` for insufficient stock, `idempotency_conflict` when the processor saw the Idempotency-Key with other " +
			"parameters. 502: the processor refused or failed (nothing is kept). 503: payments are not configured. Costs 0 credits.",
		idempotent: true,
		body: jsonOf(obj(M{
			"items":    commerceItemsBody(),
			"customer": commerceCustomerBody(),
			"success_url": M{"type": "string", "minLength": 1, "maxLength": 2048,
				"description": "Absolute http(s) URL; may contain {CHECKOUT_SESSION_ID}, replaced by the processor."},
			"cancel_url": M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "Absolute http(s) URL."},
		}, "items", "success_url", "cancel_url")),
		errs: []int{409, 422, 502},
		ok:   []resp{{status: 201, desc: "The checkout session.", content: jsonOf(ref("CheckoutSession"))}}})
	d.add("GET", "/v1/payments/connect", op{id: "getPaymentsConnect", summary: "Status of the connected payment account", tag: "commerce", scope: "commerce:read",
		desc: "Refreshed from the processor (a change is stored and emits connect.account_updated); should the processor be " +
			"unreachable, the last known status. account_id is null before onboarding. 503: payments are not configured.",
		ok: []resp{{status: 200, desc: "The account status.", content: jsonOf(ref("PaymentsConnect"))}}})
	d.add("POST", "/v1/payments/connect/onboard", op{id: "onboardPaymentsConnect", summary: "Onboard the connected payment account", tag: "commerce", scope: "commerce:admin",
		desc: "Creates the project's connected account on first use (once), and answers a hosted onboarding link; each call " +
			"gives a new link. 502: the processor failed; 503: payments are not configured. " + noCredits,
		idempotent: true,
		body: jsonOf(obj(M{
			"return_url":  M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "Absolute http(s) URL the processor returns to."},
			"refresh_url": M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "Absolute http(s) URL for an expired link."},
		}, "return_url", "refresh_url")),
		errs: []int{409, 422, 502},
		ok:   []resp{{status: 200, desc: "The onboarding link.", content: jsonOf(obj(M{"url": str()}, "url"))}}})
	d.add("POST", "/v1/payments/webhook", op{id: "paymentsWebhook", summary: "The payment processor's webhook", tag: "commerce", auth: authNone, uncharged: true,
		desc: "Called by the processor, not by clients: no key; the Stripe-Signature header (HMAC under STRIPE_WEBHOOK_SECRET, " +
			"timestamp within 300 s) authenticates the raw body, else 400. Never refused by the rate limiter: its headers show the sender's bucket uncharged. Checkout, " +
			"refund and account events move orders and the account (events order.paid, order.cancelled, order.refunded, " +
			"connect.account_updated); each processor event applies once per project. 503: the webhook secret is not configured.",
		headers: []M{{"name": "Stripe-Signature", "in": "header", "required": true,
			"description": "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">", "schema": M{"type": "string", "minLength": 1}}},
		body: jsonOf(M{"type": "object", "description": "A processor event.", "required": []any{"id", "type", "data"},
			"properties": M{"id": M{"type": "string", "minLength": 1}, "type": str(), "account": str(),
				"data": M{"type": "object", "required": []any{"object"}, "properties": M{"object": M{"type": "object"}}}}}),
		ok: []resp{{status: 200, desc: "Received (also when the event is a duplicate or not used).", content: jsonOf(ref("PaymentsWebhookAck"))}}})

	// The public read surface.
	d.add("GET", "/v1/public/products", op{id: "listPublicProducts", summary: "Active products, newest first", tag: "public", auth: authPublic,
		desc:    "No key. Active products only, each with its active variants. Cache-Control public for 60 s with an ETag.",
		query:   append(pageParams(), productFilters...),
		headers: []M{ifNoneMatch},
		errs:    []int{422},
		ok:      publicOK("The products.", list(ref("Product")))})
	d.add("GET", "/v1/public/products/{id_or_slug}", op{id: "getPublicProduct", summary: "An active product by id or slug", tag: "public", auth: authPublic,
		desc:    "No key. A numeric path is tried as the id first, then as a slug. Only active variants. Not active: 404.",
		params:  M{"id_or_slug": M{"type": "string", "minLength": 1}},
		headers: []M{ifNoneMatch},
		errs:    []int{404},
		ok:      publicOK("The product.", ref("Product"))})
	d.add("GET", "/v1/public/product-categories", op{id: "listPublicProductCategories", summary: "Active product categories as a tree", tag: "public", auth: authPublic,
		desc:    "No key. Inactive categories and their subtrees are left out. Not paginated.",
		headers: []M{ifNoneMatch},
		ok:      publicOK("The roots, children nested.", list(ref("ProductCategory")))})
}

func commerceProductStatuses() []any { return []any{"draft", "active", "archived"} }
func commerceProductTypes() []any    { return []any{"physical", "digital", "service"} }
func commerceOrderStatuses() []any {
	return []any{"pending", "paid", "processing", "delivered", "cancelled"}
}
func commercePaymentStatuses() []any {
	return []any{"unpaid", "paid", "partially_refunded", "refunded"}
}

func commerceSortOrder() M {
	return M{"type": "integer", "minimum": -2147483648, "maximum": 2147483647}
}

func commerceStock() M { return M{"type": "integer", "minimum": 0, "maximum": 2147483647} }

func commerceSlug() M {
	return M{"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,254}$"}
}

// commerceCategoryBody is the body of a category create (name required) or PATCH.
func commerceCategoryBody() M {
	return M{
		"name":        M{"type": "string", "minLength": 1, "maxLength": 255},
		"slug":        commerceSlug(),
		"description": M{"type": "string", "maxLength": 10000},
		"image":       M{"type": "string", "maxLength": 2048, "description": "An absolute http(s) URL, or empty."},
		"parent_id":   M{"type": []any{"integer", "null"}, "minimum": 1, "description": "An existing category; null for a root."},
		"sort_order":  commerceSortOrder(),
		"is_active":   M{"type": "boolean"},
	}
}

// commerceProductBody is the body of a product PATCH (create adds variants).
func commerceProductBody() M {
	return M{
		"name":              M{"type": "string", "minLength": 1, "maxLength": 255},
		"slug":              commerceSlug(),
		"price":             M{"type": "integer", "minimum": 0, "description": "In the currency's minor unit (cents)."},
		"currency":          M{"type": "string", "pattern": "^[a-z]{3}$"},
		"status":            M{"type": "string", "enum": commerceProductStatuses()},
		"description":       M{"type": "string", "maxLength": 100000},
		"short_description": M{"type": "string", "maxLength": 500},
		"compare_at_price":  M{"type": []any{"integer", "null"}, "minimum": 0},
		"type":              M{"type": "string", "enum": commerceProductTypes()},
		"sku":               M{"type": "string", "maxLength": 255},
		"stock_quantity":    commerceStock(),
		"track_inventory":   M{"type": "boolean"},
		"weight":            M{"type": []any{"number", "null"}, "minimum": 0},
		"images": M{"type": "array", "maxItems": 50,
			"items": M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "An absolute http(s) URL."}},
		"metadata":    M{"type": "object"},
		"category_id": M{"type": []any{"integer", "null"}, "minimum": 1, "description": "An existing category; null for none."},
		"featured":    M{"type": "boolean"},
	}
}

// commerceVariantBody is the body of a variant create (name required) or PATCH.
func commerceVariantBody() M {
	return M{
		"name":           M{"type": "string", "minLength": 1, "maxLength": 255},
		"price":          M{"type": "integer", "minimum": 0, "description": "Defaults to the product's price."},
		"sku":            M{"type": "string", "maxLength": 255},
		"stock_quantity": commerceStock(),
		"options":        M{"type": "object", "maxProperties": 20, "additionalProperties": str(), "description": "Option name to value, e.g. {\"size\": \"L\"}."},
		"sort_order":     commerceSortOrder(),
		"is_active":      M{"type": "boolean"},
	}
}

func commerceItemsBody() M {
	return M{"type": "array", "minItems": 1, "maxItems": 100, "items": obj(M{
		"product_id": M{"type": "integer", "minimum": 1},
		"variant_id": M{"type": "integer", "minimum": 1, "description": "A variant of the product; its price and SKU apply."},
		"quantity":   M{"type": "integer", "minimum": 1, "maximum": 10000},
	}, "product_id", "quantity")}
}

func commerceCustomerBody() M {
	return obj(M{
		"name":  M{"type": "string", "maxLength": 255},
		"email": M{"type": "string", "maxLength": 254, "description": "An email address (or empty)."},
	})
}

// commerceCategoryDepth is how many levels of children ProductCategory
// spells out. The tree has no depth limit, but the contract validator
// (libopenapi-validator) renders every schema inline and so cannot follow
// a recursive $ref: below this depth a child is only said to be an object
// of the same shape.
const commerceCategoryDepth = 4

// commerceCategory is the Product category with depth levels of children.
func commerceCategory(depth int) M {
	child := M{"type": "object", "description": "A ProductCategory (the same shape, nested further)."}
	if depth > 0 {
		child = commerceCategory(depth - 1)
	}
	return obj(M{
		"id": M{"type": "integer", "minimum": 1}, "name": str(), "slug": str(), "description": str(), "image": str(),
		"parent_id": M{"type": []any{"integer", "null"}, "minimum": 1}, "sort_order": M{"type": "integer"},
		"is_active":  M{"type": "boolean"},
		"children":   M{"type": "array", "items": child, "description": "Subcategories, each a ProductCategory, ordered by sort_order then id."},
		"created_at": ts(), "updated_at": ts(),
	}, "id", "name", "slug", "description", "image", "parent_id", "sort_order", "is_active", "children", "created_at", "updated_at")
}

// commerceSchemas are the component schemas of tenant/commerce.
func commerceSchemas() M {
	id := M{"type": "integer", "minimum": 1}
	return M{
		"ProductCategory": commerceCategory(commerceCategoryDepth),
		"Product": obj(M{
			"id": id, "name": str(), "slug": str(),
			"price":    M{"type": "integer", "minimum": 0, "description": "In the currency's minor unit (cents)."},
			"currency": M{"type": "string", "pattern": "^[a-z]{3}$"}, "status": M{"type": "string", "enum": commerceProductStatuses()},
			"description": str(), "short_description": M{"type": "string", "maxLength": 500},
			"compare_at_price": M{"type": []any{"integer", "null"}, "minimum": 0},
			"type":             M{"type": "string", "enum": commerceProductTypes()}, "sku": str(),
			"stock_quantity": M{"type": "integer", "minimum": 0}, "track_inventory": M{"type": "boolean"},
			"weight": M{"type": []any{"number", "null"}}, "images": arr(str()), "metadata": M{"type": "object"},
			"category_id": M{"type": []any{"integer", "null"}, "minimum": 1}, "featured": M{"type": "boolean"},
			"published_at": nullable(ts()), "created_at": ts(), "updated_at": ts(),
			"variants": M{"type": "array", "items": ref("ProductVariant"), "description": "Ordered by sort_order then id (active ones only on the public surface)."},
		}, "id", "name", "slug", "price", "currency", "status", "description", "short_description", "compare_at_price", "type", "sku",
			"stock_quantity", "track_inventory", "weight", "images", "metadata", "category_id", "featured", "published_at",
			"created_at", "updated_at", "variants"),
		"ProductVariant": obj(M{
			"id": id, "product_id": id, "name": str(), "price": M{"type": "integer", "minimum": 0}, "sku": str(),
			"stock_quantity": M{"type": "integer", "minimum": 0}, "options": M{"type": "object", "additionalProperties": str()},
			"sort_order": M{"type": "integer"}, "is_active": M{"type": "boolean"},
		}, "id", "product_id", "name", "price", "sku", "stock_quantity", "options", "sort_order", "is_active"),
		"Order": obj(M{
			"id": id, "number": M{"type": "string", "pattern": "^ORD-[0-9]{6,}$"},
			"status":         M{"type": "string", "enum": commerceOrderStatuses()},
			"payment_status": M{"type": "string", "enum": commercePaymentStatuses()},
			"items": arr(obj(M{
				"product_id": id, "variant_id": M{"type": []any{"integer", "null"}, "minimum": 1}, "name": str(), "sku": str(),
				"quantity": M{"type": "integer", "minimum": 1}, "unit_price": M{"type": "integer", "minimum": 0}, "total": M{"type": "integer", "minimum": 0},
			}, "product_id", "variant_id", "name", "sku", "quantity", "unit_price", "total")),
			"subtotal": M{"type": "integer", "minimum": 0}, "total": M{"type": "integer", "minimum": 0},
			"refunded_amount": M{"type": "integer", "minimum": 0}, "currency": M{"type": "string", "pattern": "^[a-z]{3}$"},
			"customer":           obj(M{"name": str(), "email": str()}, "name", "email"),
			"payment_session_id": M{"type": []any{"string", "null"}, "description": "The processor's checkout session; null for a manual order."},
			"created_at":         ts(), "updated_at": ts(),
		}, "id", "number", "status", "payment_status", "items", "subtotal", "total", "refunded_amount", "currency", "customer",
			"payment_session_id", "created_at", "updated_at"),
		"CheckoutSession": obj(M{
			"order_id": id, "payment_session_id": M{"type": "string", "minLength": 1},
			"checkout_url": M{"type": "string", "minLength": 1, "description": "Redirect the buyer here."}, "expires_at": ts(),
		}, "order_id", "payment_session_id", "checkout_url", "expires_at"),
		"PaymentsConnect": obj(M{
			"account_id":      M{"type": []any{"string", "null"}, "description": "The connected account; null before onboarding."},
			"charges_enabled": M{"type": "boolean"}, "payouts_enabled": M{"type": "boolean"}, "details_submitted": M{"type": "boolean"},
		}, "account_id", "charges_enabled", "payouts_enabled", "details_submitted"),
		"PaymentsWebhookAck": obj(M{
			"received":  M{"type": "boolean", "enum": []any{true}},
			"duplicate": M{"type": "boolean", "description": "Present (true) when the event was applied before."},
			"ignored":   M{"type": "string", "description": "Present when the event was not used, with the reason."},
		}, "received"),
	}
}
