// Auto-pagination over the API's lists: {data, has_more, next_cursor},
// the next page asked for with ?cursor= (decisions.md, Requests and
// errors; limit 1..100, default 20).
import type { Client, FetchOptions } from "openapi-fetch";
import { ProblemError } from "./problem.js";

/** A page of a list, as every list route answers it. */
interface ListPage<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

// The GET operation of a path, never when it has none.
type GetOf<P, Path extends keyof P> = P[Path] extends { get: infer Op } ? Op : never;

// The JSON body of an operation's 200 answer.
type OkBody<Op> = Op extends { responses: { 200: { content: { "application/json": infer Body } } } } ? Body : never;

// Whether an operation's query takes a cursor (a query of never takes nothing).
type TakesCursor<Op> = Op extends { parameters: { query?: infer Q } }
  ? [NonNullable<Q>] extends [never]
    ? false
    : "cursor" extends keyof NonNullable<Q>
      ? true
      : false
  : false;

// Whether an operation answers a page of a list and takes a cursor. (never
// is checked first: it would pass every test.)
type IsList<Op> = [Op] extends [never]
  ? false
  : [OkBody<Op>] extends [never]
    ? false
    : OkBody<Op> extends ListPage<unknown>
      ? TakesCursor<Op>
      : false;

/** ListPath is a path of P whose GET answers a page of a list and takes a cursor: what paginate accepts. */
export type ListPath<P> = { [Path in keyof P]: IsList<GetOf<P, Path>> extends true ? Path : never }[keyof P];

/** ListItem is the type of one item of the list at path (Schemas["BlogPost"] for /v1/blog-posts). */
export type ListItem<P, Path extends keyof P> = OkBody<GetOf<P, Path>> extends ListPage<infer T> ? T : never;

// The keys of T that are not optional.
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];

/** PaginateOptions are a list's GET options: its query (limit is the page size; a cursor starts there), headers, signal. */
export type PaginateOptions<P, Path extends keyof P> = Omit<FetchOptions<GetOf<P, Path>>, "parseAs">;

// The options argument, required when the path has a required parameter.
type PaginateInit<P, Path extends keyof P> = RequiredKeys<PaginateOptions<P, Path>> extends never
  ? [init?: PaginateOptions<P, Path>]
  : [init: PaginateOptions<P, Path>];

/** Paginator is what a client adds to openapi-fetch's methods. */
export interface Paginator<P> {
  /**
   * paginate yields every item of the list at path, in the list's order,
   * across as many pages as it has: each page asked for with the previous
   * one's next_cursor until has_more is false. init is the GET's options
   * (params.query.limit is the page size). A refusal throws ProblemError;
   * leaving the loop early asks for no further page.
   */
  paginate<Path extends ListPath<P>>(path: Path, ...init: PaginateInit<P, Path>): AsyncGenerator<ListItem<P, Path>, void, undefined>;
}

// GetPage is the client's GET, seen from paginate, which builds its own
// options and reads the list's envelope only.
type GetPage = (path: string, init: Record<string, unknown>) => Promise<{ data?: ListPage<unknown>; error?: unknown; response: Response }>;

interface LooseInit {
  params?: { query?: Record<string, unknown> } & Record<string, unknown>;
  [option: string]: unknown;
}

/** withPaginate adds paginate to client. */
export function withPaginate<P extends {}>(client: Client<P>): Client<P> & Paginator<P> {
  const get = client.GET as unknown as GetPage;
  async function* paginate(path: string, init: LooseInit = {}): AsyncGenerator<unknown, void, undefined> {
    const params = init.params ?? {};
    let query = params.query;
    for (;;) {
      const { data, error, response } = await get(path, { ...init, params: { ...params, query } });
      if (error !== undefined || data === undefined) {
        throw new ProblemError(response.status, error);
      }
      yield* data.data;
      if (!data.has_more) {
        return;
      }
      if (!data.next_cursor) {
        throw new Error(`GET ${path}: has_more without a next_cursor`);
      }
      query = { ...query, cursor: data.next_cursor };
    }
  }
  return Object.assign(client, { paginate }) as unknown as Client<P> & Paginator<P>;
}
