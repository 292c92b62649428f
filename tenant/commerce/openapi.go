package commerce

import (
	"strconv"

	"github.com/plinth-dev/plinth/internal/openapi"
	"github.com/plinth-dev/plinth/internal/slug"
	"github.com/plinth-dev/plinth/tenant"
)

// OpenAPI describes the routes of the pillar (catalogue, orders, checkout,
// the connected payment account) and the processor's webhook.
func OpenAPI(d *openapi.Doc) {
	d.Tag("commerce", "The shop: products with variants and categories, orders, checkout sessions, refunds and the payment processor's onboarding and webhooks.")
	const noCredits = "No credits are charged."
	openAPISchemas(d)
	category, product, variant, order := openapi.Ref("ProductCategory"), openapi.Ref("Product"), openapi.Ref("ProductVariant"), openapi.Ref("Order")
	rowID := openapi.M{"type": "integer", "minimum": 1, "description": "Anything but a positive integer is 404."}
	catID := openapi.M{"id": rowID}
	prodID := openapi.M{"id": rowID}
	varIDs := openapi.M{"id": rowID, "variant_id": rowID}
	orderID := openapi.M{"id": rowID}
	publicCache := openapi.M{
		"Cache-Control": openapi.M{"required": true, "schema": openapi.M{"type": "string", "enum": []any{"public, max-age=60"}}},
		"ETag":          openapi.M{"required": true, "description": "A strong tag of the body; send it back in If-None-Match.", "schema": openapi.Str()},
	}
	ifNoneMatch := openapi.M{"name": "If-None-Match", "in": "header", "description": "An ETag of an earlier answer: 304 when it still matches.", "schema": openapi.Str()}
	publicOK := func(desc string, s openapi.M) []openapi.Resp {
		return []openapi.Resp{{Status: 200, Desc: desc, Content: openapi.JSON(s), Headers: publicCache},
			{Status: 304, Desc: "Not modified: the If-None-Match tag still matches.", Headers: publicCache}}
	}

	// Product categories.
	d.Add("GET", "/v1/product-categories", openapi.Op{ID: "listProductCategories", Summary: "Product categories as a tree", Tag: "commerce", Scope: "commerce:read",
		Desc: "Every category, as a forest of roots with nested `children`, each level ordered by sort_order then id. " +
			"Not paginated: the whole tree in one page (has_more false).",
		OK: []openapi.Resp{{Status: 200, Desc: "The roots, children nested.", Content: openapi.JSON(d.List("ProductCategory"))}}})
	d.Add("POST", "/v1/product-categories", openapi.Op{ID: "createProductCategory", Summary: "Create a product category", Tag: "commerce", Scope: "commerce:write",
		Desc:       "The slug is derived from the name when omitted. A slug already taken: 409 conflict; an unknown parent_id: 422. " + noCredits,
		Idempotent: true, Body: openapi.JSON(d.Schema("CreateProductCategoryRequest", openapi.Obj(categoryFields(), "name"))), Errs: []int{409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The category.", Content: openapi.JSON(category)}}})
	d.Add("GET", "/v1/product-categories/{id}", openapi.Op{ID: "getProductCategory", Summary: "A product category with its subtree", Tag: "commerce", Scope: "commerce:read",
		Params: catID, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The category.", Content: openapi.JSON(category)}}})
	d.Add("PATCH", "/v1/product-categories/{id}", openapi.Op{ID: "updateProductCategory", Summary: "Update a product category", Tag: "commerce", Scope: "commerce:write",
		Desc: "Changes the fields sent; `parent_id: null` makes it a root. A parent that is the category itself or one of its " +
			"descendants, or does not exist: 422. A slug already taken: 409 conflict.",
		Params: catID, Idempotent: true, Body: openapi.JSON(d.Schema("UpdateProductCategoryRequest", openapi.Obj(categoryFields()))), Errs: []int{404, 409, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The category with its subtree.", Content: openapi.JSON(category)}}})
	d.Add("DELETE", "/v1/product-categories/{id}", openapi.Op{ID: "deleteProductCategory", Summary: "Delete a product category", Tag: "commerce", Scope: "commerce:write",
		Desc:   "Its children become roots and its products lose their category.",
		Params: catID, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})

	// Products.
	langParam := openapi.M{"name": "lang", "in": "query", "schema": openapi.M{"type": "string", "pattern": `^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$`},
		"description": "Serves name, description and short_description in this language: each from the first language of its fallback chain " +
			"(the project's fallback_languages, then the default language: the product's own fields) that has it; `fallback` says which came " +
			"from another language. Absent: as stored. Not a language code: 422."}
	productFilters := []openapi.M{
		{"name": "category_id", "in": "query", "description": "Products of this category and of its subcategories.", "schema": openapi.M{"type": "integer", "minimum": 1}},
		{"name": "featured", "in": "query", "schema": openapi.M{"type": "boolean"}},
		{"name": "type", "in": "query", "schema": productType()},
		{"name": "q", "in": "query", "description": "A case-insensitive substring of the name.", "schema": openapi.Str()},
		{"name": "ids", "in": "query", "description": "Comma-separated product ids, at most 100.", "schema": openapi.Str()},
	}
	d.Add("GET", "/v1/products", openapi.Op{ID: "listProducts", Summary: "Products, newest first", Tag: "commerce", Scope: "commerce:read",
		Desc: "Each product with all its variants.",
		Query: append(append(openapi.PageParams(), openapi.M{"name": "status", "in": "query", "schema": productStatus()}),
			append(productFilters, langParam)...),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The products.", Content: openapi.JSON(d.List("Product"))}}})
	createVariant := d.Schema("CreateProductVariantRequest", openapi.Obj(variantFields(), "name"))
	create := openapi.With(productFields(), openapi.M{"variants": openapi.M{"type": "array", "maxItems": 100, "items": createVariant,
		"description": "Variants created with the product; a variant's price defaults to the product's."}})
	d.Add("POST", "/v1/products", openapi.Op{ID: "createProduct", Summary: "Create a product", Tag: "commerce", Scope: "commerce:write",
		Desc: "Defaults: currency usd, status draft, type physical. The slug is derived from the name when omitted (-2, -3, … on " +
			"collision); an explicit slug already taken is 409 conflict. published_at is set when the product becomes active. " + noCredits,
		Idempotent: true, Body: openapi.JSON(d.Schema("CreateProductRequest", openapi.Obj(create, "name", "price"))), Errs: []int{409, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The product with its variants.", Content: openapi.JSON(product)}}})
	d.Add("GET", "/v1/products/{id}", openapi.Op{ID: "getProduct", Summary: "A product", Tag: "commerce", Scope: "commerce:read",
		Params: prodID, Query: []openapi.M{langParam}, Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The product with all its variants.", Content: openapi.JSON(product)}}})
	d.Add("PATCH", "/v1/products/{id}", openapi.Op{ID: "updateProduct", Summary: "Update a product", Tag: "commerce", Scope: "commerce:write",
		Desc: "Changes the fields sent; null clears compare_at_price, weight and category_id. Variants are managed under " +
			"/products/{id}/variants (`variants` here is 400). 409 conflict: a slug already taken, or stock_quantity below the " +
			"units pending checkouts hold.",
		Params: prodID, Idempotent: true, Body: openapi.JSON(d.Schema("UpdateProductRequest", openapi.Obj(productFields()))), Errs: []int{404, 409, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The product with its variants.", Content: openapi.JSON(product)}}})
	d.Add("DELETE", "/v1/products/{id}", openapi.Op{ID: "deleteProduct", Summary: "Delete a product", Tag: "commerce", Scope: "commerce:write",
		Desc:   "Deletes its variants too; orders keep their lines.",
		Params: prodID, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})

	// Variants.
	d.Add("GET", "/v1/products/{id}/variants", openapi.Op{ID: "listProductVariants", Summary: "Variants of a product", Tag: "commerce", Scope: "commerce:read",
		Desc:   "All of them, ordered by sort_order then id; not paginated.",
		Params: prodID, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The variants.", Content: openapi.JSON(d.List("ProductVariant"))}}})
	d.Add("POST", "/v1/products/{id}/variants", openapi.Op{ID: "createProductVariant", Summary: "Add a variant", Tag: "commerce", Scope: "commerce:write",
		Desc:   "The price defaults to the product's. " + noCredits,
		Params: prodID, Idempotent: true, Body: openapi.JSON(createVariant), Errs: []int{404, 422},
		OK: []openapi.Resp{{Status: 201, Desc: "The variant.", Content: openapi.JSON(variant)}}})
	d.Add("GET", "/v1/products/{id}/variants/{variant_id}", openapi.Op{ID: "getProductVariant", Summary: "A variant", Tag: "commerce", Scope: "commerce:read",
		Params: varIDs, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The variant.", Content: openapi.JSON(variant)}}})
	d.Add("PATCH", "/v1/products/{id}/variants/{variant_id}", openapi.Op{ID: "updateProductVariant", Summary: "Update a variant", Tag: "commerce", Scope: "commerce:write",
		Desc:   "Changes the fields sent. 409 conflict when stock_quantity would go below the units pending checkouts hold.",
		Params: varIDs, Idempotent: true, Body: openapi.JSON(d.Schema("UpdateProductVariantRequest", openapi.Obj(variantFields()))), Errs: []int{404, 409, 422},
		OK: []openapi.Resp{{Status: 200, Desc: "The variant.", Content: openapi.JSON(variant)}}})
	d.Add("DELETE", "/v1/products/{id}/variants/{variant_id}", openapi.Op{ID: "deleteProductVariant", Summary: "Delete a variant", Tag: "commerce", Scope: "commerce:write",
		Params: varIDs, Idempotent: true, Errs: []int{404},
		OK: []openapi.Resp{{Status: 204, Desc: "Deleted."}}})

	// Orders.
	items := openapi.M{"type": "array", "minItems": 1, "maxItems": MaxLines, "description": orderTotalNote, "items": d.Schema("OrderItemInput", openapi.Obj(openapi.M{
		"product_id": openapi.M{"type": "integer", "minimum": 1},
		"variant_id": openapi.M{"type": "integer", "minimum": 1, "description": "A variant of the product; its price and SKU apply."},
		"quantity":   openapi.M{"type": "integer", "minimum": 1, "maximum": MaxQuantity},
	}, "product_id", "quantity"))}
	customer := d.Schema("CustomerInput", openapi.Obj(openapi.M{
		"name":  openapi.M{"type": "string", "maxLength": 255},
		"email": openapi.M{"type": "string", "maxLength": 254, "description": "An email address (or empty)."},
	}))
	d.Add("GET", "/v1/orders", openapi.Op{ID: "listOrders", Summary: "Orders, newest first", Tag: "commerce", Scope: "commerce:read",
		Query: append(openapi.PageParams(),
			openapi.M{"name": "status", "in": "query", "schema": orderStatus()},
			openapi.M{"name": "payment_status", "in": "query", "schema": paymentStatus()}),
		Errs: []int{422},
		OK:   []openapi.Resp{{Status: 200, Desc: "The orders.", Content: openapi.JSON(d.List("Order"))}}})
	d.Add("POST", "/v1/orders", openapi.Op{ID: "createOrder", Summary: "Record a manual order", Tag: "commerce", Scope: "commerce:admin",
		Desc: "An order taken outside checkout, priced from the catalogue (any product not archived). payment_status `paid` records " +
			"it as paid at once (stock sold; events order.created and order.paid); `unpaid` (the default) leaves it pending with " +
			"its tracked stock reserved (order.created). Not enough stock: 409 conflict. " + noCredits,
		Idempotent: true,
		Body: openapi.JSON(d.Schema("CreateOrderRequest", openapi.Obj(openapi.M{
			"items":          items,
			"customer":       customer,
			"payment_status": openapi.M{"type": "string", "enum": []any{"unpaid", "paid"}},
		}, "items"))),
		Errs: []int{409, 422},
		OK:   []openapi.Resp{{Status: 201, Desc: "The order.", Content: openapi.JSON(order)}}})
	d.Add("GET", "/v1/orders/{id}", openapi.Op{ID: "getOrder", Summary: "An order", Tag: "commerce", Scope: "commerce:read",
		Params: orderID, Errs: []int{404},
		OK: []openapi.Resp{{Status: 200, Desc: "The order.", Content: openapi.JSON(order)}}})
	d.Add("POST", "/v1/orders/{id}/fulfill", openapi.Op{ID: "fulfillOrder", Summary: "Mark an order delivered", Tag: "commerce", Scope: "commerce:write",
		Desc:   "A paid or processing order becomes delivered (event order.fulfilled); any other state is 409 conflict.",
		Params: orderID, Idempotent: true, Errs: []int{404, 409},
		OK: []openapi.Resp{{Status: 200, Desc: "The order.", Content: openapi.JSON(order)}}})
	d.Add("POST", "/v1/orders/{id}/cancel", openapi.Op{ID: "cancelOrder", Summary: "Cancel an order", Tag: "commerce", Scope: "commerce:write",
		Desc: "A pending, paid or processing order becomes cancelled (event order.cancelled): a pending checkout's session is " +
			"expired at the processor and its reserved stock freed; a paid order's units go back to stock. Cancelling does not " +
			"refund. 409 conflict: the order is delivered or cancelled, or the buyer has already completed its checkout. " +
			"409 connect_not_ready: a pending checkout while the server has no payment processor configured. 502 when the " +
			"processor cannot be reached.",
		Params: orderID, Idempotent: true, Errs: []int{404, 409, 502},
		OK: []openapi.Resp{{Status: 200, Desc: "The order.", Content: openapi.JSON(order)}}})
	d.Add("POST", "/v1/orders/{id}/refund", openapi.Op{ID: "refundOrder", Summary: "Refund an order in full or in part", Tag: "commerce", Scope: "commerce:admin",
		Desc: "Without a body or an amount, what is not yet refunded is. A checkout payment is refunded through the processor on the " +
			"connected account (the Idempotency-Key is passed on); a manual order paid outside it is refunded as a record. " +
			"Event order.refunded. 409 conflict: the order is not paid or fully refunded, or its payment is not known yet; 422: an " +
			"amount above what is left; 409 connect_not_ready: a processor payment while the server has no payment processor " +
			"configured; 502: the processor failed.",
		Params: orderID, Idempotent: true, BodyOptional: true,
		Body: openapi.JSON(d.Schema("RefundOrderRequest", openapi.Obj(openapi.M{
			"amount": openapi.M{"type": "integer", "minimum": 1, "maximum": MaxAmount, "description": "In the currency's minor unit; at most what is not yet refunded."}}))),
		Errs: []int{404, 409, 422, 502},
		OK:   []openapi.Resp{{Status: 200, Desc: "The order.", Content: openapi.JSON(order)}}})

	// Checkout and the connected account.
	d.Add("POST", "/v1/checkout-sessions", openapi.Op{ID: "createCheckoutSession", Summary: "Start a hosted checkout", Tag: "commerce", Scope: "commerce:write",
		Desc: "Creates a pending order (event order.created) holding the tracked stock of its lines, then a hosted checkout " +
			"session for it on the project's connected account, payable for one hour; send the buyer to checkout_url. Only " +
			"active products and variants, in one currency. 409: `connect_not_ready` before the account can take charges, " +
			"`conflict` for insufficient stock, `idempotency_conflict` when the processor saw the Idempotency-Key with other " +
			"parameters, and `connect_not_ready` too when the server has no payment processor configured. 502: the processor " +
			"refused or failed (nothing is kept). Costs 0 credits.",
		Idempotent: true,
		Body: openapi.JSON(d.Schema("CreateCheckoutSessionRequest", openapi.Obj(openapi.M{
			"items":    items,
			"customer": customer,
			"success_url": openapi.M{"type": "string", "minLength": 1, "maxLength": 2048,
				"description": "Absolute http(s) URL; may contain {CHECKOUT_SESSION_ID}, replaced by the processor."},
			"cancel_url": openapi.M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "Absolute http(s) URL."},
		}, "items", "success_url", "cancel_url"))),
		Errs: []int{409, 422, 502},
		OK:   []openapi.Resp{{Status: 201, Desc: "The checkout session.", Content: openapi.JSON(openapi.Ref("CheckoutSession"))}}})
	d.Add("GET", "/v1/payments/connect", openapi.Op{ID: "getPaymentsConnect", Summary: "Status of the connected payment account", Tag: "commerce", Scope: "commerce:read",
		Desc: "Refreshed from the processor (a change is stored and emits connect.account_updated); should the processor be " +
			"unreachable or the server has none configured, the last known status. account_id is null before onboarding.",
		OK: []openapi.Resp{{Status: 200, Desc: "The account status.", Content: openapi.JSON(openapi.Ref("PaymentsConnect"))}}})
	d.Add("POST", "/v1/payments/connect/onboard", openapi.Op{ID: "onboardPaymentsConnect", Summary: "Onboard the connected payment account", Tag: "commerce", Scope: "commerce:admin",
		Desc: "Creates the project's connected account on first use (once), and answers a hosted onboarding link; each call " +
			"gives a new link. 409 connect_not_ready: the server has no payment processor configured. 502: the processor failed. " + noCredits,
		Idempotent: true,
		Body: openapi.JSON(d.Schema("OnboardPaymentsConnectRequest", openapi.Obj(openapi.M{
			"return_url":  openapi.M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "Absolute http(s) URL the processor returns to."},
			"refresh_url": openapi.M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "Absolute http(s) URL for an expired link."},
		}, "return_url", "refresh_url"))),
		Errs: []int{409, 422, 502},
		OK:   []openapi.Resp{{Status: 200, Desc: "The onboarding link.", Content: openapi.JSON(openapi.Obj(openapi.M{"url": openapi.Str()}, "url"))}}})
	d.Add("POST", "/v1/payments/webhook", openapi.Op{ID: "paymentsWebhook", Summary: "The payment processor's webhook", Tag: "commerce", Auth: openapi.None, Uncharged: true,
		Desc: "Called by the processor, not by clients: no key; the Stripe-Signature header (HMAC under STRIPE_WEBHOOK_SECRET, " +
			"timestamp within 300 s) authenticates the raw body, else 400. Never refused by the rate limiter: its headers show the sender's bucket uncharged. Checkout, " +
			"refund and account events move orders and the account (events order.paid, order.cancelled, order.refunded, " +
			"connect.account_updated); each processor event applies once per project. 503: the webhook secret is not configured.",
		Headers: []openapi.M{{"name": "Stripe-Signature", "in": "header", "required": true,
			"description": "t=<unix seconds>,v1=<hex HMAC-SHA256 of \"<t>.<body>\">", "schema": openapi.M{"type": "string", "minLength": 1}}},
		Body: openapi.JSON(d.Schema("PaymentsWebhookEvent", openapi.M{"type": "object", "description": "A processor event (its other members are ignored).",
			"required": []any{"id", "type", "data"}, "additionalProperties": true,
			"properties": openapi.M{"id": openapi.M{"type": "string", "minLength": 1}, "type": openapi.Str(), "account": openapi.Str(),
				"data": openapi.M{"type": "object", "required": []any{"object"}, "additionalProperties": true,
					"properties": openapi.M{"object": openapi.AnyObject("The processor's object the event is about.")}}}})),
		OK: []openapi.Resp{{Status: 200, Desc: "Received (also when the event is a duplicate or not used).", Content: openapi.JSON(openapi.Ref("PaymentsWebhookAck"))}}})

	// The public read surface.
	d.Add("GET", "/v1/public/products", openapi.Op{ID: "listPublicProducts", Summary: "Active products, newest first", Tag: "public", Auth: openapi.Public,
		Desc:    "No key. Active products only, each with its active variants. Cache-Control public for 60 s with an ETag.",
		Query:   append(openapi.PageParams(), append(productFilters, langParam)...),
		Headers: []openapi.M{ifNoneMatch},
		Errs:    []int{422},
		OK:      publicOK("The products.", d.List("Product"))})
	d.Add("GET", "/v1/public/products/{id_or_slug}", openapi.Op{ID: "getPublicProduct", Summary: "An active product by id or slug", Tag: "public", Auth: openapi.Public,
		Desc:    "No key. A numeric path is tried as the id first, then as a slug. Only active variants. Not active: 404.",
		Params:  openapi.M{"id_or_slug": openapi.M{"type": "string", "minLength": 1}},
		Query:   []openapi.M{langParam},
		Headers: []openapi.M{ifNoneMatch},
		Errs:    []int{404, 422},
		OK:      publicOK("The product.", product)})
	d.Add("GET", "/v1/public/product-categories", openapi.Op{ID: "listPublicProductCategories", Summary: "Active product categories as a tree", Tag: "public", Auth: openapi.Public,
		Desc:    "No key. Inactive categories and their subtrees are left out. Not paginated.",
		Headers: []openapi.M{ifNoneMatch},
		OK:      publicOK("The roots, children nested.", d.List("ProductCategory"))})
}

// The enums, named in the document.
func productStatus() openapi.M { return openapi.Ref("ProductStatus") }
func productType() openapi.M   { return openapi.Ref("ProductType") }
func orderStatus() openapi.M   { return openapi.Ref("OrderStatus") }
func paymentStatus() openapi.M { return openapi.Ref("PaymentStatus") }

func sortOrderSchema() openapi.M {
	return openapi.M{"type": "integer", "minimum": -2147483648, "maximum": 2147483647}
}

// amountSchema is a price in a request: bounded by MaxAmount.
func amountSchema(desc string) openapi.M {
	return openapi.M{"type": "integer", "minimum": 0, "maximum": MaxAmount, "description": desc}
}

// orderTotalNote says how an order's lines are bounded together.
var orderTotalNote = "Each line's total (unit price × quantity) and the order's total are at most " + strconv.Itoa(MaxAmount) +
	" in the currency's minor unit, the processor's largest charge; above it, 422 naming the line's quantity or items."

func stockSchema() openapi.M {
	return openapi.M{"type": "integer", "minimum": 0, "maximum": 2147483647}
}

func slugSchema() openapi.M {
	return openapi.M{"type": "string", "pattern": slug.Pattern.String()}
}

// metadataSchema is a product's metadata: any JSON object.
func metadataSchema() openapi.M { return openapi.AnyObject("Any JSON object.") }

// categoryFields are the fields of a category create (name required) or PATCH.
func categoryFields() openapi.M {
	return openapi.M{
		"name":        openapi.M{"type": "string", "minLength": 1, "maxLength": 255},
		"slug":        slugSchema(),
		"description": openapi.M{"type": "string", "maxLength": 10000},
		"image":       openapi.M{"type": "string", "maxLength": 2048, "description": "An absolute http(s) URL, or empty."},
		"parent_id":   openapi.M{"type": []any{"integer", "null"}, "minimum": 1, "description": "An existing category; null for a root."},
		"sort_order":  sortOrderSchema(),
		"is_active":   openapi.M{"type": "boolean"},
	}
}

// productFields are the fields of a product PATCH (create adds variants).
func productFields() openapi.M {
	return openapi.M{
		"name":              openapi.M{"type": "string", "minLength": 1, "maxLength": 255},
		"slug":              slugSchema(),
		"price":             amountSchema("In the currency's minor unit (cents)."),
		"currency":          openapi.M{"type": "string", "pattern": "^[a-z]{3}$"},
		"status":            productStatus(),
		"description":       openapi.M{"type": "string", "maxLength": 100000},
		"short_description": openapi.M{"type": "string", "maxLength": 500},
		"compare_at_price":  openapi.M{"type": []any{"integer", "null"}, "minimum": 0, "maximum": MaxAmount},
		"type":              productType(),
		"sku":               openapi.M{"type": "string", "maxLength": 255},
		"stock_quantity":    stockSchema(),
		"track_inventory":   openapi.M{"type": "boolean"},
		"weight":            openapi.M{"type": []any{"number", "null"}, "format": "double", "minimum": 0},
		"images": openapi.M{"type": "array", "maxItems": 50,
			"items": openapi.M{"type": "string", "minLength": 1, "maxLength": 2048, "description": "An absolute http(s) URL."}},
		"metadata":    metadataSchema(),
		"category_id": openapi.M{"type": []any{"integer", "null"}, "minimum": 1, "description": "An existing category; null for none."},
		"featured":    openapi.M{"type": "boolean"},
		"translations": openapi.M{"type": "object", "maxProperties": maxTranslations, "propertyNames": openapi.M{"type": "string", "pattern": `^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$`},
			"additionalProperties": openapi.Ref("ProductText"),
			"description": "Name, description and short description by language code; replaces the stored translations whole. " +
				"A read with ?lang serves them, following the project's fallback chain."},
	}
}

// variantFields are the fields of a variant create (name required) or PATCH.
func variantFields() openapi.M {
	return openapi.M{
		"name":           openapi.M{"type": "string", "minLength": 1, "maxLength": 255},
		"price":          amountSchema("Defaults to the product's price."),
		"sku":            openapi.M{"type": "string", "maxLength": 255},
		"stock_quantity": stockSchema(),
		"options":        openapi.M{"type": "object", "maxProperties": 20, "additionalProperties": openapi.Str(), "description": "Option name to value, e.g. {\"size\": \"L\"}."},
		"sort_order":     sortOrderSchema(),
		"is_active":      openapi.M{"type": "boolean"},
	}
}

// categoryDepth is how many levels of children ProductCategory spells
// out. The tree has no depth limit, but the contract validator
// (libopenapi-validator) renders every schema inline and so cannot follow
// a recursive $ref: below this depth a child is only said to be an object
// (of the same shape).
const categoryDepth = 4

// categorySchema is a product category with depth levels of children.
func categorySchema(depth int) openapi.M {
	child := openapi.AnyObject("A ProductCategory (the same shape, nested further).")
	if depth > 0 {
		child = categorySchema(depth - 1)
	}
	return openapi.Obj(openapi.M{
		"id": openapi.M{"type": "integer", "minimum": 1}, "name": openapi.Str(), "slug": openapi.Str(), "description": openapi.Str(), "image": openapi.Str(),
		"parent_id": openapi.M{"type": []any{"integer", "null"}, "minimum": 1}, "sort_order": openapi.M{"type": "integer"},
		"is_active":  openapi.M{"type": "boolean"},
		"children":   openapi.M{"type": "array", "items": child, "description": "Subcategories, each a ProductCategory, ordered by sort_order then id."},
		"created_at": openapi.Timestamp(), "updated_at": openapi.Timestamp(),
	}, "id", "name", "slug", "description", "image", "parent_id", "sort_order", "is_active", "children", "created_at", "updated_at")
}

// openAPISchemas registers the schemas of the pillar's answers.
func openAPISchemas(d *openapi.Doc) {
	id := openapi.M{"type": "integer", "minimum": 1}
	d.Schema("ProductStatus", openapi.M{"type": "string", "enum": []any{"draft", "active", "archived"}})
	d.Schema("ProductType", openapi.M{"type": "string", "enum": []any{"physical", "digital", "service"}})
	d.Schema("OrderStatus", openapi.M{"type": "string", "enum": []any{StatusPending, StatusPaid, StatusProcessing, StatusDelivered, StatusCancelled}})
	d.Schema("PaymentStatus", openapi.M{"type": "string", "enum": []any{PaymentUnpaid, PaymentPaid, PaymentPartiallyRefunded, PaymentRefunded}})
	d.Schema("ProductCategory", categorySchema(categoryDepth))
	d.Schema("Product", openapi.Obj(openapi.M{
		"id": id, "name": openapi.Str(), "slug": openapi.Str(),
		"price":    openapi.M{"type": "integer", "minimum": 0, "description": "In the currency's minor unit (cents)."},
		"currency": openapi.M{"type": "string", "pattern": "^[a-z]{3}$"}, "status": productStatus(),
		"description": openapi.Str(), "short_description": openapi.M{"type": "string", "maxLength": 500},
		"compare_at_price": openapi.M{"type": []any{"integer", "null"}, "minimum": 0},
		"type":             productType(), "sku": openapi.Str(),
		"stock_quantity": openapi.M{"type": "integer", "minimum": 0}, "track_inventory": openapi.M{"type": "boolean"},
		"weight": openapi.M{"type": []any{"number", "null"}, "format": "double"}, "images": openapi.Arr(openapi.Str()), "metadata": metadataSchema(),
		"category_id": openapi.M{"type": []any{"integer", "null"}, "minimum": 1}, "featured": openapi.M{"type": "boolean"},
		"published_at": openapi.Nullable(openapi.Timestamp()), "created_at": openapi.Timestamp(), "updated_at": openapi.Timestamp(),
		"variants": openapi.M{"type": "array", "items": openapi.Ref("ProductVariant"), "description": "Ordered by sort_order then id (active ones only on the public surface)."},
		"translations": openapi.M{"type": "object", "additionalProperties": openapi.Ref("ProductText"),
			"description": "The texts in other languages than the project's default (the product's own fields), by language code; {} when none."},
		"fallback": tenant.FallbackSchema("text (name, description, short_description)"),
	}, "id", "name", "slug", "price", "currency", "status", "description", "short_description", "compare_at_price", "type", "sku",
		"stock_quantity", "track_inventory", "weight", "images", "metadata", "category_id", "featured", "published_at",
		"created_at", "updated_at", "variants", "translations"))
	d.Schema("ProductText", openapi.Obj(openapi.M{
		"name": openapi.M{"type": "string", "maxLength": 255}, "description": openapi.M{"type": "string", "maxLength": 100000},
		"short_description": openapi.M{"type": "string", "maxLength": 500},
	}))
	d.Schema("ProductVariant", openapi.Obj(openapi.M{
		"id": id, "product_id": id, "name": openapi.Str(), "price": openapi.M{"type": "integer", "minimum": 0}, "sku": openapi.Str(),
		"stock_quantity": openapi.M{"type": "integer", "minimum": 0}, "options": openapi.M{"type": "object", "additionalProperties": openapi.Str()},
		"sort_order": openapi.M{"type": "integer"}, "is_active": openapi.M{"type": "boolean"},
	}, "id", "product_id", "name", "price", "sku", "stock_quantity", "options", "sort_order", "is_active"))
	d.Schema("Order", openapi.Obj(openapi.M{
		"id": id, "number": openapi.M{"type": "string", "pattern": "^ORD-[0-9]{6,}$"},
		"status":         orderStatus(),
		"payment_status": paymentStatus(),
		"items": openapi.Arr(d.Schema("OrderItem", openapi.Obj(openapi.M{
			"product_id": id, "variant_id": openapi.M{"type": []any{"integer", "null"}, "minimum": 1}, "name": openapi.Str(), "sku": openapi.Str(),
			"quantity": openapi.M{"type": "integer", "minimum": 1}, "unit_price": openapi.M{"type": "integer", "minimum": 0}, "total": openapi.M{"type": "integer", "minimum": 0},
		}, "product_id", "variant_id", "name", "sku", "quantity", "unit_price", "total"))),
		"subtotal": openapi.M{"type": "integer", "minimum": 0}, "total": openapi.M{"type": "integer", "minimum": 0},
		"refunded_amount": openapi.M{"type": "integer", "minimum": 0}, "currency": openapi.M{"type": "string", "pattern": "^[a-z]{3}$"},
		"customer":           d.Schema("OrderCustomer", openapi.Obj(openapi.M{"name": openapi.Str(), "email": openapi.Str()}, "name", "email")),
		"payment_session_id": openapi.M{"type": []any{"string", "null"}, "description": "The processor's checkout session; null for a manual order."},
		"created_at":         openapi.Timestamp(), "updated_at": openapi.Timestamp(),
	}, "id", "number", "status", "payment_status", "items", "subtotal", "total", "refunded_amount", "currency", "customer",
		"payment_session_id", "created_at", "updated_at"))
	d.Schema("CheckoutSession", openapi.Obj(openapi.M{
		"order_id": id, "payment_session_id": openapi.M{"type": "string", "minLength": 1},
		"checkout_url": openapi.M{"type": "string", "minLength": 1, "description": "Redirect the buyer here."}, "expires_at": openapi.Timestamp(),
	}, "order_id", "payment_session_id", "checkout_url", "expires_at"))
	d.Schema("PaymentsConnect", openapi.Obj(openapi.M{
		"account_id":      openapi.M{"type": []any{"string", "null"}, "description": "The connected account; null before onboarding."},
		"charges_enabled": openapi.M{"type": "boolean"}, "payouts_enabled": openapi.M{"type": "boolean"}, "details_submitted": openapi.M{"type": "boolean"},
	}, "account_id", "charges_enabled", "payouts_enabled", "details_submitted"))
	d.Schema("PaymentsWebhookAck", openapi.Obj(openapi.M{
		"received":  openapi.M{"type": "boolean", "enum": []any{true}},
		"duplicate": openapi.M{"type": "boolean", "description": "Present (true) when the event was applied before."},
		"ignored":   openapi.M{"type": "string", "description": "Present when the event was not used, with the reason."},
	}, "received"))
}
