import createFetchClient, { type Client } from "openapi-fetch";
import type { paths } from "./openapi.js";
import { withPaginate, type Paginator } from "./paginate.js";
import { retryingFetch, type FetchLike } from "./retry.js";

/** The paths of the API, as openapi-typescript generated them from the OpenAPI document. */
export type Paths = paths;

/** The paths of the keyless public surface, /v1/public/*. */
export type PublicPaths = {
  [P in keyof paths as P extends `/v1/public/${string}` ? P : never]: paths[P];
};

/** A client of the whole API, authenticated with a project's secret API key: openapi-fetch's methods and paginate. */
export type PlinthClient = Client<Paths> & Paginator<Paths>;

/** A client of /v1/public/* only: it holds no key, so it is safe in a browser. */
export type PlinthPublicClient = Client<PublicPaths> & Paginator<PublicPaths>;

/** Options of createClient. */
export interface ClientOptions {
  /** The Plinth host, e.g. https://api.example.com (a trailing /v1 is dropped: the paths carry it). */
  baseUrl: string;
  /** A project API key (pln_live_… or pln_test_…). Secret: use this client on a server only. */
  apiKey: string;
  /** The fetch to send with; globalThis.fetch by default. */
  fetch?: FetchLike;
  /** How many times a failed request is retried, 0 to 4 (default 4: five attempts, the contract's cap). */
  retries?: number;
}

/** Options of createPublicClient. */
export interface PublicClientOptions {
  /** The Plinth host, e.g. https://api.example.com (a trailing /v1 is dropped: the paths carry it). */
  baseUrl: string;
  /** The project's id (prj_…), sent as X-Service-Project-Key; it is not a secret. */
  projectId: string;
  /** The fetch to send with; globalThis.fetch by default. */
  fetch?: FetchLike;
  /** How many times a failed request is retried, 0 to 4 (default 4). */
  retries?: number;
}

/**
 * createClient returns an openapi-fetch client of the whole API for
 * server-side use: every request carries the key as a bearer token, is
 * retried by the contract's rule (429, 500, 502, 503 and network errors;
 * Retry-After honoured) and, when it writes, carries an Idempotency-Key
 * kept across its retries. paginate iterates over a list's every item.
 */
export function createClient(options: ClientOptions): PlinthClient {
  if (!options.apiKey) {
    throw new TypeError("createClient: apiKey is required (use createPublicClient for the keyless /v1/public/* surface)");
  }
  return withPaginate(
    createFetchClient<Paths>({
      baseUrl: host(options.baseUrl),
      headers: { Authorization: `Bearer ${options.apiKey}` },
      fetch: retryingFetch(options.fetch ?? defaultFetch, options.retries),
    }),
  );
}

/**
 * createPublicClient returns an openapi-fetch client of /v1/public/*
 * (published content, pages, posts, products, forms): it names the project
 * with X-Service-Project-Key and holds no key, so a browser may use it. It
 * retries as createClient does.
 */
export function createPublicClient(options: PublicClientOptions): PlinthPublicClient {
  if (!options.projectId) {
    throw new TypeError("createPublicClient: projectId is required");
  }
  return withPaginate(
    createFetchClient<PublicPaths>({
      baseUrl: host(options.baseUrl),
      headers: { "X-Service-Project-Key": options.projectId },
      fetch: retryingFetch(options.fetch ?? defaultFetch, options.retries),
    }),
  );
}

// Looked up at each call, not when the client is made, so a fetch installed
// later (a test's, a framework's) is the one used.
const defaultFetch: FetchLike = (request) => globalThis.fetch(request);

// host drops a trailing slash and /v1: the contract's base address ends in
// /v1, while the document's paths begin with it.
function host(baseUrl: string): string {
  if (!baseUrl) {
    throw new TypeError("baseUrl is required, e.g. https://api.example.com");
  }
  return baseUrl.replace(/\/+$/, "").replace(/\/v1$/, "");
}
