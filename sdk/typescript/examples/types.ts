// A type-level test: `tsc -p examples` (run by npm test) fails when a free-form
// body field is typed as anything but its real shape, or when a body the
// document refuses type-checks (each @ts-expect-error must find an error).
import type { ListPath, Paths, PlinthClient, PlinthPublicClient, Schemas, WebhookEvent } from "@plinth/sdk";

type Equals<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type JSONObject = { [key: string]: unknown };

// The shapes: contact fields map names to form values; sections, props,
// their translations and product metadata are JSON objects.
export const shapes: [
  Equals<NonNullable<Schemas["SubmitContactRequest"]["fields"]>, { [key: string]: Schemas["FormFieldValue"] }>,
  Equals<Schemas["FormFieldValue"], string | number | boolean | null | (string | number | boolean | null)[]>,
  Equals<NonNullable<Schemas["CreatePageRequest"]["sections"]>, JSONObject[]>,
  Equals<Schemas["Page"]["sections"], JSONObject[]>,
  Equals<NonNullable<Schemas["CreateComponentRequest"]["props"]>, JSONObject>,
  Equals<Schemas["Component"]["props"], JSONObject>,
  Equals<Schemas["Component"]["translations"], { [lang: string]: JSONObject }>,
  Equals<NonNullable<Schemas["CreateProductRequest"]["metadata"]>, JSONObject>,
  Equals<Schemas["Product"]["metadata"], JSONObject>,
] = [true, true, true, true, true, true, true, true, true];

// Bodies a site sends, with no cast.
export const contact: Schemas["SubmitContactRequest"] = {
  name: "Ada", email: "ada@example.com", message: "Hi",
  fields: { budget: 5000, topics: ["web", "seo"], newsletter: true, phone: null },
};
export const page: Schemas["CreatePageRequest"] = {
  title: "About", path: "/about", sections: [{ type: "hero", heading: "About us", stats: [1, 2], cta: { href: "/contact" } }],
};
export const component: Schemas["CreateComponentRequest"] = {
  name: "Hero", props: { heading: "Hi", cta: { label: "Go", href: "/go" }, count: 3 }, translations: { fr: { heading: "Salut" } },
};
export const product: Schemas["CreateProductRequest"] = { name: "Mug", price: 1299, metadata: { material: "clay", sizes: [1, 2] } };

// What the document refuses.
// @ts-expect-error a form field is a scalar or a list of scalars, not an object
export const nestedField: Schemas["SubmitContactRequest"] = { name: "A", email: "a@b.co", message: "m", fields: { address: { city: "Paris" } } };
// @ts-expect-error a section is an object
export const textSection: Schemas["CreatePageRequest"] = { title: "About", sections: ["hero"] };
// @ts-expect-error props is an object
export const listProps: Schemas["CreateComponentRequest"] = { name: "Hero", props: 42 };
// @ts-expect-error metadata is an object
export const textMetadata: Schemas["CreateProductRequest"] = { name: "Mug", price: 1, metadata: "clay" };

// The clients: paths, parameters and bodies are checked; the public client
// knows only /v1/public/*.
export async function calls(client: PlinthClient, pub: PlinthPublicClient): Promise<void> {
  const { data } = await client.GET("/v1/content/{key}", { params: { path: { key: "home.title" }, query: { lang: "fr" } } });
  const value: string | undefined = data?.value;
  void value;
  await client.POST("/v1/components", { body: component });
  // @ts-expect-error a component needs a name
  await client.POST("/v1/components", { body: { props: {} } });
  await pub.GET("/v1/public/content/{key}", { params: { path: { key: "home.title" } } });
  // @ts-expect-error the public client has no key: /v1/projects/me is not among its paths
  await pub.GET("/v1/projects/me");
}

// A webhook event's data follows its type.
export function total(event: WebhookEvent): number | undefined {
  if (event.type === "order.paid") {
    return event.data.total;
  }
  if (event.type === "content.changed") {
    const previous: string | null = event.data.previous_value;
    void previous;
  }
  // @ts-expect-error not every event is an order
  return event.data.total;
}

// paginate yields the items of the path's list, typed by the document;
// it takes the paths that answer a page of a list, and no other.
export async function paginated(client: PlinthClient, pub: PlinthPublicClient): Promise<string[]> {
  const titles: string[] = [];
  for await (const post of client.paginate("/v1/blog-posts", { params: { query: { lang: "en", limit: 50 } } })) {
    const item: Equals<typeof post, Schemas["BlogPost"]> = true;
    void item;
    titles.push(post.title);
  }
  for await (const product of pub.paginate("/v1/public/products", { params: { query: { featured: true } } })) {
    const item: Equals<typeof product, Schemas["Product"]> = true;
    void item;
  }
  for await (const job of client.paginate("/v1/jobs")) {
    const item: Equals<typeof job, Schemas["Job"]> = true;
    void item;
  }
  // @ts-expect-error /v1/content/bulk's data is a map of values, not a list
  client.paginate("/v1/content/bulk");
  // @ts-expect-error /v1/projects/me is one object, not a list
  client.paginate("/v1/projects/me");
  // @ts-expect-error the query is the list's: status is one of the post statuses
  client.paginate("/v1/blog-posts", { params: { query: { status: "gone" } } });
  // @ts-expect-error the public client has no key: its lists are /v1/public/* only
  pub.paginate("/v1/blog-posts");
  return titles;
}

export const listPaths: [
  Equals<"/v1/blog-posts" extends ListPath<Paths> ? true : false, true>,
  Equals<"/v1/public/forms/contact" extends ListPath<Paths> ? true : false, false>,
] = [true, true];
