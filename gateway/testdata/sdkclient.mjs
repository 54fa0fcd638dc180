// A host for the gateway's tests, made of the official MCP TypeScript SDK's
// client: it connects (stdio: the command after "stdio"; HTTP: the URL and
// bearer token after "http"), then reads one JSON command a line on stdin
// and writes one JSON line per answer and per notification on stdout.
//
// Environment: SDK_DIR is the SDK package's directory; ELICIT, when set
// (accept, decline or cancel), declares the elicitation capability and
// answers every elicitation so, with ELICIT_CONTENT (JSON) as the content.
import { pathToFileURL } from "node:url";
import { createInterface } from "node:readline";

const sdk = process.env.SDK_DIR;
const load = (p) => import(pathToFileURL(`${sdk}/dist/esm/${p}`).href);
const { Client } = await load("client/index.js");
const types = await load("types.js");

const out = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

const [mode, ...rest] = process.argv.slice(2);
let transport;
if (mode === "stdio") {
  const { StdioClientTransport } = await load("client/stdio.js");
  transport = new StdioClientTransport({ command: rest[0], args: rest.slice(1), env: process.env, stderr: "inherit" });
} else if (mode === "http") {
  const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
  const headers = rest[1] ? { Authorization: `Bearer ${rest[1]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(rest[0]), { requestInit: { headers } });
} else {
  throw new Error(`mode ${mode}: want stdio or http`);
}

const elicit = process.env.ELICIT;
const capabilities = elicit ? { elicitation: {} } : {};
const client = new Client({ name: "sdk-test-host", version: "1.0.0" }, { capabilities });
client.setNotificationHandler(types.ToolListChangedNotificationSchema, () => out({ event: "tools_changed" }));
client.setNotificationHandler(types.ResourceListChangedNotificationSchema, () => out({ event: "resources_changed" }));
client.setNotificationHandler(types.PromptListChangedNotificationSchema, () => out({ event: "prompts_changed" }));
if (elicit) {
  client.setRequestHandler(types.ElicitRequestSchema, (req) => {
    out({ event: "elicitation", message: req.params.message, schema: req.params.requestedSchema ?? null });
    const content = process.env.ELICIT_CONTENT ? JSON.parse(process.env.ELICIT_CONTENT) : {};
    return elicit === "accept" ? { action: "accept", content } : { action: elicit };
  });
}

try {
  await client.connect(transport);
} catch (e) {
  out({ op: "connect", error: String(e?.message ?? e) });
  process.exit(1);
}
out({ op: "connect", server: client.getServerVersion(), instructions: client.getInstructions() ?? "", capabilities: client.getServerCapabilities() ?? {} });

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  if (!line.trim()) continue;
  const cmd = JSON.parse(line);
  try {
    switch (cmd.op) {
      case "list": {
        const r = await client.listTools();
        out({ op: "list", tools: r.tools });
        break;
      }
      case "call": {
        const opts = {};
        if (cmd.progress) opts.onprogress = (p) => out({ event: "progress", progress: p.progress, total: p.total, message: p.message });
        const r = await client.callTool({ name: cmd.name, arguments: cmd.args ?? {} }, undefined, opts);
        out({ op: "call", result: r });
        break;
      }
      case "abortAfterProgress": {
        // Cancels the call at its first progress notice.
        const ac = new AbortController();
        const opts = {
          signal: ac.signal,
          onprogress: (p) => {
            out({ event: "progress", progress: p.progress, total: p.total, message: p.message });
            ac.abort("the host cancelled");
          },
        };
        const r = await client.callTool({ name: cmd.name, arguments: cmd.args ?? {} }, undefined, opts);
        out({ op: "abortAfterProgress", result: r });
        break;
      }
      case "resources": {
        const r = await client.listResources();
        const t = await client.listResourceTemplates();
        out({ op: "resources", resources: r.resources, templates: t.resourceTemplates });
        break;
      }
      case "read":
        out({ op: "read", result: await client.readResource({ uri: cmd.uri }) });
        break;
      case "prompts":
        out({ op: "prompts", prompts: (await client.listPrompts()).prompts });
        break;
      case "prompt":
        out({ op: "prompt", result: await client.getPrompt({ name: cmd.name, arguments: cmd.args ?? {} }) });
        break;
      case "complete":
        out({ op: "complete", result: await client.complete({ ref: cmd.ref, argument: cmd.argument, context: cmd.context }) });
        break;
      case "close":
        await client.close();
        out({ op: "close" });
        process.exit(0);
      default:
        out({ op: cmd.op, error: `unknown op ${cmd.op}` });
    }
  } catch (e) {
    out({ op: cmd.op, error: String(e?.message ?? e) });
  }
}
await client.close();
