// A real MCP server of the TypeScript SDK 2.x (@modelcontextprotocol/server,
// pinned in package.json) over stdio, for end-to-end tests of multi
// round-trip requests. Its tool book_table asks the client for the number of
// guests with an elicitation form: on the 2026-07-28 revision as an
// input_required result (SEP-2322) answered by a retry, on 2025-11-25 through
// the SDK's legacy shim as an elicitation/create request. where_am_i asks for
// the client's roots the same way; echo answers at once (make bench compares
// a call on each revision with it). Started by tests as
//
//	node testdata/npm/mrtr-server.mjs
import { McpServer, inputRequired, acceptedContent } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";
import * as z from "zod";

// serveStdio decides the era from the first message: a client that asks
// server/discover is served 2026-07-28, one that sends initialize 2025-11-25.
serveStdio(() => {
const server = new McpServer({ name: "mrtr-server", version: "1.0.0" });

server.registerTool(
	"book_table",
	{
		description: "Book a table; asks how many guests",
		inputSchema: z.object({ date: z.string() }),
	},
	async ({ date }, ctx) => {
		const responses = ctx.mcpReq.inputResponses;
		const details = acceptedContent(responses, "details");
		if (details === undefined) {
			// Declined or cancelled: the answer is there, without content.
			const answer = responses?.details;
			if (answer && typeof answer === "object" && answer.action !== "accept") {
				return { content: [{ type: "text", text: `not booked: ${answer.action}` }] };
			}
			return inputRequired({
				inputRequests: {
					details: inputRequired.elicit({
						message: `How many guests on ${date}?`,
						requestedSchema: {
							type: "object",
							properties: { guests: { type: "integer", minimum: 1, title: "Guests" } },
							required: ["guests"],
						},
					}),
				},
				requestState: `date=${date}`,
			});
		}
		// On 2026-07-28 the retry must echo the state exactly; the legacy shim
		// of 2025-11-25 keeps it on the server.
		const state = typeof ctx.mcpReq.requestState === "function" ? ctx.mcpReq.requestState() : undefined;
		if (state !== undefined && state !== `date=${date}`) {
			return { content: [{ type: "text", text: `requestState came back as ${JSON.stringify(state)}` }], isError: true };
		}
		return { content: [{ type: "text", text: `booked for ${details.guests} on ${date}` }] };
	},
);

server.registerTool(
	"echo",
	{ description: "Echoes its text (for the revision cost benchmark)", inputSchema: z.object({ text: z.string() }) },
	async ({ text }) => ({ content: [{ type: "text", text }] }),
);

server.registerTool(
	"where_am_i",
	{ description: "Lists the client's roots", inputSchema: z.object({}) },
	async (_args, ctx) => {
		const roots = ctx.mcpReq.inputResponses?.roots;
		if (roots === undefined) {
			return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
		}
		const list = (roots.roots ?? []).map((r) => r.uri).join(" ");
		return { content: [{ type: "text", text: `roots: ${list || "none"}` }] };
	},
);

return server;
});
