import type { components } from "./openapi.js";
import type { WebhookTopic } from "./topics.js";

type Schemas = components["schemas"];

/**
 * ContentChange is the data of content.changed: a content key's value in
 * one language, and the value it replaced (null when it had none).
 */
export interface ContentChange {
  key: string;
  lang: string;
  value: string;
  previous_value: string | null;
}

/**
 * ContentPublished is the data of content.published: an item a publish
 * made live (its type and id as the drafts of the content workflow name
 * it), the languages published (null: all) and the release that published
 * it (null: the item's own publish).
 */
export interface ContentPublished {
  type: "page" | "component" | "content_key" | "gallery" | "brand" | "blog_post";
  id: string;
  languages: string[] | null;
  release_id: number | null;
}

/**
 * WebhookData is the data each topic's event carries: the resource as its
 * GET showed it when the event happened. Its keys are the topics of
 * src/topics.ts, checked below.
 */
export interface WebhookData {
  "blog_post.published": Schemas["BlogPost"];
  "blog_post.translated": Schemas["BlogPost"];
  "social_post.published": Schemas["SocialPost"];
  "social_post.failed": Schemas["SocialPost"];
  "order.created": Schemas["Order"];
  "order.paid": Schemas["Order"];
  "order.fulfilled": Schemas["Order"];
  "order.cancelled": Schemas["Order"];
  "order.refunded": Schemas["Order"];
  "booking.confirmed": Schemas["Booking"];
  "booking.cancelled": Schemas["Booking"];
  "booking.completed": Schemas["Booking"];
  "content.changed": ContentChange;
  "content.published": ContentPublished;
  "image.generated": Schemas["Image"];
  "connect.account_updated": Schemas["PaymentsConnect"];
}

export { webhookTopics } from "./topics.js";
export type { WebhookTopic };

// Fails to compile unless WebhookData has exactly the topics of the
// contract (src/topics.ts, generated from the server's list) as keys: a
// topic the server gains needs its data type here, and a topic it drops
// goes.
type SameKeys<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const dataOfEveryTopic: SameKeys<keyof WebhookData, WebhookTopic> = true;
void dataOfEveryTopic;

/**
 * WebhookEvent is the envelope of a delivery, narrowed by its type: after
 * `if (event.type === "order.paid")`, event.data is an Order.
 */
export type WebhookEvent<T extends WebhookTopic = WebhookTopic> = {
  [K in T]: {
    /** The event id (evt_…); a redelivery carries the same. */
    id: string;
    type: K;
    /** When the event happened, Unix seconds. */
    created: number;
    data: WebhookData[K];
  };
}[T];

/** Options of verifyWebhook. */
export interface VerifyWebhookOptions {
  /** The raw request body, exactly as received (verify before any JSON parsing). */
  payload: string | ArrayBuffer | Uint8Array;
  /** The X-Service-Signature header. */
  header: string | null | undefined;
  /** The endpoint's signing secret (whsec_…). */
  secret: string;
  /** How far the signed timestamp may be from now, either way (default 300 s, the contract's). */
  toleranceSeconds?: number;
}

/** Why verifyWebhook refused a delivery. */
export type WebhookVerificationReason = "invalid_header" | "no_match" | "stale" | "invalid_payload";

/** WebhookVerificationError: the delivery is not Plinth's, is altered, or is too old; answer 400. */
export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
  readonly reason: WebhookVerificationReason;

  constructor(reason: WebhookVerificationReason, message: string) {
    super(message);
    this.reason = reason;
  }
}

/** The header carrying a delivery's signature. */
export const SIGNATURE_HEADER = "X-Service-Signature";

const encoder = new TextEncoder();

/**
 * verifyWebhook checks a delivery's X-Service-Signature ("t=<unix>,v1=<hex>",
 * the HMAC-SHA256 under secret of "<t>.<raw body>") and returns the parsed
 * event. Any v1 entry may match (two while a rotated secret is in its
 * window); each is checked by WebCrypto's constant-time verify, so it runs
 * in browsers, Deno and edge runtimes. Unknown entries (v2, …) are ignored.
 * It throws WebhookVerificationError when the header is malformed, no v1
 * matches, the timestamp is more than toleranceSeconds from now, or the
 * body is not an event.
 */
export async function verifyWebhook(options: VerifyWebhookOptions): Promise<WebhookEvent> {
  const { payload, header, secret, toleranceSeconds = 300 } = options;
  let ts: string | undefined;
  const signatures: Uint8Array<ArrayBuffer>[] = [];
  for (const part of (header ?? "").split(",")) {
    const eq = part.indexOf("=");
    if (eq < 0) {
      continue;
    }
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1);
    if (key === "t") {
      if (ts !== undefined) {
        throw new WebhookVerificationError("invalid_header", "X-Service-Signature has two timestamps");
      }
      ts = value;
    } else if (key === "v1") {
      const sig = fromHex(value);
      if (sig) {
        signatures.push(sig);
      }
    }
  }
  if (ts === undefined || !/^\d+$/.test(ts) || signatures.length === 0) {
    throw new WebhookVerificationError("invalid_header", "X-Service-Signature is missing or has no t or no v1 entry");
  }
  if (!secret) {
    throw new TypeError("verifyWebhook: secret is required");
  }
  const body: Uint8Array = typeof payload === "string" ? encoder.encode(payload) : payload instanceof Uint8Array ? payload : new Uint8Array(payload);
  const prefix = encoder.encode(`${ts}.`);
  const signed = new Uint8Array(prefix.length + body.length);
  signed.set(prefix);
  signed.set(body, prefix.length);
  const key = await crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["verify"]);
  let match = false;
  for (const sig of signatures) {
    // Every entry is checked, matched or not, so the time taken does not
    // tell which one matched.
    const ok = await crypto.subtle.verify("HMAC", key, sig, signed);
    match = ok || match;
  }
  if (!match) {
    throw new WebhookVerificationError("no_match", "no v1 signature matches the body under this secret");
  }
  const age = Math.floor(Date.now() / 1000) - Number(ts);
  if (Math.abs(age) > toleranceSeconds) {
    throw new WebhookVerificationError("stale", `the signature's timestamp is ${age} s from now, beyond ${toleranceSeconds} s`);
  }
  let event: unknown;
  try {
    event = JSON.parse(typeof payload === "string" ? payload : new TextDecoder().decode(body));
  } catch {
    throw new WebhookVerificationError("invalid_payload", "the body is not JSON");
  }
  const e = event as Record<string, unknown> | null;
  if (typeof e !== "object" || e === null || typeof e.id !== "string" || typeof e.type !== "string" || typeof e.created !== "number" || !("data" in e)) {
    throw new WebhookVerificationError("invalid_payload", "the body is not an event {id, type, created, data}");
  }
  return event as WebhookEvent;
}

// fromHex decodes a lowercase or uppercase hex HMAC-SHA256 (32 bytes);
// undefined for anything else, which then matches nothing.
function fromHex(s: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[0-9a-fA-F]{64}$/.test(s)) {
    return undefined;
  }
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) {
    out[i] = parseInt(s.slice(2 * i, 2 * i + 2), 16);
  }
  return out;
}
