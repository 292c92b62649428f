import type { PlinthClient } from "./client.js";
import type { components } from "./openapi.js";
import { ProblemError } from "./problem.js";
import { backoff, MAX_ATTEMPTS, sleep } from "./retry.js";
import { parseSSE, type SSEMessage } from "./sse.js";

type Schemas = components["schemas"];

/** A job: its status, progress, steps, and result or error once finished. */
export type Job = Schemas["Job"];

/**
 * JobEvent is one event of a job's stream, with its id (its number in the
 * job): progress, a step's change, the job's error (a failed job; done
 * follows), and done with the finished Job, always last.
 */
export type JobEvent =
  | { type: "progress"; id: string; data: { progress: number; message: string } }
  | { type: "step"; id: string; data: Schemas["JobStep"] }
  | { type: "error"; id: string; data: Schemas["JobError"] }
  | { type: "done"; id: string; data: Job };

const jobEventTypes = new Set<string>(["progress", "step", "error", "done"] satisfies JobEvent["type"][]);

/** Options of streamJob. */
export interface StreamJobOptions {
  /** Stops the stream: the iterator then rejects with the signal's reason. */
  signal?: AbortSignal;
  /**
   * Start after this event id; "0" replays every event of the job. Without
   * it the server sends a running job's events so far, and only done for a
   * finished job.
   */
  lastEventId?: string;
}

/**
 * streamJob iterates over the events of job jobId (GET
 * /v1/jobs/{id}/stream) until done, which it yields last. When the
 * connection drops it reconnects with Last-Event-ID, so no event is lost or
 * repeated; it gives up (throws) after 5 reconnections in a row that
 * brought no event. A refusal (404, 403, …) throws ProblemError.
 */
export async function* streamJob(client: PlinthClient, jobId: string, options: StreamJobOptions = {}): AsyncGenerator<JobEvent, void, undefined> {
  const { signal } = options;
  let last = options.lastEventId;
  let failures = 0;
  for (;;) {
    signal?.throwIfAborted();
    const { data, error, response } = await client.GET("/v1/jobs/{id}/stream", {
      params: { path: { id: jobId }, header: last === undefined ? {} : { "Last-Event-ID": last } },
      parseAs: "stream",
      signal,
    });
    if (!response.ok || !data) {
      throw new ProblemError(response.status, error);
    }
    const events = parseSSE(data);
    try {
      for (;;) {
        let next: IteratorResult<SSEMessage, void>;
        try {
          next = await events.next();
        } catch (err) {
          if (signal?.aborted) {
            throw signal.reason;
          }
          break; // the connection dropped: resume after the last event
        }
        if (next.done) {
          break; // ended before done (the server stopping, say): resume
        }
        const m = next.value;
        // Every job event has an id. An error without one is the server
        // saying its side of the stream failed; the stream then ends and
        // the reconnection resumes it.
        if (m.id === undefined) {
          continue;
        }
        last = m.id;
        failures = 0;
        if (!jobEventTypes.has(m.event)) {
          continue; // a kind of event this version does not know
        }
        const event = { type: m.event, id: m.id, data: JSON.parse(m.data) } as JobEvent;
        yield event;
        if (event.type === "done") {
          return;
        }
      }
    } finally {
      await events.return();
    }
    failures++;
    if (failures >= MAX_ATTEMPTS) {
      throw new Error(`the stream of job ${jobId} dropped ${failures} times in a row without an event`);
    }
    await sleep(backoff(failures - 1), signal);
  }
}

/** Options of waitForJob. */
export interface WaitForJobOptions {
  /** Stops waiting: the promise then rejects with the signal's reason. */
  signal?: AbortSignal;
}

/**
 * waitForJob resolves with job jobId once it has finished (completed,
 * failed or cancelled: check status), following its event stream.
 */
export async function waitForJob(client: PlinthClient, jobId: string, options: WaitForJobOptions = {}): Promise<Job> {
  for await (const event of streamJob(client, jobId, { signal: options.signal })) {
    if (event.type === "done") {
      return event.data;
    }
  }
  // streamJob ends only after done, or by throwing.
  throw new Error(`the stream of job ${jobId} ended without done`);
}
