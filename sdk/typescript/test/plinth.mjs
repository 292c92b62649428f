// Starts a real `plinth serve` for the tests: the binary PLINTH_BIN names
// (make test-sdk passes the one `make build` wrote), else bin/plinth built
// here with `go build`, with its private PostgreSQL cluster in a temporary
// directory. It listens on a free loopback port; its demo project and key
// are read from what it prints on its first start.
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readlinkSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** The per-IP limit of /v1/public/* the server runs with: 2 at once, then one a second. */
export const PUBLIC_RATE = "60/2";

function plinthBinary() {
  if (process.env.PLINTH_BIN) {
    return resolve(process.env.PLINTH_BIN);
  }
  const bin = join(repoRoot, "bin", "plinth");
  const out = spawnSync("go", ["build", "-o", bin, "./cmd/plinth"], { cwd: repoRoot, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  if (out.error || out.status !== 0) {
    throw new Error(`go build -o bin/plinth ./cmd/plinth: ${out.error ?? out.stderr}`);
  }
  return bin;
}

function freePort() {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => res(port));
    });
  });
}

/**
 * startPlinth resolves with { baseUrl, projectId, apiKey, stop } once the
 * server answers /v1/health; stop() ends it (SIGTERM: it stops its
 * cluster) and removes its directory.
 */
export async function startPlinth() {
  const bin = plinthBinary();
  const dir = mkdtempSync(join(tmpdir(), "plinth-sdk-"));
  const addr = `127.0.0.1:${await freePort()}`;
  // A clean environment: no DATABASE_URL, so the private cluster is used.
  const env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    HOME: process.env.HOME ?? dir,
    PLINTH_ADDR: addr,
    // Loopback webhook URLs (the test's receiver) pass the SSRF guard only in dev mode.
    PLINTH_DEV: "1",
    PLINTH_PUBLIC_RATE: PUBLIC_RATE,
  };
  const child = spawn(bin, ["serve"], { cwd: dir, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s) => (stdout += s));
  child.stderr.setEncoding("utf8").on("data", (s) => (stderr += s));
  const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  let done = false;
  exited.then(() => (done = true));
  const stop = async () => {
    if (!done) {
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      await exited;
      clearTimeout(timer);
    }
    // As root, plinth serve keeps its cluster under the postgres user's
    // home, linked from .plinth/pg: it goes with the directory.
    try {
      rmSync(readlinkSync(join(dir, ".plinth", "pg")), { recursive: true, force: true });
    } catch {
      // not relocated
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const baseUrl = `http://${addr}`;
  const deadline = Date.now() + 120_000;
  try {
    for (;;) {
      if (done) {
        throw new Error(`plinth serve exited before serving:\n${stdout}\n${stderr}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`plinth serve did not become healthy within 120 s:\n${stdout}\n${stderr}`);
      }
      const ok = await fetch(`${baseUrl}/v1/health`).then((r) => r.ok, () => false);
      const project = /Demo project (prj_[0-9A-Za-z]+) created/.exec(stdout);
      const key = /\b(pln_live_[0-9A-Za-z]+)\b/.exec(stdout);
      if (ok && project && key) {
        return { baseUrl, projectId: project[1], apiKey: key[1], stop, output: () => stdout + stderr };
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * recorder wraps fetch: it records every request (method, url, headers)
 * and answer status, and lets a test alter the answer (hook). hook
 * receives (request, response, index) and returns the Response to hand
 * back, or throws to simulate a network failure.
 */
export function recorder(hook) {
  const calls = [];
  const fetchFn = async (request) => {
    const call = { method: request.method, url: request.url, headers: new Headers(request.headers), status: undefined, body: undefined };
    calls.push(call);
    if (request.body) {
      call.body = await request.clone().text();
    }
    const response = await fetch(request);
    call.status = response.status;
    return hook ? hook(request, response, calls.length - 1) : response;
  };
  return { fetch: fetchFn, calls };
}
