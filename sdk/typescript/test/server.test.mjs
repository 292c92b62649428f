// The SDK against a real Plinth server (test/plinth.mjs starts it).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, describe, test } from "node:test";

import { createClient, createPublicClient, isProblem, ProblemError, streamJob, verifyWebhook, waitForJob, WebhookVerificationError } from "../dist/index.js";
import { recorder, startPlinth } from "./plinth.mjs";

let plinth;
before(async () => {
  plinth = await startPlinth();
});
after(async () => {
  await plinth?.stop();
});

const uuidRE = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
let ipSeq = 0;
// Each public test comes from its own address (the server trusts
// X-Forwarded-For from loopback), so their per-IP limits are apart.
const nextIP = () => `198.51.100.${++ipSeq}`;
// publicClient is a public client whose requests come from a new address
// and are recorded in rec.
function publicClient(rec) {
  const ip = nextIP();
  return createPublicClient({
    baseUrl: plinth.baseUrl,
    projectId: plinth.projectId,
    fetch: (request) => {
      const headers = new Headers(request.headers);
      headers.set("X-Forwarded-For", ip);
      return rec.fetch(new Request(request, { headers }));
    },
  });
}

describe("createClient", () => {
  test("reads and writes with typed calls: { data, error, response }", async () => {
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey });
    const put = await client.PUT("/v1/content/{key}", { params: { path: { key: "sdk.title" } }, body: { value: "Bienvenue", lang: "fr" } });
    assert.equal(put.response.status, 200, JSON.stringify(put.error));
    const { data, error, response } = await client.GET("/v1/content/{key}", { params: { path: { key: "sdk.title" }, query: { lang: "fr" } } });
    assert.equal(error, undefined);
    assert.equal(response.status, 200);
    assert.equal(data.key, "sdk.title");
    assert.equal(data.value, "Bienvenue");
    assert.equal(data.lang, "fr");
  });

  test("a base URL ending in /v1 (the contract's base address) works too", async () => {
    const client = createClient({ baseUrl: `${plinth.baseUrl}/v1/`, apiKey: plinth.apiKey });
    const { data, response } = await client.GET("/v1/projects/me");
    assert.equal(response.status, 200);
    assert.equal(data.id, plinth.projectId);
  });

  test("every write carries a UUID Idempotency-Key unless the caller sets one; reads carry none", async () => {
    const rec = recorder();
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey, fetch: rec.fetch });
    await client.POST("/v1/components", { body: { name: "Keyed hero", props: { heading: "Hi" } } });
    await client.POST("/v1/components", { body: { name: "Own key" }, params: { header: { "Idempotency-Key": "my-own-key-1" } } });
    await client.GET("/v1/components");
    assert.deepEqual(rec.calls.map((c) => c.status), [201, 201, 200]);
    assert.match(rec.calls[0].headers.get("Idempotency-Key"), uuidRE);
    assert.equal(rec.calls[1].headers.get("Idempotency-Key"), "my-own-key-1");
    assert.equal(rec.calls[2].headers.get("Idempotency-Key"), null);
    assert.equal(rec.calls[0].headers.get("Authorization"), `Bearer ${plinth.apiKey}`);
  });

  test("an answer lost on the way back is retried with the same key: one row, the replay returned", async () => {
    const name = `Lost answer ${Date.now()}`;
    // The server creates the component, then the connection "fails"
    // before the client reads the answer.
    const rec = recorder((request, response, i) => {
      if (i === 0) {
        throw new TypeError("fetch failed (the test drops the answer)");
      }
      return response;
    });
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey, fetch: rec.fetch });
    const { data, error, response } = await client.POST("/v1/components", { body: { name, props: { cta: { label: "Go" } } } });
    assert.equal(error, undefined);
    assert.equal(response.status, 201);
    assert.equal(response.headers.get("Idempotent-Replayed"), "true");
    assert.equal(rec.calls.length, 2);
    assert.deepEqual(rec.calls.map((c) => c.status), [201, 201]);
    const key = rec.calls[0].headers.get("Idempotency-Key");
    assert.match(key, uuidRE);
    assert.equal(rec.calls[1].headers.get("Idempotency-Key"), key);
    assert.equal(rec.calls[1].body, rec.calls[0].body);

    const list = await client.GET("/v1/components", { params: { query: { limit: 100 } } });
    const rows = list.data.data.filter((c) => c.name === name);
    assert.equal(rows.length, 1, "one row for the two attempts");
    assert.equal(rows[0].id, data.id);
    assert.deepEqual(rows[0].props, { cta: { label: "Go" } });
  });

  test("errors are Problems and are not retried (401, 404, 422)", async () => {
    const rec = recorder();
    const bad = createClient({ baseUrl: plinth.baseUrl, apiKey: "pln_live_00000000000000000000000000000000", fetch: rec.fetch });
    const unauthorized = await bad.GET("/v1/projects/me");
    assert.ok(isProblem(unauthorized.error));
    assert.equal(unauthorized.error.code, "unauthorized");
    assert.equal(unauthorized.error.status, 401);

    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey, fetch: rec.fetch });
    const missing = await client.GET("/v1/content/{key}", { params: { path: { key: "sdk.nothing-here" } } });
    assert.ok(isProblem(missing.error));
    assert.equal(missing.error.code, "not_found");
    assert.equal(missing.error.instance, missing.response.headers.get("X-Request-Id"));

    const invalid = await client.POST("/v1/images", { body: { prompt: "x", width: 1 } });
    assert.ok(isProblem(invalid.error));
    assert.equal(invalid.error.code, "validation_failed");
    assert.ok(Array.isArray(invalid.error.errors?.width), JSON.stringify(invalid.error));

    assert.deepEqual(rec.calls.map((c) => c.status), [401, 404, 422], "one attempt each");
    assert.equal(isProblem(undefined), false);
    assert.equal(isProblem({ message: "no" }), false);
  });
});

describe("createPublicClient", () => {
  test("reads /v1/public/* with X-Service-Project-Key and no key", async () => {
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey });
    await client.PUT("/v1/content/{key}", { params: { path: { key: "sdk.public" } }, body: { value: "Hello" } });
    const rec = recorder();
    const pub = publicClient(rec);
    const { data, error } = await pub.GET("/v1/public/content/{key}", { params: { path: { key: "sdk.public" } } });
    assert.equal(error, undefined);
    assert.equal(data.value, "Hello");
    const sent = await pub.POST("/v1/public/forms/contact", {
      body: { name: "Ada", email: "ada@example.com", message: "Hi", fields: { budget: 5000, topics: ["web", "seo"] } },
    });
    assert.equal(sent.response.status, 201, JSON.stringify(sent.error));
    assert.deepEqual(sent.data.fields, { budget: 5000, topics: ["web", "seo"] });
    for (const c of rec.calls) {
      assert.equal(c.headers.get("X-Service-Project-Key"), plinth.projectId);
      assert.equal(c.headers.get("Authorization"), null);
    }
    assert.match(rec.calls[1].headers.get("Idempotency-Key"), uuidRE);
  });

  test("a 429 is waited out (Retry-After) and retried to success", async () => {
    // The server allows 2 public requests at once per address, then one a
    // second (PLINTH_PUBLIC_RATE in plinth.mjs): the third is 429.
    const rec = recorder();
    const pub = publicClient(rec);
    const started = Date.now();
    for (let i = 0; i < 3; i++) {
      const { data, error } = await pub.GET("/v1/public/products");
      assert.equal(error, undefined);
      assert.ok(Array.isArray(data.data));
    }
    assert.deepEqual(rec.calls.map((c) => c.status), [200, 200, 429, 200]);
    assert.ok(Date.now() - started >= 900, "waited the Retry-After second");
  });
});

describe("jobs", () => {
  test("streamJob follows a job to done, resuming with Last-Event-ID after a dropped connection", async () => {
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey });
    const submit = await client.POST("/v1/images", { body: { prompt: "A lighthouse at dawn", width: 64, height: 64 } });
    assert.equal(submit.response.status, 202, JSON.stringify(submit.error));
    const jobId = submit.data.id;

    // The first stream is cut after its first event.
    const rec = recorder((request, response, i) => (i === 0 ? cutAfterFirstEvent(response) : response));
    const streaming = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey, fetch: rec.fetch });
    const events = [];
    for await (const e of streamJob(streaming, jobId, { lastEventId: "0" })) {
      events.push(e);
    }
    assert.equal(rec.calls.length, 2, "one reconnection");
    assert.equal(rec.calls[0].headers.get("Last-Event-ID"), "0");
    assert.equal(rec.calls[1].headers.get("Last-Event-ID"), events[0].id);
    assert.deepEqual(events.map((e) => Number(e.id)), events.map((_, i) => i + 1), "every event once, in order");
    const done = events.at(-1);
    assert.equal(done.type, "done");
    assert.equal(done.data.id, jobId);
    assert.equal(done.data.status, "completed");
    assert.ok(events.some((e) => e.type === "progress" && typeof e.data.progress === "number"));
    assert.ok(events.some((e) => e.type === "step" && e.data.name === "generate"));
  });

  test("waitForJob resolves with the finished job", async () => {
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey });
    const submit = await client.POST("/v1/images", { body: { prompt: "A kite over the dunes", width: 64, height: 64 } });
    assert.equal(submit.response.status, 202);
    const job = await waitForJob(client, submit.data.id);
    assert.equal(job.id, submit.data.id);
    assert.equal(job.status, "completed");
    assert.equal(job.progress, 100);
    assert.match(job.result.url, /\/v1\/public\/media\//);
  });

  test("an unknown job is a ProblemError; an aborted wait rejects", async () => {
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey });
    await assert.rejects(waitForJob(client, "job_000000000000000000000000"), (err) => {
      assert.ok(err instanceof ProblemError);
      assert.equal(err.status, 404);
      assert.equal(err.problem.code, "not_found");
      return true;
    });
    const submit = await client.POST("/v1/images", { body: { prompt: "A slow boat", width: 64, height: 64 } });
    const abort = new AbortController();
    abort.abort(new Error("the page was left"));
    await assert.rejects(waitForJob(client, submit.data.id, { signal: abort.signal }), /the page was left/);
  });
});

describe("paginate", () => {
  // Seven posts under a tag of their own, so that the list holds them alone.
  let tagId;
  let created; // their ids, oldest first
  before(async () => {
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey });
    const tag = await client.POST("/v1/tags", { body: { name: `Paged ${Date.now()}` } });
    assert.equal(tag.response.status, 201, JSON.stringify(tag.error));
    tagId = String(tag.data.id);
    created = [];
    for (let i = 1; i <= 7; i++) {
      const post = await client.POST("/v1/blog-posts", { body: { title: `Paged post ${i}`, content: "<p>Page me</p>", language_code: "en", tag_ids: [tag.data.id] } });
      assert.equal(post.response.status, 201, JSON.stringify(post.error));
      created.push(post.data.id);
    }
  });

  test("yields every item of a list once, in its order, across pages", async () => {
    const rec = recorder();
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey, fetch: rec.fetch });
    const seen = [];
    for await (const post of client.paginate("/v1/blog-posts", { params: { query: { tag: tagId, limit: 3, lang: "en" } } })) {
      assert.equal(post.lang, "en");
      seen.push(post.id);
    }
    assert.deepEqual(seen, created.toReversed(), "newest first, each once");
    // Pages of 3, 3 and 1, each asked for with the previous one's cursor.
    assert.deepEqual(rec.calls.map((c) => c.status), [200, 200, 200]);
    const queries = rec.calls.map((c) => new URL(c.url).searchParams);
    for (const q of queries) {
      assert.equal(q.get("tag"), tagId);
      assert.equal(q.get("limit"), "3");
    }
    assert.equal(queries[0].get("cursor"), null);
    assert.ok(queries[1].get("cursor"));
    assert.notEqual(queries[2].get("cursor"), queries[1].get("cursor"));
  });

  test("leaving the loop early asks for no further page", async () => {
    const rec = recorder();
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey, fetch: rec.fetch });
    const seen = [];
    for await (const post of client.paginate("/v1/blog-posts", { params: { query: { tag: tagId, limit: 3 } } })) {
      seen.push(post.id);
      if (seen.length === 2) {
        break;
      }
    }
    assert.deepEqual(seen, created.toReversed().slice(0, 2));
    assert.equal(rec.calls.length, 1);
  });

  test("a refusal throws ProblemError, on the first page or a later one", async () => {
    const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey });
    await assert.rejects(client.paginate("/v1/blog-posts", { params: { query: { cursor: "not-a-cursor-this-api-issued" } } }).next(), (err) => {
      assert.ok(err instanceof ProblemError);
      assert.equal(err.status, 422);
      assert.equal(err.problem.code, "validation_failed");
      return true;
    });
    // The second page's answer is a 403, as if the key lost its scope between pages.
    const rec = recorder((request, response, i) => (i === 1 ? Response.json({ type: "about:blank", title: "Forbidden", status: 403, code: "forbidden", detail: "this key lacks blog:read" }, { status: 403, headers: { "Content-Type": "application/problem+json" } }) : response));
    const revoked = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey, fetch: rec.fetch });
    const seen = [];
    await assert.rejects(async () => {
      for await (const post of revoked.paginate("/v1/blog-posts", { params: { query: { tag: tagId, limit: 3 } } })) {
        seen.push(post.id);
      }
    }, (err) => err instanceof ProblemError && err.status === 403 && err.problem.code === "forbidden");
    assert.equal(seen.length, 3, "the first page's items came before the refusal");
  });
});

describe("webhooks", () => {
  test("a real signed delivery verifies; altered, it does not", async () => {
    const received = [];
    let arrived;
    const delivery = new Promise((res) => (arrived = res));
    const receiver = createServer((req, res) => {
      const chunks = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        received.push({ headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        res.writeHead(200).end();
        arrived();
      });
    });
    await new Promise((res) => receiver.listen(0, "127.0.0.1", res));
    try {
      const url = `http://127.0.0.1:${receiver.address().port}/hooks/plinth`;
      const client = createClient({ baseUrl: plinth.baseUrl, apiKey: plinth.apiKey });
      const endpoint = await client.POST("/v1/webhook-endpoints", { body: { url, events: ["content.changed"] } });
      assert.equal(endpoint.response.status, 201, JSON.stringify(endpoint.error));
      const secret = endpoint.data.signing_secret;
      await client.PUT("/v1/content/{key}", { params: { path: { key: "sdk.hooked" } }, body: { value: "Signed" } });
      await Promise.race([delivery, new Promise((_, rej) => setTimeout(() => rej(new Error("no delivery within 30 s")), 30_000))]);

      const { headers, body } = received[0];
      assert.equal(headers["x-service-event"], "content.changed");
      const event = await verifyWebhook({ payload: body, header: headers["x-service-signature"], secret });
      assert.equal(event.type, "content.changed");
      assert.match(event.id, /^evt_/);
      assert.equal(typeof event.created, "number");
      assert.deepEqual(event.data, { key: "sdk.hooked", lang: "en", value: "Signed", previous_value: null });
      const bytes = await verifyWebhook({ payload: new TextEncoder().encode(body), header: headers["x-service-signature"], secret });
      assert.equal(bytes.id, event.id);

      await assert.rejects(verifyWebhook({ payload: body.replace("Signed", "Forged"), header: headers["x-service-signature"], secret }),
        (err) => err instanceof WebhookVerificationError && err.reason === "no_match");
      await assert.rejects(verifyWebhook({ payload: body, header: headers["x-service-signature"], secret: `${secret}x` }),
        (err) => err instanceof WebhookVerificationError && err.reason === "no_match");
      await assert.rejects(verifyWebhook({ payload: body, header: headers["x-service-signature"], secret, toleranceSeconds: -1 }),
        (err) => err instanceof WebhookVerificationError && err.reason === "stale");
    } finally {
      receiver.closeAllConnections();
      await new Promise((res) => receiver.close(res));
    }
  });
});

// cutAfterFirstEvent passes a stream's first event on, then fails the
// body as a dropped connection does.
function cutAfterFirstEvent(response) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let text = "";
  let sent = 0;
  const body = new ReadableStream({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) {
        controller.close();
        return;
      }
      text += decoder.decode(value, { stream: true });
      const end = text.indexOf("\n\n");
      if (end < 0) {
        controller.enqueue(encoder.encode(text.slice(sent)));
        sent = text.length;
        return;
      }
      controller.enqueue(encoder.encode(text.slice(sent, end + 2)));
      await reader.cancel();
      controller.error(new TypeError("terminated (the test drops the connection)"));
    },
  });
  return new Response(body, { status: response.status, headers: response.headers });
}
