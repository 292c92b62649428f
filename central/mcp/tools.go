package mcp

// route is a REST route a tool runs.
type route struct{ method, path string }

// spec declares one tool: the route it mirrors and what the route's
// OpenAPI operation does not say (which answer is the tool's, the MCP
// annotations). The schemas, the scope and the description come from
// the OpenAPI document.
type spec struct {
	name string
	route
	// status is the 2xx answer whose schema is the tool's output; zero
	// is the operation's first.
	status int
	// body names the component schema of the body when the tool takes
	// one member of the operation's union (a manual or an AI post), and
	// set holds the fields that choose the member.
	body string
	set  map[string]any
	// update is the route that changes an existing resource, for the
	// upsert tools: with its path parameter the tool updates, else it
	// creates with route. createAs names the create body's field that
	// takes the parameter when the update finds nothing (404), so that
	// an upsert by slug creates the resource under that slug.
	update   *route
	createAs string
	// job marks a tool whose answer is a Job: with a progress token,
	// the tool reports the job's progress and answers once it ended.
	job bool

	readOnly, destructive, idempotent bool
	// openWorld marks tools that reach outside the project (the AI
	// provider).
	openWorld bool
	note      string
}

func get(path string) route  { return route{"GET", path} }
func post(path string) route { return route{"POST", path} }

// specs are the tools. Their names are the public interface.
var specs = []spec{
	{name: "get_project", route: get("/v1/projects/me"), readOnly: true},
	{name: "update_project", route: route{"PATCH", "/v1/projects/me"}, destructive: true, idempotent: true},
	{name: "get_usage", route: get("/v1/projects/me/usage"), readOnly: true},
	{name: "list_content", route: get("/v1/content/bulk"), readOnly: true},
	{name: "get_content", route: get("/v1/content/{key}"), readOnly: true},
	{name: "set_content", route: route{"PUT", "/v1/content/{key}"}, destructive: true, idempotent: true},
	{name: "set_content_bulk", route: route{"PUT", "/v1/content"}, destructive: true, idempotent: true},
	{name: "list_pages", route: get("/v1/pages"), readOnly: true},
	{name: "get_page", route: get("/v1/pages/{id_or_slug}"), readOnly: true},
	{name: "upsert_page", route: post("/v1/pages"), update: &route{"PATCH", "/v1/pages/{id_or_slug}"}, createAs: "slug", destructive: true},
	{name: "list_components", route: get("/v1/components"), readOnly: true},
	{name: "upsert_component", route: post("/v1/components"), update: &route{"PATCH", "/v1/components/{slug}"}, createAs: "slug", destructive: true},
	{name: "get_brand", route: get("/v1/brand"), readOnly: true},
	{name: "update_brand", route: route{"PATCH", "/v1/brand"}, destructive: true, idempotent: true},
	{name: "create_release", route: post("/v1/releases"), status: 201, idempotent: true},
	{name: "publish_release", route: post("/v1/releases/{id}/publish"), destructive: true, idempotent: true},
	{name: "create_preview", route: post("/v1/previews"), status: 201},
	{name: "list_galleries", route: get("/v1/galleries"), readOnly: true},
	{name: "upsert_gallery", route: post("/v1/galleries"), update: &route{"PATCH", "/v1/galleries/{slug}"}, createAs: "slug", destructive: true},
	{name: "list_blog_posts", route: get("/v1/blog-posts"), readOnly: true},
	{name: "get_blog_post", route: get("/v1/blog-posts/{ref}"), readOnly: true},
	{name: "create_blog_post", route: post("/v1/blog-posts"), status: 201, body: "CreateBlogPostManual", set: map[string]any{"type": "manual"},
		note: "Writes a post from the given text (no AI, no credits)."},
	{name: "generate_blog_post", route: post("/v1/blog-posts"), status: 202, body: "CreateBlogPostAI", set: map[string]any{"type": "ai"}, job: true, openWorld: true,
		note: "Starts an AI job writing a post on a topic. Costs 60 credits plus 7 per target language."},
	{name: "publish_blog_post", route: post("/v1/blog-posts/{ref}/publish"), idempotent: true},
	{name: "generate_image", route: post("/v1/images"), status: 202, body: "GenerateImageRequest", job: true, openWorld: true,
		note: "Starts an AI job generating an image from a prompt. Costs 10 credits."},
	{name: "generate_website", route: post("/v1/websites/generate"), job: true, openWorld: true, destructive: true,
		// Destructive: a re-run updates the items an earlier run made
		// (never what the owner created or edited).
		note: "Starts an AI job generating the site's pages, components, brand and content keys from a brief. Costs 200 credits."},
	{name: "get_job", route: get("/v1/jobs/{id}"), readOnly: true, job: true},
	{name: "list_form_submissions", route: get("/v1/form-submissions"), readOnly: true},
	{name: "list_products", route: get("/v1/products"), readOnly: true},
	{name: "upsert_product", route: post("/v1/products"), update: &route{"PATCH", "/v1/products/{id}"}, destructive: true},
	{name: "list_orders", route: get("/v1/orders"), readOnly: true},
	{name: "get_availability", route: get("/v1/booking/availability"), readOnly: true},
	{name: "list_bookings", route: get("/v1/bookings"), readOnly: true},
}
