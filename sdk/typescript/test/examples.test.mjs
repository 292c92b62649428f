// scripts/examples.mjs, the check of the documentation's TypeScript
// examples: which blocks it takes, and that a broken one fails it at its
// line in the markdown.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";

import { checkExamples, docFiles, extractBlocks } from "../scripts/examples.mjs";

test("extractBlocks takes the ts, typescript and tsx fences, not nocheck ones nor other languages", () => {
  const markdown = [
    "# Doc", // 1
    "```ts", // 2
    "const a = 1;", // 3
    "```", // 4
    "```typescript title=x", // 5
    "const b = 2;", // 6
    "```", // 7
    "```tsx", // 8
    "const c = <p />;", // 9
    "```", // 10
    "```ts nocheck", // 11
    "plinth.GET(...)", // 12
    "```", // 13
    "```js", // 14
    "const d = 4;", // 15
    "```", // 16
    "````md", // 17
    "```ts", // 18
    "const inside = 'a fence in a fence';", // 19
    "```", // 20
    "````", // 21
    "~~~ts", // 22
    "const e = 5;", // 23
    "```", // 24
    "const f = 6;", // 25
    "~~~", // 26
    "```sh", // 27
    "npm test", // 28
    "```", // 29
  ].join("\n");
  assert.deepEqual(extractBlocks(markdown), [
    { line: 3, lang: "ts", code: "const a = 1;\n" },
    { line: 6, lang: "ts", code: "const b = 2;\n" },
    { line: 9, lang: "tsx", code: "const c = <p />;\n" },
    { line: 23, lang: "ts", code: "const e = 5;\n```\nconst f = 6;\n" },
  ]);
});

test("the documentation checked is the SDK's README, the repository's and docs/, docs/api/ included", () => {
  const files = docFiles();
  for (const f of ["sdk/typescript/README.md", "README.md", "docs/mcp.md", "docs/api/core.md"]) {
    assert.ok(files.includes(f), `${f} is not checked: ${files}`);
  }
});

test("a broken example fails the check, reported at its line in the markdown; the good ones pass", () => {
  const dir = mkdtempSync(join(tmpdir(), "plinth-sdk-examples-"));
  try {
    const good = [
      "Reading a key:",
      "",
      "```ts",
      'import { createClient } from "@plinth/sdk";',
      "",
      'const plinth = createClient({ baseUrl: "https://api.example.com", apiKey: process.env.PLINTH_API_KEY ?? "" });',
      'const { data } = await plinth.GET("/v1/content/{key}", { params: { path: { key: "home.title" } } });',
      "console.log(data?.value);",
      "```",
    ].join("\n");
    // The same call with the path parameter misspelt (keys for key), a
    // path the API does not have, and a name no block declares.
    const broken = [
      "# Broken", // 1
      "", // 2
      "```ts", // 3
      'import { createClient } from "@plinth/sdk";', // 4
      "", // 5
      'const plinth = createClient({ baseUrl: "https://api.example.com", apiKey: "pln_live_x" });', // 6
      'await plinth.GET("/v1/content/{key}", { params: { path: { keys: "home.title" } } });', // 7
      'await plinth.GET("/v1/contents");', // 8
      "```", // 9
      "", // 10
      "```tsx", // 11
      "export const title = <h1>{data.value}</h1>;", // 12
      "```", // 13
    ].join("\n");
    const ok = checkExamples([{ file: "docs/good.md", markdown: good }], dir);
    assert.deepEqual(ok, { ok: true, count: 1, errors: [] });

    const { ok: passed, count, errors } = checkExamples([{ file: "docs/good.md", markdown: good }, { file: "docs/broken.md", markdown: broken }], dir);
    assert.equal(passed, false);
    assert.equal(count, 3);
    const at = errors.filter((e) => /^docs\/\w+\.md:\d+:\d+: error TS\d+/.test(e)).map((e) => e.split(": error")[0].split(":").slice(0, 2).join(":"));
    assert.deepEqual([...new Set(at)].sort(), ["docs/broken.md:12", "docs/broken.md:7", "docs/broken.md:8"], errors.join("\n"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
