// Type-checks the TypeScript examples of the documentation: every ```ts,
// ```typescript and ```tsx block of the SDK's README, the repository's
// README and docs/ (docs/api/ included) is written to a module of its own
// under .examples/ (ignored by git) and compiled with tsc --strict, with
// @plinth/sdk mapped to the built dist/ (run `npm run build` first; npm
// test does). An error is reported at its line in the markdown. A block
// that is deliberately a fragment says so in its fence, ```ts nocheck, and
// is skipped. `npm test` runs it: node scripts/examples.mjs.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const pkg = resolve(here, "..");
export const repoRoot = resolve(pkg, "../..");

// The languages of the fences checked, by the first word of their info.
const languages = { ts: "ts", typescript: "ts", tsx: "tsx" };

/** docFiles lists the markdown files whose examples are checked, relative to root. */
export function docFiles(root = repoRoot) {
  const md = (dir) =>
    existsSync(join(root, dir))
      ? readdirSync(join(root, dir))
          .filter((f) => f.endsWith(".md"))
          .sort()
          .map((f) => (dir ? `${dir}/${f}` : f))
      : [];
  return ["sdk/typescript/README.md", ...md(""), ...md("docs"), ...md("docs/api")];
}

/**
 * extractBlocks returns the TypeScript blocks of a markdown text: { line
 * (of the first code line, from 1), lang ("ts" or "tsx"), code }. Fences
 * are CommonMark's: ``` or ~~~, three or more, closed by a fence of the
 * same character at least as long; a block whose info has the word
 * nocheck is left out.
 */
export function extractBlocks(markdown) {
  const lines = markdown.split(/\r?\n/);
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^ {0,3}(`{3,}|~{3,})\s*(.*)$/.exec(lines[i]);
    if (!open || (open[1][0] === "`" && open[2].includes("`"))) {
      continue;
    }
    const [fence, info] = [open[1], open[2].trim().split(/\s+/)];
    let end = i + 1;
    while (end < lines.length && !new RegExp(`^ {0,3}${fence[0] === "`" ? "`" : "~"}{${fence.length},}\\s*$`).test(lines[end])) {
      end++;
    }
    const lang = languages[info[0]?.toLowerCase()];
    if (lang && !info.includes("nocheck")) {
      blocks.push({ line: i + 2, lang, code: lines.slice(i + 1, end).join("\n") + "\n" });
    }
    i = end;
  }
  return blocks;
}

/**
 * checkExamples compiles the blocks of docs ([{ file, markdown }], file
 * as it is to be reported) in dir, which it empties first. It resolves
 * with { ok, count, errors }: errors are tsc's, each at its markdown file
 * and line.
 */
export function checkExamples(docs, dir = join(pkg, ".examples")) {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const origin = new Map(); // the module's name → [markdown file, line of its first code line]
  for (const { file, markdown } of docs) {
    for (const block of extractBlocks(markdown)) {
      const name = `${file.replace(/[^A-Za-z0-9]+/g, "_")}_L${block.line}.${block.lang}`;
      writeFileSync(join(dir, name), block.code);
      origin.set(name, [file, block.line]);
    }
  }
  // Each block is an ES module (moduleDetection force: one without import
  // or export is still one, so blocks never share names), with the
  // compiler options of examples/tsconfig.json, the unused-name check
  // aside: an example may show a value it does not go on to use.
  writeFileSync(join(dir, "package.json"), JSON.stringify({ private: true, type: "module" }, null, 2));
  writeFileSync(
    join(dir, "tsconfig.json"),
    JSON.stringify(
      {
        compilerOptions: {
          target: "es2022",
          lib: ["es2022", "dom"],
          module: "nodenext",
          moduleResolution: "nodenext",
          moduleDetection: "force",
          jsx: "preserve",
          strict: true,
          noEmit: true,
          types: [],
          paths: { "@plinth/sdk": [relative(dir, join(pkg, "dist", "index.d.ts"))] },
        },
        // process.env and JSX, as a site has them (examples/ambient.d.ts).
        include: ["*.ts", "*.tsx", relative(dir, join(pkg, "examples", "ambient.d.ts"))],
      },
      null,
      2,
    ),
  );
  if (origin.size === 0) {
    return { ok: true, count: 0, errors: [] };
  }
  const tsc = spawnSync(process.execPath, [join(pkg, "node_modules", "typescript", "bin", "tsc"), "-p", dir, "--pretty", "false"], { cwd: dir, encoding: "utf8" });
  if (tsc.error) {
    throw tsc.error;
  }
  // tsc reports "name.ts(row,col): error TS…"; a message may go on over
  // indented lines.
  const errors = [];
  for (const line of tsc.stdout.split("\n")) {
    const m = /^([^(\s]+)\((\d+),(\d+)\): (.*)$/.exec(line);
    if (m && origin.has(m[1])) {
      const [file, first] = origin.get(m[1]);
      errors.push(`${file}:${first + Number(m[2]) - 1}:${m[3]}: ${m[4]}`);
    } else if (line.trim() !== "") {
      errors.push(line);
    }
  }
  return { ok: tsc.status === 0, count: origin.size, errors };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (!existsSync(join(pkg, "dist", "index.d.ts"))) {
    console.error("examples: dist/ is not built: npm run build");
    process.exit(1);
  }
  const files = docFiles();
  const { ok, count, errors } = checkExamples(files.map((file) => ({ file, markdown: readFileSync(join(repoRoot, file), "utf8") })));
  for (const e of errors) {
    console.error(e);
  }
  if (!ok) {
    console.error(`examples: the TypeScript examples of the documentation do not compile (tsc --strict; mark a deliberate fragment \`\`\`ts nocheck)`);
    process.exit(1);
  }
  console.log(`examples: ${count} TypeScript examples in ${files.length} markdown files compile under --strict`);
}
