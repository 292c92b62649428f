import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { test } from "node:test";

import { verifyWebhook, WebhookVerificationError, webhookTopics } from "../dist/index.js";
import { render, serverTopics, topicsFile } from "../scripts/topics.mjs";

const secret = "whsec_test_secret";
const body = JSON.stringify({ id: "evt_1", type: "order.paid", created: 1767225600, data: { id: 3, status: "paid" } });

// sign is the server's signature (tenant/webhooks/signature.Sign).
function sign(t, payload, ...secrets) {
  return [`t=${t}`, ...secrets.map((s) => `v1=${createHmac("sha256", s).update(`${t}.${payload}`).digest("hex")}`)].join(",");
}
const now = () => Math.floor(Date.now() / 1000);

async function refused(options, reason) {
  await assert.rejects(verifyWebhook(options), (err) => {
    assert.ok(err instanceof WebhookVerificationError, String(err));
    assert.equal(err.reason, reason, err.message);
    return true;
  });
}

test("a signed body verifies and parses", async () => {
  const event = await verifyWebhook({ payload: body, header: sign(now(), body, secret), secret });
  assert.deepEqual(event, JSON.parse(body));
  const fromBuffer = await verifyWebhook({ payload: new TextEncoder().encode(body).buffer, header: sign(now(), body, secret), secret });
  assert.equal(fromBuffer.id, "evt_1");
});

test("any v1 entry may match (a rotated secret's window); v2 and unknown entries are ignored", async () => {
  const header = `${sign(now(), body, "whsec_old", secret)},v2=${"ab".repeat(32)},x=y`;
  assert.equal((await verifyWebhook({ payload: body, header, secret })).id, "evt_1");
  assert.equal((await verifyWebhook({ payload: body, header, secret: "whsec_old" })).id, "evt_1");
  await refused({ payload: body, header, secret: "whsec_other" }, "no_match");
});

test("altered bodies, other secrets and old or future timestamps are refused", async () => {
  await refused({ payload: body.replace("paid", "free"), header: sign(now(), body, secret), secret }, "no_match");
  await refused({ payload: body, header: sign(now(), body, "whsec_other"), secret }, "no_match");
  await refused({ payload: body, header: sign(now() - 301, body, secret), secret }, "stale");
  await refused({ payload: body, header: sign(now() + 301, body, secret), secret }, "stale");
  assert.equal((await verifyWebhook({ payload: body, header: sign(now() - 290, body, secret), secret })).id, "evt_1");
  await refused({ payload: body, header: sign(now() - 290, body, secret), secret, toleranceSeconds: 60 }, "stale");
  // The timestamp is signed: moving it breaks the signature.
  const header = sign(now() - 1000, body, secret).replace(/^t=\d+/, `t=${now()}`);
  await refused({ payload: body, header, secret }, "no_match");
});

test("malformed headers and bodies are refused", async () => {
  const t = now();
  const v1 = sign(t, body, secret).split(",")[1];
  for (const header of [undefined, null, "", `v1=${v1.slice(3)}`, `t=${t}`, `t=${t},v1=zz`, `t=abc,${v1}`, `t=${t},t=${t},${v1}`]) {
    await refused({ payload: body, header, secret }, "invalid_header");
  }
  const notJSON = "not json";
  await refused({ payload: notJSON, header: sign(t, notJSON, secret), secret }, "invalid_payload");
  const notEvent = JSON.stringify({ id: 1 });
  await refused({ payload: notEvent, header: sign(t, notEvent, secret), secret }, "invalid_payload");
});

test("webhookTopics are the server's topics, in order, generated (scripts/topics.mjs) and current", () => {
  const server = serverTopics(); // the Go declaration of var Topics
  assert.deepEqual([...webhookTopics], server.topics, `the server's topics (${server.path}); run npm run generate`);
  assert.equal(readFileSync(topicsFile, "utf8"), render(server), "src/topics.ts is not what scripts/topics.mjs makes of the server's topics: run npm run generate");
});

test("the topic generator reads one Go list of topics, and refuses anything else", () => {
  const root = mkdtempSync(join(tmpdir(), "plinth-topics-"));
  try {
    const write = (path, topics) => {
      mkdirSync(join(root, dirname(path)), { recursive: true });
      writeFileSync(join(root, path), `package x\n\nvar Topics = []string{\n${topics.map((t) => `\t"${t}",\n`).join("")}}\n`);
    };
    assert.throws(() => serverTopics(root), /found 0/);
    write("internal/webhook/topics.go", ["order.paid", "content.changed"]);
    const found = serverTopics(root);
    assert.deepEqual(found, { path: join("internal", "webhook", "topics.go"), topics: ["order.paid", "content.changed"] });
    assert.match(render(found), /export const webhookTopics = \[\n  "order.paid",\n  "content.changed",\n\] as const;/);
    write("tenant/outbox/topics.go", ["order.paid"]);
    assert.throws(() => serverTopics(root), /found 2/);
    rmSync(join(root, "internal"), { recursive: true });
    assert.equal(serverTopics(root).path, join("tenant", "outbox", "topics.go"));
    write("tenant/outbox/topics.go", ["order.paid", "Not a topic"]);
    assert.throws(() => serverTopics(root), /is not a topic/);
    write("tenant/outbox/topics.go", ["order.paid", "order.paid"]);
    assert.throws(() => serverTopics(root), /repeated/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
