import assert from "node:assert/strict";
import { test } from "node:test";

import { parseSSE } from "../dist/sse.js";

// stream serves chunks as a body would, split wherever the test says.
function stream(...chunks) {
  const encoder = new TextEncoder();
  return new ReadableStream({
    start(controller) {
      for (const c of chunks) {
        controller.enqueue(typeof c === "string" ? encoder.encode(c) : c);
      }
      controller.close();
    },
  });
}

async function all(s) {
  const out = [];
  for await (const m of parseSSE(s)) {
    out.push(m);
  }
  return out;
}

test("events, ids, comments and multi-line data, split anywhere", async () => {
  const text = ": heartbeat\n\nid: 1\nevent: progress\ndata: {\"progress\":0}\n\nid: 2\r\nevent: step\r\ndata: a\r\ndata: b\r\n\r\nretry: 10\ndata:plain\n\n";
  const want = [
    { event: "progress", data: "{\"progress\":0}", id: "1" },
    { event: "step", data: "a\nb", id: "2" },
    { event: "message", data: "plain", id: undefined }, // no id field of its own
  ];
  assert.deepEqual(await all(stream(text)), want);
  // One byte at a time: CRLF split across chunks is one line end.
  const bytes = new TextEncoder().encode(text);
  assert.deepEqual(await all(stream(...Array.from(bytes, (b) => new Uint8Array([b])))), want);
});

test("multi-byte characters split across chunks; an unfinished event is dropped", async () => {
  const bytes = new TextEncoder().encode("id: 7\nevent: done\ndata: {\"m\":\"À propos\"}\n\nid: 8\ndata: cut");
  const split = bytes.indexOf(0xc3) + 1; // inside "À"
  assert.deepEqual(await all(stream(bytes.slice(0, split), bytes.slice(split))), [{ event: "done", data: "{\"m\":\"À propos\"}", id: "7" }]);
});

test("leaving early cancels the body", async () => {
  let cancelled = false;
  const s = new ReadableStream({
    start(c) {
      c.enqueue(new TextEncoder().encode("id: 1\ndata: x\n\n"));
    },
    cancel() {
      cancelled = true;
    },
  });
  for await (const m of parseSSE(s)) {
    assert.equal(m.data, "x");
    break;
  }
  assert.ok(cancelled);
});
