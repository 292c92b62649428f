// streamJob's reconnection against a loopback server that scripts each
// connection's stream: what the server under test does only when it fails
// (an error event without id, a stream ending before done).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { createClient, streamJob } from "../dist/index.js";

let server;
let baseUrl;
let streams = []; // each connection's body, in order
let seen = []; // each connection's Last-Event-ID

before(async () => {
  server = createServer((req, res) => {
    seen.push(req.headers["last-event-id"]);
    res.writeHead(200, { "Content-Type": "text/event-stream" });
    res.end(streams.shift() ?? "");
  });
  await new Promise((res) => server.listen(0, "127.0.0.1", res));
  baseUrl = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((res) => server.close(res)));

const job = { id: "job_1", type: "image.generate", status: "completed", progress: 100, message: "Done", steps: [], created_at: "2030-01-01T00:00:00Z", updated_at: "2030-01-01T00:00:00Z" };

test("an error event without id is the stream failing, not the job: streamJob resumes after the last id", async () => {
  streams = [
    'id: 1\nevent: progress\ndata: {"progress":0,"message":"Started"}\n\n: heartbeat\n\nevent: error\ndata: {"code":"internal_error","message":"the stream failed; reconnect to resume"}\n\n',
    `id: 2\nevent: future-kind\ndata: {}\n\nid: 3\nevent: done\ndata: ${JSON.stringify(job)}\n\n`,
  ];
  seen = [];
  const client = createClient({ baseUrl, apiKey: "pln_live_test" });
  const events = [];
  for await (const e of streamJob(client, "job_1")) {
    events.push(e);
  }
  assert.deepEqual(events, [
    { type: "progress", id: "1", data: { progress: 0, message: "Started" } },
    { type: "done", id: "3", data: job },
  ]);
  assert.deepEqual(seen, [undefined, "1"]);
});

test("streamJob gives up after 5 connections in a row without an event", async () => {
  streams = ["", ": heartbeat\n\n", "", "", "", "id: 1\nevent: done\ndata: {}\n\n"];
  seen = [];
  const client = createClient({ baseUrl, apiKey: "pln_live_test" });
  await assert.rejects(async () => {
    for await (const e of streamJob(client, "job_1", { lastEventId: "7" })) {
      assert.fail(`no event expected, got ${e.type}`);
    }
  }, /dropped 5 times in a row/);
  assert.deepEqual(seen, ["7", "7", "7", "7", "7"]);
});
