// examples/next-page.tsx
// app/[lang]/about/page.tsx: a Next.js server component. It runs on the
// server only, so it may use the project's secret key.
import { createClient, isProblem } from "@plinth/sdk";

const apiKey = process.env.PLINTH_API_KEY;
if (!apiKey) {
  throw new Error("PLINTH_API_KEY is not set");
}
const plinth = createClient({ baseUrl: process.env.PLINTH_URL ?? "http://127.0.0.1:8080", apiKey });

export default async function AboutPage({ params }: { params: Promise<{ lang: string }> }) {
  const { lang } = await params;
  const [page, tagline] = await Promise.all([
    plinth.GET("/v1/pages/{id_or_slug}", { params: { path: { id_or_slug: "about" }, query: { lang } } }),
    plinth.GET("/v1/content/{key}", { params: { path: { key: "home.tagline" }, query: { lang } } }),
  ]);
  if (page.error) {
    if (isProblem(page.error) && page.error.code === "not_found") {
      return <p>This page does not exist yet.</p>;
    }
    throw new Error(`Plinth: ${isProblem(page.error) ? page.error.code : page.response.status}`);
  }
  return (
    <main>
      <h1>{page.data.title}</h1>
      {tagline.data && <p>{tagline.data.value}</p>}
      {page.data.sections.map((section, i) => (
        // A section is a JSON object of the site's own design.
        <section key={i} data-type={String(section.type ?? "text")}>
          {typeof section.heading === "string" && <h2>{section.heading}</h2>}
        </section>
      ))}
    </main>
  );
}
