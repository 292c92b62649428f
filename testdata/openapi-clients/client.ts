// Request bodies of the main operations, typed by the types openapi-typescript
// generates from central/openapi.json (plinth.d.ts, generated next to this
// file by central's TestOpenAPITypeScriptClient), sent with openapi-fetch to
// the URL given on the command line. Each request names its case in
// Idempotency-Key; the test server checks the request against the document
// and the body against the one the case intends. The @ts-expect-error lines
// are bodies the document must refuse: tsc fails if one type-checks.
import createClient from "openapi-fetch";
import type { components, paths } from "./plinth.js";

type Schemas = components["schemas"];

declare const process: { argv: string[]; exitCode?: number };

// A manual body may leave its type out (blog) or name it (social).
const blogManual: Schemas["CreateBlogPostRequest"] = {
  title: "Hello", status: "draft", tag_ids: [1, 2], featured_image: "https://img.example/a.png",
};
const blogAI: Schemas["CreateBlogPostRequest"] = {
  type: "ai", topic: "Green tea", target_languages: ["fr", "de"], keywords: ["tea"],
};
const socialManual: Schemas["CreateSocialPostRequest"] = {
  type: "manual", title: "Launch", content: "We are live", platforms: ["twitter", "linkedin"], scheduled_at: "2030-01-01T09:00:00Z",
};
const socialAI: Schemas["CreateSocialPostRequest"] = {
  type: "ai", topic: "Launch day", platforms: ["instagram"], images: 2, tone: "warm",
};

// A manual body takes no topic, an AI body no title; an AI body names its
// type; a platform is one of the enum.
// @ts-expect-error topic is not a field of a manual post
const blogMixed: Schemas["CreateBlogPostRequest"] = { type: "manual", title: "Hello", topic: "Tea" };
// @ts-expect-error an AI post has no title
const blogAITitled: Schemas["CreateBlogPostRequest"] = { type: "ai", topic: "Tea", title: "Hello" };
// @ts-expect-error a post is manual (title) or AI (type ai and topic)
const blogUntyped: Schemas["CreateBlogPostRequest"] = { topic: "Tea" };
// @ts-expect-error an AI post takes no title
const socialMixed: Schemas["CreateSocialPostRequest"] = { type: "ai", topic: "Launch", title: "Launch" };
// @ts-expect-error no such platform
const socialPlatform: Schemas["CreateSocialPostRequest"] = { title: "Launch", platforms: ["myspace"] };
void [blogMixed, blogAITitled, blogUntyped, socialMixed, socialPlatform];

// The unions narrow on their discriminator, with no cast: each branch sees
// its own member's fields (a body without type is manual).
function subject(body: Schemas["CreateBlogPostRequest"] | Schemas["CreateSocialPostRequest"]): string {
  switch (body.type) {
    case "manual":
    case undefined:
      return body.title;
    case "ai":
      return body.topic;
  }
}
if (subject(blogManual) !== "Hello" || subject(socialManual) !== "Launch" || subject(blogAI) !== "Green tea") {
  throw new Error("the unions do not narrow on type");
}

// A field with a default may be left out.
const image: Schemas["GenerateImageRequest"] = { prompt: "A lighthouse at dawn" };

async function main(baseUrl: string): Promise<void> {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: "Bearer pln_live_00000000000000000000000000000000" } });
  const key = (name: string) => ({ header: { "Idempotency-Key": name } });
  const requests: [string, () => Promise<{ response: Response }>][] = [
    ["blog-manual", () => client.POST("/v1/blog-posts", { params: key("blog-manual"), body: blogManual })],
    ["blog-ai", () => client.POST("/v1/blog-posts", { params: key("blog-ai"), body: blogAI })],
    ["social-manual", () => client.POST("/v1/social-posts", { params: key("social-manual"), body: socialManual })],
    ["social-ai", () => client.POST("/v1/social-posts", { params: key("social-ai"), body: socialAI })],
    ["social-unschedule", () => client.PATCH("/v1/social-posts/{id}", {
      params: { ...key("social-unschedule"), path: { id: 7 } }, body: { scheduled_at: null },
    })],
    ["blog-clear", () => client.PATCH("/v1/blog-posts/{ref}", {
      params: { ...key("blog-clear"), path: { ref: "7" } }, body: { category_id: null, featured_image: null },
    })],
    ["product-clear", () => client.PATCH("/v1/products/{id}", {
      params: { ...key("product-clear"), path: { id: 3 } }, body: { compare_at_price: null, weight: null, category_id: null },
    })],
    ["image", () => client.POST("/v1/images", { params: key("image"), body: image })],
    ["content-batch", () => client.PUT("/v1/content", {
      params: key("content-batch"),
      body: { updates: [{ key: "home.title", value: "Welcome" }, { key: "home.title", value: "Bienvenue", lang: "fr" }] },
    })],
    ["component", () => client.POST("/v1/components", {
      params: key("component"),
      body: { name: "Hero", props: { heading: "Hi", cta: { label: "Go", href: "/go" }, count: 3 }, translations: { fr: { heading: "Salut" } } },
    })],
    ["page", () => client.POST("/v1/pages", {
      params: key("page"),
      body: {
        title: "About", path: "/about", sections: [{ type: "hero", title: "About us" }],
        seo: { meta_title: "About", noindex: false }, translations: [{ lang: "fr", title: "À propos" }],
      },
    })],
    ["product", () => client.POST("/v1/products", {
      params: key("product"),
      body: {
        name: "Mug", price: 1299, metadata: { material: "clay", sizes: [1, 2] }, weight: 0.25,
        variants: [{ name: "Blue", options: { color: "blue" } }],
      },
    })],
    ["checkout", () => client.POST("/v1/checkout-sessions", {
      params: key("checkout"),
      body: {
        items: [{ product_id: 1, quantity: 2 }], customer: { email: "a@b.co" },
        success_url: "https://shop.example/ok", cancel_url: "https://shop.example/cancel",
      },
    })],
    ["booking-settings", () => client.PATCH("/v1/booking/settings", {
      params: key("booking-settings"),
      body: { timezone: null, weekly_hours: { mon: [["09:00", "12:00"]], sun: null } },
    })],
    ["contact", () => client.POST("/v1/public/forms/contact", {
      params: { header: { "Idempotency-Key": "contact", "X-Service-Project-Key": "prj_000000000000000000000000" } },
      body: { name: "Ada", email: "ada@example.com", message: "Hi", fields: { budget: 5000, topics: ["web", "seo"] } },
      headers: { Authorization: null },
    })],
    ["webhook", () => client.POST("/v1/webhook-endpoints", {
      params: key("webhook"), body: { url: "https://hooks.example/in", events: ["content.changed"] },
    })],
    ["key", () => client.POST("/v1/projects/me/api-keys", { params: key("key"), body: { name: "ci", scopes: ["content:read"] } })],
  ];
  for (const [name, send] of requests) {
    const { response } = await send();
    if (response.status !== 204) {
      throw new Error(`${name}: the server answered ${response.status}`);
    }
  }
}

main(process.argv[2]).catch((err: unknown) => {
  console.error("client:", err);
  process.exitCode = 1;
});
