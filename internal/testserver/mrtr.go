package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The 2026-07-28 revision has no requests of the server's: a server asks
// for input by answering the client's request with input_required
// (multi round-trip requests, SEP-2322) and gets the answers on the
// client's retry. For a request of that revision (--modern) the tools of
// --ask and --client-requests ask so; for older ones they send the
// requests as before.

// AskState is the requestState of the first round of the ask tools and of
// ask_twice on a 2026-07-28 request. It holds what a client might be
// tempted to re-encode (quotes, a backslash, HTML characters, non-ASCII,
// a JSON look-alike): a retry that does not carry it back exactly is
// answered with an error result naming the state it got.
const AskState = `{"round":1,"note":"<&> \"quoted\" \\ é ☃"}`

// askTwiceState is ask_twice's requestState after the first answer.
const askTwiceState = `round-2`

// inputKey is the key of the one input request of the ask tools.
const inputKey = "answer"

// modernRequest reports whether the request being handled is of the
// 2026-07-28 revision.
func modernRequest(ctx context.Context) bool {
	return mcp.IsModernProtocol(server.RequestProtocolVersion(ctx))
}

// askInput answers a 2026-07-28 call of a tool that asks for one input:
// the first attempt (no inputResponses) gets input_required with ask and
// AskState; a retry must carry AskState back and the answer under
// inputKey, which done turns into the result.
func askInput(req mcp.CallToolRequest, ask func(*server.InputRequestBuilder) *server.InputRequestBuilder,
	done func(mcp.InputResponses) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	p := req.Params
	if p.InputResponses == nil {
		return ask(server.NewInputRequestBuilder(AskState)).ToolResult(), nil
	}
	if p.RequestState != AskState {
		return mcp.NewToolResultError(fmt.Sprintf("requestState was not echoed: got %q", p.RequestState)), nil
	}
	if _, ok := p.InputResponses[inputKey]; !ok {
		return mcp.NewToolResultError("the retry carries no answer for " + inputKey), nil
	}
	return done(p.InputResponses)
}

// elicitInput is the ask tools' 2026-07-28 form: one elicitation.
func elicitInput(req mcp.CallToolRequest, params mcp.ElicitationParams) (*mcp.CallToolResult, error) {
	return askInput(req, func(b *server.InputRequestBuilder) *server.InputRequestBuilder { return b.Elicit(inputKey, params) },
		func(r mcp.InputResponses) (*mcp.CallToolResult, error) {
			res := server.ElicitationResponse(r, inputKey)
			if res == nil {
				return mcp.NewToolResultError("the answer is not an elicitation result"), nil
			}
			return elicitResult(res, nil)
		})
}

// handleAskTwice is ask_twice {}: on a 2026-07-28 request two rounds of
// input — a form (AskForm), then, with the name answered, a confirmation
// (a boolean "ok") — and the result "<name>: <ok>". The second round
// carries a requestState of its own, checked as the first.
func handleAskTwice(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if !modernRequest(ctx) {
		return mcp.NewToolResultError("ask_twice asks through input_required: call it on a 2026-07-28 session"), nil
	}
	p := req.Params
	form := mcp.ElicitationParams{Mode: mcp.ElicitationModeForm, Message: "Who are you?", RequestedSchema: json.RawMessage(AskForm)}
	if p.RequestState != askTwiceState {
		return askInput(req, func(b *server.InputRequestBuilder) *server.InputRequestBuilder { return b.Elicit(inputKey, form) },
			func(r mcp.InputResponses) (*mcp.CallToolResult, error) {
				first := server.ElicitationResponse(r, inputKey)
				if first == nil || first.Action != mcp.ElicitationResponseActionAccept {
					return mcp.NewToolResultText("not answered"), nil
				}
				name, _ := contentField(first, "name").(string)
				confirm := mcp.ElicitationParams{Mode: mcp.ElicitationModeForm, Message: "Are you sure, " + name + "?",
					RequestedSchema: json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean","default":true}}}`)}
				// The name travels in the key, as a stateless server keeps it.
				return server.NewInputRequestBuilder(askTwiceState).Elicit("confirm:"+name, confirm).ToolResult(), nil
			})
	}
	for key := range p.InputResponses {
		if name, ok := strings.CutPrefix(key, "confirm:"); ok {
			res := server.ElicitationResponse(p.InputResponses, key)
			if res == nil {
				return mcp.NewToolResultError("the answer is not an elicitation result"), nil
			}
			ok, _ := contentField(res, "ok").(bool)
			return mcp.NewToolResultText(fmt.Sprintf("%s: %t", name, ok)), nil
		}
	}
	return mcp.NewToolResultError("the second round carries no confirmation"), nil
}

// handleAskPrompt is the prompt "ask" of --ask --prompts: on a 2026-07-28
// request it asks for a form (AskForm) first and greets the name given.
func handleAskPrompt(ctx context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if !modernRequest(ctx) {
		return nil, fmt.Errorf("the prompt ask asks through input_required: get it on a 2026-07-28 session")
	}
	p := req.Params
	form := mcp.ElicitationParams{Mode: mcp.ElicitationModeForm, Message: "Whom should the prompt greet?", RequestedSchema: json.RawMessage(AskForm)}
	if p.InputResponses == nil {
		return server.NewInputRequestBuilder(AskState).Elicit(inputKey, form).PromptResult(), nil
	}
	if p.RequestState != AskState {
		return nil, fmt.Errorf("requestState was not echoed: got %q", p.RequestState)
	}
	res := server.ElicitationResponse(p.InputResponses, inputKey)
	if res == nil || res.Action != mcp.ElicitationResponseActionAccept {
		return mcp.NewGetPromptResult("Nobody to greet.", nil), nil
	}
	name, _ := contentField(res, "name").(string)
	return mcp.NewGetPromptResult("A greeting.", []mcp.PromptMessage{
		mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Hello, "+name+"!")),
	}), nil
}

// contentField is the field key of an elicitation's content (nil when it
// has none: a decline, a cancel, or content that is not an object).
func contentField(res *mcp.ElicitationResult, key string) any {
	c, _ := res.Content.(map[string]any)
	return c[key]
}
