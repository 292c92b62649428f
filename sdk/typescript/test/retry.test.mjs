// The retry rule and Idempotency-Key against a loopback server that answers
// what each test scripts: statuses the server under test cannot be made to
// give on demand (500, 502, 503, a long Retry-After).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { createClient } from "../dist/index.js";
import { retryAfter } from "../dist/retry.js";

let server;
let baseUrl;
let script = []; // the answers to give, in order: [status, headers]
let seen = []; // the requests: { method, url, headers, body }

before(async () => {
  server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
      const [status, headers = {}] = script.shift() ?? [200];
      const body = status < 300
        ? JSON.stringify({ id: 1, slug: "hero", name: "Hero", props: {}, translations: {}, created_at: "2030-01-01T00:00:00Z", updated_at: "2030-01-01T00:00:00Z" })
        : JSON.stringify({ type: `https://plinth.dev/errors/x`, title: "T", status, code: "internal_error", instance: "req" });
      res.writeHead(status, { "Content-Type": status < 300 ? "application/json" : "application/problem+json", ...headers }).end(body);
    });
  });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  baseUrl = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((res) => server.close(res)));

function setup(answers, options = {}) {
  script = answers;
  seen = [];
  return createClient({ baseUrl, apiKey: "pln_live_test", ...options });
}

const now = { "Retry-After": "0" }; // retry at once, to keep the tests fast

for (const status of [429, 500, 502, 503]) {
  test(`${status} is retried until it succeeds`, async () => {
    const client = setup([[status, now], [status, now], [201]]);
    const { data, error, response } = await client.POST("/v1/components", { body: { name: "Hero", props: { a: 1 } } });
    assert.equal(error, undefined);
    assert.equal(response.status, 201);
    assert.equal(data.slug, "hero");
    assert.equal(seen.length, 3);
    const keys = new Set(seen.map((r) => r.headers["idempotency-key"]));
    assert.equal(keys.size, 1, "one Idempotency-Key across the attempts");
    assert.ok([...keys][0]);
    assert.deepEqual(seen.map((r) => r.body), Array(3).fill(JSON.stringify({ name: "Hero", props: { a: 1 } })));
  });
}

for (const status of [400, 401, 403, 404, 409, 422]) {
  test(`${status} is not retried`, async () => {
    const client = setup([[status, now], [201]]);
    const { error, response } = await client.POST("/v1/components", { body: { name: "Hero" } });
    assert.equal(response.status, status);
    assert.equal(error.status, status);
    assert.equal(seen.length, 1);
  });
}

test("at most 5 attempts; the last answer is returned", async () => {
  const client = setup(Array(6).fill([503, now]));
  const { error, response } = await client.GET("/v1/components");
  assert.equal(response.status, 503);
  assert.equal(error.code, "internal_error");
  assert.equal(seen.length, 5);
});

test("retries lowers the number of attempts; 0 sends once", async () => {
  let client = setup(Array(6).fill([500, now]), { retries: 1 });
  await client.GET("/v1/components");
  assert.equal(seen.length, 2);
  client = setup(Array(6).fill([500, now]), { retries: 0 });
  await client.GET("/v1/components");
  assert.equal(seen.length, 1);
  assert.throws(() => createClient({ baseUrl, apiKey: "k", retries: 5 }), RangeError);
  assert.throws(() => createClient({ baseUrl, apiKey: "k", retries: -1 }), RangeError);
});

test("Retry-After is waited; one beyond the 30 s cap is handed back at once", async () => {
  let client = setup([[429, { "Retry-After": "1" }], [200]]);
  const started = Date.now();
  const { response } = await client.GET("/v1/components");
  assert.equal(response.status, 200);
  assert.ok(Date.now() - started >= 950, `waited ${Date.now() - started} ms`);

  client = setup([[429, { "Retry-After": "31" }], [200]]);
  const quick = Date.now();
  const long = await client.GET("/v1/components");
  assert.equal(long.response.status, 429);
  assert.equal(seen.length, 1);
  assert.ok(Date.now() - quick < 1000);
});

test("Retry-After is read as seconds or as an HTTP date", () => {
  assert.equal(retryAfter("2"), 2000);
  assert.equal(retryAfter(null), undefined);
  assert.equal(retryAfter("soon"), undefined);
  const inTwo = retryAfter(new Date(Date.now() + 2000).toUTCString());
  assert.ok(inTwo > 0 && inTwo <= 2000, String(inTwo));
});

test("network errors are retried; an abort is not", async () => {
  let attempts = 0;
  const failing = async () => {
    attempts++;
    throw new TypeError("fetch failed");
  };
  const client = createClient({ baseUrl, apiKey: "k", fetch: failing, retries: 2 });
  await assert.rejects(client.GET("/v1/components"), TypeError);
  assert.equal(attempts, 3);

  attempts = 0;
  const abort = new AbortController();
  const aborting = async () => {
    attempts++;
    abort.abort();
    throw new DOMException("aborted", "AbortError");
  };
  const c2 = createClient({ baseUrl, apiKey: "k", fetch: aborting });
  await assert.rejects(c2.GET("/v1/components", { signal: abort.signal }), { name: "AbortError" });
  assert.equal(attempts, 1);
});

test("PUT, PATCH and DELETE carry an Idempotency-Key; GET does not", async () => {
  const client = setup([[200], [200], [204], [200]]);
  await client.PUT("/v1/content/{key}", { params: { path: { key: "a" } }, body: { value: "v" } });
  await client.PATCH("/v1/components/{slug}", { params: { path: { slug: "hero" } }, body: { name: "N" } });
  await client.DELETE("/v1/components/{slug}", { params: { path: { slug: "hero" } } });
  await client.GET("/v1/components");
  assert.deepEqual(seen.map((r) => r.method), ["PUT", "PATCH", "DELETE", "GET"]);
  for (const r of seen.slice(0, 3)) {
    assert.match(r.headers["idempotency-key"], /^[0-9a-f-]{36}$/);
  }
  assert.equal(new Set(seen.slice(0, 3).map((r) => r.headers["idempotency-key"])).size, 3, "a new key per request");
  assert.equal(seen[3].headers["idempotency-key"], undefined);
  assert.equal(seen[0].headers.authorization, "Bearer pln_live_test");
});
