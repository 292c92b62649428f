// The package as a site installs it: npm pack from a checkout without
// dist/ (prepare builds it), the tarball installed into a new project,
// imported by Node, type-checked under --strict, its command run.
import assert from "node:assert/strict";
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { execFileSync, spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");

// The environment of the npm commands: without the npm_* variables of the
// `npm test` running this (npm_config_prefix, say, would install into the
// SDK's own folder).
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith("npm_")));

function npm(cwd, ...args) {
  return execFileSync("npm", args, { cwd, env, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

test("npm pack builds a complete package: installed from the tarball it imports, type-checks and runs plinth-mcp", () => {
  const dir = mkdtempSync(join(tmpdir(), "plinth-sdk-pack-"));
  try {
    // A checkout: the sources without dist/, with the installed tools.
    const checkout = join(dir, "sdk");
    cpSync(pkg, checkout, { recursive: true, filter: (src) => !["node_modules", "dist", ".examples"].includes(basename(src)) });
    symlinkSync(join(pkg, "node_modules"), join(checkout, "node_modules"), "dir");
    const [packed] = JSON.parse(npm(checkout, "pack", "--json", "--pack-destination", dir));
    const files = packed.files.map((f) => f.path).sort();
    for (const f of ["package.json", "README.md", "dist/index.js", "dist/index.d.ts", "dist/client.d.ts", "dist/openapi.d.ts", "dist/paginate.js", "dist/mcp-bin.js"]) {
      assert.ok(files.includes(f), `${f} is not in the package: ${files}`);
    }
    assert.deepEqual(files.filter((f) => !f.startsWith("dist/") && !["package.json", "README.md"].includes(f)), [], "only dist/, package.json and README.md");

    // A site's project installs the tarball; the dependencies come from
    // npm's cache, which the SDK's own install filled.
    const app = join(dir, "app");
    mkdirSync(app);
    writeFileSync(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module" }));
    npm(app, "install", "--prefer-offline", "--no-audit", "--no-fund", join(dir, packed.filename));
    const installed = JSON.parse(readFileSync(join(app, "node_modules", "@plinth", "sdk", "package.json"), "utf8"));
    assert.equal(installed.name, "@plinth/sdk");

    const out = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        'import { createClient, createPublicClient, isProblem } from "@plinth/sdk";' +
          'const c = createClient({ baseUrl: "https://api.example.com/v1", apiKey: "pln_live_x" });' +
          'const p = createPublicClient({ baseUrl: "https://api.example.com", projectId: "prj_x" });' +
          "console.log([typeof c.GET, typeof c.paginate, typeof p.paginate, isProblem({})].join(' '));",
      ],
      { cwd: app, encoding: "utf8" },
    );
    assert.equal(out.trim(), "function function function false");

    // The declarations are complete: a strict TypeScript file using the
    // package type-checks (and a wrong use does not).
    writeFileSync(
      join(app, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, target: "es2022", lib: ["es2022", "dom"], module: "nodenext", moduleResolution: "nodenext", types: [] },
        files: ["index.ts"],
      }),
    );
    const tsc = join(pkg, "node_modules", ".bin", "tsc");
    writeFileSync(join(app, "index.ts"), 'import { createClient, type PlinthClient } from "@plinth/sdk"; export const plinth: PlinthClient = createClient({ baseUrl: "https://api.example.com", apiKey: "pln_live_x" });\n');
    execFileSync(tsc, ["-p", app], { cwd: app, encoding: "utf8" });
    writeFileSync(join(app, "index.ts"), 'import { createClient } from "@plinth/sdk"; export const plinth = createClient({ baseUrl: "https://api.example.com" });\n');
    const wrong = spawnSync(tsc, ["-p", app], { cwd: app, encoding: "utf8" });
    assert.notEqual(wrong.status, 0);
    assert.match(wrong.stdout, /apiKey/);

    // The one command: npx @plinth/sdk runs it (here without PLINTH_URL,
    // so it says what it needs), as does plinth-mcp.
    const bin = join(app, "node_modules", ".bin", "plinth-mcp");
    assert.ok(statSync(bin).mode & 0o111, "plinth-mcp is executable");
    for (const args of [["--no", "@plinth/sdk"], ["--no", "plinth-mcp"]]) {
      const run = spawnSync("npx", args, { cwd: app, env, encoding: "utf8", input: "" });
      assert.equal(run.status, 1, `npx ${args.join(" ")}: ${run.stdout}${run.stderr}`);
      assert.match(run.stderr, /plinth-mcp: PLINTH_URL and PLINTH_API_KEY are required/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
