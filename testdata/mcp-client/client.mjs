// A second MCP client, the official TypeScript SDK, against Plinth's
// Streamable HTTP server: node client.mjs <base url> <API key> <content key>.
// It prints one JSON object: the tools it listed, get_content's result, and
// set_content's with flat arguments (the path parameter and the body's
// fields side by side), then without its required value.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [base, apiKey, contentKey] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(base + "/v1/mcp"), {
  requestInit: { headers: { Authorization: "Bearer " + apiKey } },
});
const client = new Client({ name: "plinth-node-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
// callTool validates structuredContent against the tool's outputSchema.
const got = await client.callTool({ name: "get_content", arguments: { key: contentKey } });
const refused = await client.callTool({ name: "get_content", arguments: { key: "no.such.key" } });
const set = await client.callTool({ name: "set_content", arguments: { key: "node.title", value: "Set from Node", lang: "en" } });
const invalid = await client.callTool({ name: "set_content", arguments: { key: "node.title" } });
await client.close();
console.log(JSON.stringify({
  server: client.getServerVersion(),
  tools: tools.map((t) => ({ name: t.name, inputType: t.inputSchema.type, outputType: t.outputSchema?.type, annotations: t.annotations })),
  content: got.structuredContent,
  isError: got.isError ?? false,
  missing: { isError: refused.isError ?? false, text: refused.content.map((c) => c.text).join("\n") },
  set: { isError: set.isError ?? false, content: set.structuredContent },
  invalid: { isError: invalid.isError ?? false, text: invalid.content.map((c) => c.text).join("\n") },
}));
