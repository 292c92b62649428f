// The contract's retry rule (api-v1.md, Errors, rule 3) and its
// Idempotency-Key, applied under openapi-fetch as a wrapped fetch: every
// request of a client goes through it, whatever path or method.

/** A fetch the clients can call: the global one, or one the caller supplies. */
export type FetchLike = (input: Request) => Promise<Response>;

/** At most this many attempts of one request, the first included. */
export const MAX_ATTEMPTS = 5;
/** No single wait between attempts is longer (ms). */
export const MAX_DELAY_MS = 30_000;
/** The first backoff window (ms); it doubles with each attempt. */
export const BASE_DELAY_MS = 500;

// The statuses the contract says to retry: rate limited, and the server or
// its upstream failing. 400, 401, 403, 404, 409 and 422 answer the request
// itself and would answer a retry the same.
const retryStatuses = new Set([429, 500, 502, 503]);

// Methods that change something: they carry an Idempotency-Key so a retry
// after a lost answer replays the first outcome instead of repeating it.
const mutating = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * retryingFetch wraps base with the contract's retry rule: 429, 500, 502,
 * 503 and network errors are retried, up to retries more times (at most 4:
 * five attempts in all), waiting Retry-After when the server sends one,
 * else a full-jitter exponential backoff, never more than 30 s. An answer
 * whose Retry-After is longer than that is returned as it is. A POST, PUT,
 * PATCH or DELETE gets an Idempotency-Key (a UUID) unless it has one, the
 * same on every attempt.
 */
export function retryingFetch(base: FetchLike, retries: number = MAX_ATTEMPTS - 1): FetchLike {
  if (!Number.isInteger(retries) || retries < 0 || retries > MAX_ATTEMPTS - 1) {
    throw new RangeError(`retries must be an integer from 0 to ${MAX_ATTEMPTS - 1} (the contract allows ${MAX_ATTEMPTS} attempts), got ${retries}`);
  }
  const attempts = retries + 1;
  return async (input: Request): Promise<Response> => {
    const headers = new Headers(input.headers);
    if (mutating.has(input.method.toUpperCase()) && !headers.has("Idempotency-Key")) {
      headers.set("Idempotency-Key", uuid());
    }
    // Read once, so that every attempt sends the same bytes (a body
    // stream can be sent only once).
    const body = input.body === null ? undefined : await input.arrayBuffer();
    for (let attempt = 0; ; attempt++) {
      const request = new Request(input, { headers, body });
      const last = attempt + 1 >= attempts;
      let response: Response;
      try {
        response = await base(request);
      } catch (err) {
        // fetch rejects with a TypeError when the network fails; an abort
        // (or anything else) is the caller's and is not retried.
        if (last || input.signal?.aborted || !(err instanceof TypeError)) {
          throw err;
        }
        await sleep(backoff(attempt), input.signal);
        continue;
      }
      if (last || !retryStatuses.has(response.status)) {
        return response;
      }
      const wait = retryAfter(response.headers.get("Retry-After")) ?? backoff(attempt);
      if (wait > MAX_DELAY_MS) {
        // Honouring it would break the 30 s cap: the caller decides.
        return response;
      }
      await response.body?.cancel(); // frees the connection for the next attempt
      await sleep(wait, input.signal);
    }
  };
}

/** backoff is the full-jitter wait before retry n+1: uniform in [0, min(cap, base·2ⁿ)). */
export function backoff(attempt: number): number {
  return Math.random() * Math.min(MAX_DELAY_MS, BASE_DELAY_MS * 2 ** attempt);
}

/** retryAfter reads a Retry-After header (seconds or an HTTP date) as milliseconds; undefined when absent or unreadable. */
export function retryAfter(value: string | null): number | undefined {
  if (value === null || value.trim() === "") {
    return undefined;
  }
  if (/^\s*\d+\s*$/.test(value)) {
    return Number(value) * 1000;
  }
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** sleep waits ms, or rejects with the signal's reason when it aborts first. */
export function sleep(ms: number, signal?: AbortSignal | null): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** uuid returns a random (version 4) UUID, from crypto.randomUUID where the runtime has it. */
export function uuid(): string {
  if (typeof globalThis.crypto?.randomUUID === "function") {
    return globalThis.crypto.randomUUID();
  }
  // randomUUID exists only in secure contexts of browsers (https,
  // localhost); getRandomValues exists everywhere.
  const b = globalThis.crypto.getRandomValues(new Uint8Array(16));
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  const hex = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
