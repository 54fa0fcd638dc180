package testserver

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The fixture's multi round-trip (SEP-2322) tools and prompt, as the
// reference everything-server answers the suite's input-required-result-*
// scenarios: the same names, input keys, questions, requestState shapes
// and texts. A request that predates 2026-07-28 is served by mcp-go's
// bridge, which asks the old server-initiated requests instead.

// errTamperedState refuses a requestState that fails its integrity check.
var errTamperedState = errors.New("requestState integrity check failed")

// mrtrSigner signs the requestState of the tampered-state and capabilities
// tools under a key of the process's, as the reference server does.
type mrtrSigner struct{ key []byte }

func newMRTRSigner() mrtrSigner {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read does not fail
	return mrtrSigner{key: key}
}

// sign is payload as {"data":<payload JSON>,"hmac":<hex HMAC-SHA256>}.
func (m mrtrSigner) sign(payload map[string]any) string {
	data, _ := json.Marshal(payload)
	b, _ := json.Marshal(map[string]string{"data": string(data), "hmac": m.mac(data)})
	return string(b)
}

func (m mrtrSigner) mac(data []byte) string {
	h := hmac.New(sha256.New, m.key)
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// verify is the payload of a state sign made; nil when it does not verify.
func (m mrtrSigner) verify(raw string) map[string]any {
	var s struct{ Data, HMAC string }
	if json.Unmarshal([]byte(raw), &s) != nil || !hmac.Equal([]byte(s.HMAC), []byte(m.mac([]byte(s.Data)))) {
		return nil
	}
	var p map[string]any
	if json.Unmarshal([]byte(s.Data), &p) != nil {
		return nil
	}
	return p
}

// nonceState is a requestState {"kind":…,"nonce":…} plus extra.
func nonceState(kind string, extra map[string]any) string {
	p := map[string]any{"nonce": rand.Text()}
	if kind != "" {
		p["kind"] = kind
	}
	for k, v := range extra {
		p[k] = v
	}
	b, _ := json.Marshal(p)
	return string(b)
}

// inputText is the string field of an elicitation answer's content
// ("unknown" when absent), as the reference server reads it.
func inputText(r mcp.InputResponses, key, field string) string {
	if e := server.ElicitationResponse(r, key); e != nil {
		if m, ok := e.Content.(map[string]any); ok {
			if s, ok := m[field].(string); ok {
				return s
			}
		}
	}
	return "unknown"
}

func stringForm(field string) mcp.ElicitationParams {
	return mcp.ElicitationParams{RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{field: map[string]any{"type": "string"}}, "required": []string{field}}}
}

func confirmForm() mcp.ElicitationParams {
	return mcp.ElicitationParams{Message: "Please confirm", RequestedSchema: map[string]any{"type": "object",
		"properties": map[string]any{"ok": map[string]any{"type": "boolean"}}, "required": []string{"ok"}}}
}

func question(message string, p mcp.ElicitationParams) mcp.ElicitationParams {
	p.Message = message
	return p
}

func samplingQuestion(text string, maxTokens int) mcp.CreateMessageParams {
	return mcp.CreateMessageParams{Messages: []mcp.SamplingMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent(text)}}, MaxTokens: maxTokens}
}

// addConformanceMRTR registers the multi round-trip tools and prompt.
func (s *Server) addConformanceMRTR() {
	signer := newMRTRSigner()
	tool := func(name, description string, h server.ToolHandlerFunc) server.ServerTool {
		return server.ServerTool{Tool: mcp.NewTool(name, mcp.WithDescription(description)), Handler: h}
	}
	text := mcp.NewToolResultText
	s.mcp.AddTools(
		tool("test_input_required_result_elicitation", "MRTR: returns InputRequiredResult with elicitation request",
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if _, ok := req.Params.InputResponses["user_name"]; ok {
					return text(fmt.Sprintf("Hello, %s!", inputText(req.Params.InputResponses, "user_name", "name"))), nil
				}
				return server.NewInputRequestBuilder("").Elicit("user_name", question("What is your name?", stringForm("name"))).ToolResult(), nil
			}),
		tool("test_input_required_result_sampling", "MRTR: returns InputRequiredResult with sampling request",
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if _, ok := req.Params.InputResponses["sample_request"]; ok {
					answer := "no response"
					if r := server.SamplingResponse(req.Params.InputResponses, "sample_request"); r != nil {
						if t, ok := r.Content.(mcp.TextContent); ok {
							answer = t.Text
						}
					}
					return text("Sampling result: " + answer), nil
				}
				return server.NewInputRequestBuilder("").Sample("sample_request", samplingQuestion("What is the capital of France?", 100)).ToolResult(), nil
			}),
		tool("test_input_required_result_list_roots", "MRTR: returns InputRequiredResult with roots/list request",
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				if _, ok := req.Params.InputResponses["roots_request"]; ok {
					n := 0
					if r := server.RootsResponse(req.Params.InputResponses, "roots_request"); r != nil {
						n = len(r.Roots)
					}
					return text(fmt.Sprintf("Found %d root(s)", n)), nil
				}
				return server.NewInputRequestBuilder("").Roots("roots_request").ToolResult(), nil
			}),
		tool("test_input_required_result_request_state", "MRTR: returns InputRequiredResult with requestState",
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				p := req.Params
				if _, ok := p.InputResponses["confirm"]; ok && p.RequestState != "" {
					var st struct{ Kind string }
					e := server.ElicitationResponse(p.InputResponses, "confirm")
					if json.Unmarshal([]byte(p.RequestState), &st) == nil && st.Kind == "request-state" && e != nil {
						if m, ok := e.Content.(map[string]any); ok && m["ok"] == true {
							return text("state-ok: requestState validated"), nil
						}
					}
				}
				return server.NewInputRequestBuilder(nonceState("request-state", nil)).Elicit("confirm", confirmForm()).ToolResult(), nil
			}),
		tool("test_input_required_result_multiple_inputs", "MRTR: returns InputRequiredResult with multiple input requests",
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				p := req.Params
				_, a := p.InputResponses["user_name"]
				_, b := p.InputResponses["greeting"]
				_, c := p.InputResponses["client_roots"]
				var st struct{ Kind string }
				if a && b && c && json.Unmarshal([]byte(p.RequestState), &st) == nil && st.Kind == "multiple-inputs" {
					greeting := "Hello there!"
					if r := server.SamplingResponse(p.InputResponses, "greeting"); r != nil {
						if t, ok := r.Content.(mcp.TextContent); ok {
							greeting = t.Text
						}
					}
					roots := 0
					if r := server.RootsResponse(p.InputResponses, "client_roots"); r != nil {
						roots = len(r.Roots)
					}
					return text(fmt.Sprintf("Name: %s; Greeting: %s; Roots: %d", inputText(p.InputResponses, "user_name", "name"), greeting, roots)), nil
				}
				return server.NewInputRequestBuilder(nonceState("multiple-inputs", nil)).
					Elicit("user_name", question("What is your name?", stringForm("name"))).
					Sample("greeting", samplingQuestion("Generate a greeting", 50)).
					Roots("client_roots").ToolResult(), nil
			}),
		tool("test_input_required_result_multi_round", "MRTR: multi-round InputRequiredResult workflow",
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				p := req.Params
				step1 := server.NewInputRequestBuilder(nonceState("", map[string]any{"round": 1})).
					Elicit("step1", question("Step 1: What is your name?", stringForm("name"))).ToolResult()
				var st struct {
					Round int
					Name  string
				}
				if p.RequestState == "" || json.Unmarshal([]byte(p.RequestState), &st) != nil {
					return step1, nil
				}
				if _, ok := p.InputResponses["step1"]; ok && st.Round == 1 {
					return server.NewInputRequestBuilder(nonceState("", map[string]any{"round": 2, "name": inputText(p.InputResponses, "step1", "name")})).
						Elicit("step2", question("Step 2: What is your favorite color?", stringForm("color"))).ToolResult(), nil
				}
				if _, ok := p.InputResponses["step2"]; ok && st.Round == 2 {
					name := st.Name
					if name == "" {
						name = "friend"
					}
					return text(fmt.Sprintf("Multi-round complete for %s who likes %s", name, inputText(p.InputResponses, "step2", "color"))), nil
				}
				return step1, nil
			}),
		tool("test_input_required_result_tampered_state", "MRTR: HMAC-signed requestState integrity test",
			func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				p := req.Params
				if p.RequestState != "" {
					st := signer.verify(p.RequestState)
					if st == nil {
						return nil, errTamperedState
					}
					if _, ok := p.InputResponses["confirm"]; ok && st["kind"] == "tamper-test" {
						return text("integrity-ok: state verified"), nil
					}
				}
				return server.NewInputRequestBuilder(signer.sign(map[string]any{"kind": "tamper-test", "nonce": rand.Text()})).
					Elicit("confirm", confirmForm()).ToolResult(), nil
			}),
		tool("test_input_required_result_capabilities", "MRTR: respects client capabilities in inputRequests",
			func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				p := req.Params
				if len(p.InputResponses) > 0 {
					keys := make([]string, 0, len(p.InputResponses))
					for k := range p.InputResponses {
						keys = append(keys, k)
					}
					slices.Sort(keys)
					return text("capabilities-ok: received " + strings.Join(keys, ",")), nil
				}
				var caps mcp.ClientCapabilities
				if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientCapabilities != nil {
					caps = *info.ClientCapabilities
				} else if cs, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo); ok {
					caps = cs.GetClientCapabilities()
				}
				b := server.NewInputRequestBuilder(signer.sign(map[string]any{"kind": "capabilities-test", "nonce": rand.Text()}))
				asked := false
				if caps.Elicitation != nil {
					b.Elicit("elicit_input", question("Elicitation input", stringForm("value")))
					asked = true
				}
				if caps.Sampling != nil {
					b.Sample("sample_input", samplingQuestion("Sample request", 50))
					asked = true
				}
				if !asked {
					return text("No supported capabilities declared"), nil
				}
				return b.ToolResult(), nil
			}),
	)
	s.mcp.AddPrompt(mcp.NewPrompt("test_input_required_result_prompt", mcp.WithPromptDescription("MRTR: prompts/get answering InputRequiredResult")),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if _, ok := req.Params.InputResponses["user_context"]; ok {
				return mcp.NewGetPromptResult("", []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser,
					mcp.NewTextContent("Prompt with context: "+inputText(req.Params.InputResponses, "user_context", "context")))}), nil
			}
			return server.NewInputRequestBuilder("").Elicit("user_context",
				question("What context should the prompt use?", stringForm("context"))).PromptResult(), nil
		})
}
