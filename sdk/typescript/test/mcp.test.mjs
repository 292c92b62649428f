// The plinth-mcp command (dist/mcp-bin.js) driven over stdio by the
// TypeScript MCP client, against a real Plinth server: what it forwards
// is what /v1/mcp answers.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { dirname, join } from "node:path";
import { after, before, describe, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

import { createClient } from "../dist/index.js";
import { startPlinth } from "./plinth.mjs";

const bin = join(dirname(fileURLToPath(import.meta.url)), "..", "dist", "mcp-bin.js");

let plinth;
before(async () => {
  plinth = await startPlinth();
});
after(async () => {
  await plinth?.stop();
});

// overStdio connects the MCP client to plinth-mcp, started with env; its
// stderr is collected in stderr().
async function overStdio(env) {
  const transport = new StdioClientTransport({ command: process.execPath, args: [bin], env, stderr: "pipe" });
  let stderr = "";
  transport.stderr.setEncoding("utf8").on("data", (s) => (stderr += s));
  const client = new Client({ name: "plinth-sdk-test", version: "1.0.0" });
  await client.connect(transport);
  return { client, stderr: () => stderr };
}

// direct connects the MCP client to the server's /v1/mcp itself.
async function direct() {
  const client = new Client({ name: "plinth-sdk-test-direct", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${plinth.baseUrl}/v1/mcp`), { requestInit: { headers: { Authorization: `Bearer ${plinth.apiKey}` } } }),
  );
  return client;
}

// run starts plinth-mcp with env and no client, and resolves with its exit
// code and stderr once it ends.
function run(env) {
  const child = spawn(process.execPath, [bin], { env: { PATH: process.env.PATH, ...env }, stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s) => (stdout += s));
  child.stderr.setEncoding("utf8").on("data", (s) => (stderr += s));
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, stdout, stderr })));
}

describe("plinth-mcp", () => {
  let local;
  let remote;
  before(async () => {
    local = await overStdio({ PLINTH_URL: plinth.baseUrl, PLINTH_API_KEY: plinth.apiKey });
    remote = await direct();
  });
  after(async () => {
    await local?.client.close();
    await remote?.close();
  });

  test("is the server to the client: its name, instructions, and the same tools and resources", async () => {
    assert.equal(local.client.getServerVersion().name, "plinth");
    assert.equal(local.client.getInstructions(), remote.getInstructions());
    assert.ok(local.client.getServerCapabilities().tools);
    const [mine, theirs] = await Promise.all([local.client.listTools(), remote.listTools()]);
    assert.ok(theirs.tools.length > 30, `${theirs.tools.length} tools`);
    assert.deepEqual(mine.tools, theirs.tools);
    const [templates, theirTemplates] = await Promise.all([local.client.listResourceTemplates(), remote.listResourceTemplates()]);
    assert.deepEqual(templates, theirTemplates);
    const doc = await local.client.readResource({ uri: "plinth://docs/mcp" });
    assert.match(doc.contents[0].text, /plinth mcp/);
  });

  test("get_content reads the project's content", async () => {
    const api = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey });
    const put = await api.PUT("/v1/content/{key}", { params: { path: { key: "mcp.title" } }, body: { value: "Over stdio" } });
    assert.equal(put.response.status, 200);
    const got = await local.client.callTool({ name: "get_content", arguments: { key: "mcp.title" } });
    assert.equal(got.isError ?? false, false);
    assert.equal(got.structuredContent.value, "Over stdio");
    assert.equal(got.structuredContent.key, "mcp.title");
  });

  test("a job tool with a progress token reports progress and answers the ended job", async () => {
    const progress = [];
    const res = await local.client.callTool(
      { name: "generate_blog_post", arguments: { topic: "Bread over stdio", language_code: "en" } },
      undefined,
      { onprogress: (p) => progress.push(p), timeout: 60_000 },
    );
    assert.equal(res.isError ?? false, false, JSON.stringify(res.content));
    const job = res.structuredContent;
    assert.equal(job.status, "completed", JSON.stringify(job));
    assert.equal(job.progress, 100);
    assert.ok(job.result.post_id ?? job.result.id, JSON.stringify(job.result));
    assert.ok(progress.length > 0, "no progress came back");
    const values = progress.map((p) => p.progress);
    assert.deepEqual(values, values.toSorted((a, b) => a - b), `progress went back: ${values}`);
    assert.ok(progress.every((p) => typeof p.message === "string"));
  });

  test("errors come back as the server gave them: a tool error, a JSON-RPC error", async () => {
    const missing = await local.client.callTool({ name: "get_content", arguments: { key: "mcp.nothing-here" } });
    assert.equal(missing.isError, true);
    assert.match(missing.content.map((c) => c.text).join("\n"), /404/);

    const refusal = async (client) => {
      try {
        await client.callTool({ name: "no_such_tool", arguments: {} });
      } catch (err) {
        assert.ok(err instanceof McpError, String(err));
        return { code: err.code, message: err.message };
      }
      assert.fail("an unknown tool was called");
    };
    const [mine, theirs] = await Promise.all([refusal(local.client), refusal(remote)]);
    assert.deepEqual(mine, theirs);
  });
});

describe("plinth-mcp refuses to start", () => {
  test("without PLINTH_URL and PLINTH_API_KEY, saying so", async () => {
    const { code, stdout, stderr } = await run({});
    assert.equal(code, 1);
    assert.equal(stdout, "");
    assert.match(stderr, /PLINTH_URL and PLINTH_API_KEY are required/);
  });

  test("with a key the server refuses", async () => {
    const { code, stderr } = await run({ PLINTH_URL: plinth.baseUrl, PLINTH_API_KEY: "pln_live_00000000000000000000000000000000" });
    assert.equal(code, 1);
    assert.match(stderr, /401/);
  });

  test("when PLINTH_URL redirects to another origin: the key goes nowhere else", async () => {
    const seen = [];
    const other = createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(401).end();
    });
    await new Promise((res) => other.listen(0, "127.0.0.1", res));
    const first = createServer((req, res) => {
      res.writeHead(307, { Location: `http://127.0.0.1:${other.address().port}${req.url}` }).end();
    });
    await new Promise((res) => first.listen(0, "127.0.0.1", res));
    try {
      const key = "pln_live_thekeythatmuststayhome0000000";
      const { code, stderr } = await run({ PLINTH_URL: `http://127.0.0.1:${first.address().port}`, PLINTH_API_KEY: key });
      assert.equal(code, 1);
      assert.match(stderr, /[Rr]edirect/);
      for (const auth of seen) {
        assert.ok(!auth?.includes(key), "the other server got the key");
      }
    } finally {
      other.closeAllConnections();
      first.closeAllConnections();
      await Promise.all([new Promise((res) => other.close(res)), new Promise((res) => first.close(res))]);
    }
  });
});
