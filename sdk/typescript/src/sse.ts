// A Server-Sent Events reader over a fetch body, for the runtimes without
// EventSource (Node, Deno, edge) and because EventSource cannot send an
// Authorization header.

/** One event of a stream: its type (event field, "message" by default) and data lines joined. */
export interface SSEMessage {
  event: string;
  data: string;
  /**
   * The event's own id field; undefined when it has none. (The standard's
   * last event id carries over events without one: keeping it is the
   * caller's, who can then tell an event without id from one with.)
   */
  id: string | undefined;
}

/**
 * parseSSE yields the events of an event stream as the HTML standard reads
 * them: lines end with CRLF, LF or CR; a blank line dispatches; comments
 * (": heartbeat") and retry are skipped; an event without data is not
 * dispatched. Leaving the loop early cancels the stream.
 */
export async function* parseSSE(stream: ReadableStream<Uint8Array>): AsyncGenerator<SSEMessage, void, undefined> {
  const reader = stream.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let id: string | undefined;
  let finished = false;
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) {
        finished = true;
        return; // an event not ended by a blank line is dropped, as the standard says
      }
      buffer += decoder.decode(value, { stream: true });
      for (;;) {
        const end = buffer.search(/[\r\n]/);
        // A CR at the end of the buffer may be the first half of a CRLF.
        if (end < 0 || (buffer[end] === "\r" && end === buffer.length - 1)) {
          break;
        }
        const line = buffer.slice(0, end);
        buffer = buffer.slice(buffer.startsWith("\r\n", end) ? end + 2 : end + 1);
        if (line === "") {
          if (data.length > 0) {
            yield { event: event || "message", data: data.join("\n"), id };
          }
          event = "";
          data = [];
          id = undefined;
          continue;
        }
        if (line.startsWith(":")) {
          continue;
        }
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? "" : line.slice(colon + 1);
        if (val.startsWith(" ")) {
          val = val.slice(1);
        }
        switch (field) {
          case "event":
            event = val;
            break;
          case "data":
            data.push(val);
            break;
          case "id":
            if (!val.includes("\0")) {
              id = val;
            }
            break;
        }
      }
    }
  } finally {
    if (!finished) {
      await reader.cancel().catch(() => {});
    }
    reader.releaseLock();
  }
}
