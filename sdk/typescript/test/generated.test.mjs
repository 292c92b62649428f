import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { repoRoot } from "./plinth.mjs";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");

test("src/openapi.ts is what openapi-typescript generates from central/openapi.json (npm run generate)", () => {
  const dir = mkdtempSync(join(tmpdir(), "plinth-sdk-types-"));
  try {
    const out = join(dir, "openapi.ts");
    execFileSync(join(pkg, "node_modules", ".bin", "openapi-typescript"), [join(repoRoot, "central", "openapi.json"), "-o", out], { stdio: "pipe" });
    const fresh = readFileSync(out, "utf8");
    const committed = readFileSync(join(pkg, "src", "openapi.ts"), "utf8");
    assert.ok(fresh === committed, "src/openapi.ts is stale: run `npm run generate` in sdk/typescript and commit it");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the README's examples are the files examples/ type-checks", () => {
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const blocks = [...readme.matchAll(/```tsx?\n\/\/ (examples\/[\w.-]+)\n([\s\S]*?)```/g)];
  assert.deepEqual(blocks.map((b) => b[1]).sort(), ["examples/next-page.tsx", "examples/public-read.ts", "examples/webhook-route.ts"]);
  for (const [, file, code] of blocks) {
    assert.equal(`// ${file}\n${code}`, readFileSync(join(pkg, file), "utf8"), `${file} differs from its README block`);
  }
});
