// examples/public-read.ts
// In the browser: the public client holds no secret, only the project id,
// and reaches /v1/public/* alone.
import { createPublicClient } from "@plinth/sdk";

const plinth = createPublicClient({ baseUrl: "https://api.example.com", projectId: "prj_0123456789abcdefghijklmn" });

export async function showProducts(list: HTMLUListElement): Promise<void> {
  const { data, error } = await plinth.GET("/v1/public/products", { params: { query: { limit: 12, featured: true } } });
  if (error) {
    list.textContent = "The products are unavailable right now.";
    return;
  }
  list.replaceChildren(
    ...data.data.map((product) => {
      const item = document.createElement("li");
      const price = new Intl.NumberFormat(undefined, { style: "currency", currency: product.currency }).format(product.price / 100);
      item.textContent = `${product.name}: ${price}`;
      return item;
    }),
  );
}

export async function sendContact(form: HTMLFormElement): Promise<boolean> {
  const f = new FormData(form);
  const { error } = await plinth.POST("/v1/public/forms/contact", {
    body: {
      name: String(f.get("name")),
      email: String(f.get("email")),
      message: String(f.get("message")),
      // Further fields: strings, numbers, booleans, null, or lists of them.
      fields: { budget: Number(f.get("budget")), topics: f.getAll("topics").map(String) },
    },
  });
  return error === undefined;
}
