#!/usr/bin/env node
// plinth-mcp (npx @plinth/sdk): MCP over stdin/stdout for the clients that
// start a local command, forwarding every request to a Plinth server's
// Streamable HTTP endpoint, PLINTH_URL/v1/mcp, with PLINTH_API_KEY: what
// `plinth mcp` does, for a machine with Node and no Plinth binary. The
// remote server alone decides what the key may do; this process holds no
// tool of its own. Node only: it is not part of the library's entry.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import {
  CallToolRequestSchema,
  CallToolResultSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourcesResultSchema,
  ListResourceTemplatesRequestSchema,
  ListResourceTemplatesResultSchema,
  ListToolsRequestSchema,
  ListToolsResultSchema,
  McpError,
  ReadResourceRequestSchema,
  ReadResourceResultSchema,
  type ServerCapabilities,
} from "@modelcontextprotocol/sdk/types.js";

// The version this bridge names itself with to the remote server.
const VERSION = "0.1.0";

// A call's answer is awaited this long at most, each progress notification
// starting the wait again. The local client's own timeout governs: when it
// gives up it cancels, and the cancellation goes on to the remote server.
// This only ends a call nobody cancels and nothing answers.
const CALL_TIMEOUT_MS = 60 * 60_000;

async function main(): Promise<void> {
  const endpoint = mcpEndpoint(process.env.PLINTH_URL, process.env.PLINTH_API_KEY);
  // The key goes in a header of the transport's requests. The SDK's
  // redirect policy (same-origin, its default) follows a redirect only
  // within PLINTH_URL's origin: the key reaches no other server.
  const remote = new Client({ name: "plinth-mcp", version: VERSION });
  const http = new StreamableHTTPClientTransport(endpoint.url, {
    requestInit: { headers: { Authorization: `Bearer ${endpoint.key}` } },
  });
  try {
    await remote.connect(http);
  } catch (err) {
    throw new Error(`connecting to ${endpoint.url.href}: ${message(err)}`);
  }
  const caps = remote.getServerCapabilities() ?? {};
  const info = remote.getServerVersion();
  // The capabilities this bridge forwards, of those the server has.
  const capabilities: ServerCapabilities = {};
  if (caps.tools) {
    capabilities.tools = {};
  }
  if (caps.resources) {
    capabilities.resources = {};
  }
  const server = new Server(
    { name: info?.name ?? "plinth", title: info?.title, version: info?.version ?? VERSION },
    { capabilities, instructions: remote.getInstructions() },
  );

  if (caps.tools) {
    server.setRequestHandler(ListToolsRequestSchema, (request, extra) =>
      forward(() => remote.request({ method: "tools/list", params: request.params }, ListToolsResultSchema, { signal: extra.signal })),
    );
    server.setRequestHandler(CallToolRequestSchema, (request, extra) => {
      // The remote call gets a token of this client's own; its progress
      // goes back under the token the local client chose (a string or a
      // number, as it sent it).
      const { _meta: meta, ...params } = request.params;
      const { progressToken, ...otherMeta } = meta ?? {};
      return forward(() =>
        remote.request({ method: "tools/call", params: { ...params, _meta: otherMeta } }, CallToolResultSchema, {
          signal: extra.signal,
          timeout: CALL_TIMEOUT_MS,
          resetTimeoutOnProgress: true,
          onprogress:
            progressToken === undefined
              ? undefined
              : (progress) => {
                  extra.sendNotification({ method: "notifications/progress", params: { ...progress, progressToken } }).catch(() => {
                    // the local client is gone: its call ends with it
                  });
                },
        }),
      );
    });
  }
  if (caps.resources) {
    server.setRequestHandler(ListResourcesRequestSchema, (request, extra) =>
      forward(() => remote.request({ method: "resources/list", params: request.params }, ListResourcesResultSchema, { signal: extra.signal })),
    );
    server.setRequestHandler(ListResourceTemplatesRequestSchema, (request, extra) =>
      forward(() =>
        remote.request({ method: "resources/templates/list", params: request.params }, ListResourceTemplatesResultSchema, { signal: extra.signal }),
      ),
    );
    server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
      forward(() => remote.request({ method: "resources/read", params: request.params }, ReadResourceResultSchema, { signal: extra.signal })),
    );
  }

  const stdio = new StdioServerTransport();
  const closed = new Promise<void>((resolve) => {
    server.onclose = resolve;
    // The SDK's stdio transport does not watch for the end of stdin: the
    // client closing it is the session's end.
    process.stdin.once("end", () => void server.close());
  });
  await server.connect(stdio);
  await closed;
  await remote.close();
}

/**
 * mcpEndpoint reads PLINTH_URL (the server's base address, without /v1)
 * and PLINTH_API_KEY as `plinth mcp` does.
 */
function mcpEndpoint(base: string | undefined, key: string | undefined): { url: URL; key: string } {
  if (!base || !key) {
    throw new Error("PLINTH_URL and PLINTH_API_KEY are required");
  }
  let url: URL;
  try {
    url = new URL(base.replace(/\/+$/, ""));
  } catch {
    throw new Error(`PLINTH_URL ${JSON.stringify(base)} is not an http or https URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`PLINTH_URL ${JSON.stringify(base)} is not an http or https URL`);
  }
  url.pathname = `${url.pathname.replace(/\/+$/, "")}/v1/mcp`;
  return { url, key };
}

/**
 * forward runs a request to the remote server. Its JSON-RPC error goes
 * back as it came (code, message, data); a failure to reach it (HTTP
 * 401, a dropped connection) becomes an internal error saying what
 * happened, since its HTTP status is no JSON-RPC code.
 */
async function forward<T>(request: () => Promise<T>): Promise<T> {
  try {
    return await request();
  } catch (err) {
    if (err instanceof McpError) {
      // McpError prefixes the message with its code; the local session's
      // McpError will again.
      throw new RemoteError(err.code, err.message.replace(`MCP error ${err.code}: `, ""), err.data);
    }
    throw new RemoteError(ErrorCode.InternalError, `plinth-mcp: ${message(err)}`);
  }
}

/** RemoteError is a JSON-RPC error to answer with: the server sends code, message and data as they are. */
class RemoteError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`plinth-mcp: ${message(err)}\n`);
    process.exit(1);
  },
);
