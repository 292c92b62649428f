import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { verifyWebhook, WebhookVerificationError, webhookTopics } from "../dist/index.js";
import { repoRoot } from "./plinth.mjs";

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

test("webhookTopics are the server's topics (tenant/outbox/topics.go), in order", () => {
  const src = readFileSync(join(repoRoot, "tenant/outbox/topics.go"), "utf8");
  const block = /var Topics = \[\]string\{([^}]*)\}/.exec(src);
  assert.ok(block, "Topics in topics.go");
  const server = [...block[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]);
  assert.deepEqual([...webhookTopics], server);
});
