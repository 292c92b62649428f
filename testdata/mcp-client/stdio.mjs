// The TypeScript SDK as a local MCP client starts a stdio server, as
// desktop agents do: node stdio.mjs <command> [args...]. The command gets
// this process's PLINTH_* variables (PLINTH_URL, PLINTH_API_KEY); its
// stderr is this process's. It lists the tools, then calls
// generate_blog_post with onprogress, which makes the SDK send a numeric
// progress token, and prints one JSON object: the token as sent, the
// progress notifications received and the ended job.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
if (!command) {
  console.error("usage: node stdio.mjs <command> [args...]");
  process.exit(2);
}
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("PLINTH_")));
const transport = new StdioClientTransport({ command, args, env, stderr: "inherit" });

// The progress token the SDK puts in the call, as it goes out.
let token;
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  if (message.method === "tools/call") {
    token = message.params?._meta?.progressToken;
  }
  return send(message, options);
};

const client = new Client({ name: "plinth-node-stdio-test", version: "1.0.0" });
await client.connect(transport);
const { tools } = await client.listTools();
const progress = [];
const result = await client.callTool(
  { name: "generate_blog_post", arguments: { topic: "Sourdough at home", language_code: "en" } },
  undefined,
  { onprogress: (p) => progress.push(p), timeout: 60_000 },
);
await client.close();
console.log(JSON.stringify({
  server: client.getServerVersion(),
  tools: tools.length,
  token: { type: typeof token, value: token },
  progress,
  isError: result.isError ?? false,
  job: result.structuredContent,
  text: result.isError ? result.content.map((c) => c.text).join("\n") : undefined,
}));
