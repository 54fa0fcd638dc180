package testserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The --conformance fixture: the tools, resources, templates and prompts
// the official conformance suite's server scenarios call, under the names
// and with the results of its reference server
// (examples/servers/typescript/everything-server.ts of
// modelcontextprotocol/conformance; mcp-go's examples/conformance is the
// same fixture in Go, which this follows). The suite checks those results
// to the byte in places (texts, URIs, MIME types), so they are kept as
// the reference server has them.

// ConformanceImage and ConformanceAudio are the reference server's 1x1 PNG
// and its empty WAV, base64.
const (
	ConformanceImage = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	ConformanceAudio = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="
)

// conformanceStep is the pause between the notices of the logging and
// progress tools, as the reference server makes (50 ms).
const conformanceStep = 50 * time.Millisecond

// conformanceOptions are the server options of --conformance: every
// capability the reference server declares, and its caching hints on
// lists (SEP-2549: five minutes, public) and reads (private).
func (c Config) conformanceOptions() []server.ServerOption {
	if !c.Conformance {
		return nil
	}
	return []server.ServerOption{
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithLogging(),
		server.WithCompletions(),
		server.WithCacheHints(300000, mcp.CacheScopePublic),
		server.WithMethodCacheHints(mcp.MethodResourcesRead, 300000, mcp.CacheScopePrivate),
	}
}

// addConformance registers the fixture.
func (s *Server) addConformance() {
	text := func(t string) *mcp.CallToolResult { return mcp.NewToolResultText(t) }
	fixed := func(name, description string, res func() *mcp.CallToolResult) server.ServerTool {
		return server.ServerTool{Tool: mcp.NewTool(name, mcp.WithDescription(description)),
			Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) { return res(), nil }}
	}
	s.mcp.AddTools(
		fixed("test_simple_text", "Tests simple text content response", func() *mcp.CallToolResult {
			return text("This is a simple text response for testing.")
		}),
		fixed("test_image_content", "Tests image content response", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewImageContent(ConformanceImage, "image/png")}}
		}),
		fixed("test_audio_content", "Tests audio content response", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewAudioContent(ConformanceAudio, "audio/wav")}}
		}),
		fixed("test_embedded_resource", "Tests embedded resource content response", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewEmbeddedResource(mcp.TextResourceContents{
				URI: "test://embedded-resource", MIMEType: "text/plain", Text: "This is an embedded resource content."})}}
		}),
		fixed("test_multiple_content_types", "Tests response with multiple content types (text, image, resource)", func() *mcp.CallToolResult {
			return &mcp.CallToolResult{Content: []mcp.Content{
				mcp.NewTextContent("Multiple content types test:"),
				mcp.NewImageContent(ConformanceImage, "image/png"),
				mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: "test://mixed-content-resource", MIMEType: "application/json",
					Text: `{"test":"data","value":123}`}),
			}}
		}),
		fixed("test_error_handling", "Tests error response handling", func() *mcp.CallToolResult {
			return mcp.NewToolResultError("This tool intentionally returns an error for testing")
		}),
		server.ServerTool{Tool: mcp.NewTool("test_tool_with_logging", mcp.WithDescription("Tests tool that emits log messages during execution")),
			Handler: s.conformanceLogging},
		server.ServerTool{Tool: mcp.NewTool("test_tool_with_progress", mcp.WithDescription("Tests tool that reports progress notifications")),
			Handler: s.conformanceProgress},
		server.ServerTool{Tool: mcp.NewToolWithRawSchema("json_schema_2020_12_tool",
			"Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)", json.RawMessage(conformance202012Schema)),
			Handler: func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return text("JSON Schema 2020-12 tool called with: " + string(req.Params.RawArguments)), nil
			}},
	)
	s.mcp.AddResource(mcp.NewResource("test://static-text", "static-text", mcp.WithResourceTitle("Static Text Resource"),
		mcp.WithResourceDescription("A static text resource for testing"), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://static-text", MIMEType: "text/plain",
				Text: "This is the content of the static text resource."}}, nil
		})
	s.mcp.AddResource(mcp.NewResource("test://static-binary", "static-binary", mcp.WithResourceTitle("Static Binary Resource"),
		mcp.WithResourceDescription("A static binary resource (image) for testing"), mcp.WithMIMEType("image/png")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.BlobResourceContents{URI: "test://static-binary", MIMEType: "image/png", Blob: ConformanceImage}}, nil
		})
	s.mcp.AddResource(mcp.NewResource("test://watched-resource", "watched-resource", mcp.WithResourceTitle("Watched Resource"),
		mcp.WithResourceDescription("A resource a client may subscribe to"), mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://watched-resource", MIMEType: "text/plain", Text: "Watched resource content"}}, nil
		})
	tmpl := mcp.NewResourceTemplate("test://template/{id}/data", "template",
		mcp.WithTemplateDescription("A resource template with parameter substitution"), mcp.WithTemplateMIMEType("application/json"))
	tmpl.Title = "Resource Template"
	s.mcp.AddResourceTemplate(tmpl, func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		id := strings.TrimSuffix(strings.TrimPrefix(req.Params.URI, "test://template/"), "/data")
		b, err := json.Marshal(map[string]any{"id": id, "templateTest": true, "data": "Data for ID: " + id})
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", req.Params.URI, err)
		}
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}, nil
	})

	user := func(c mcp.Content) mcp.PromptMessage { return mcp.PromptMessage{Role: mcp.RoleUser, Content: c} }
	s.mcp.AddPrompt(mcp.NewPrompt("test_simple_prompt", mcp.WithPromptTitle("Simple Test Prompt"),
		mcp.WithPromptDescription("A simple prompt without arguments")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{user(mcp.NewTextContent("This is a simple prompt for testing."))}}, nil
		})
	s.mcp.AddPrompt(mcp.NewPrompt("test_prompt_with_arguments", mcp.WithPromptTitle("Prompt With Arguments"),
		mcp.WithPromptDescription("A prompt with required arguments"),
		mcp.WithArgument("arg1", mcp.ArgumentDescription("First test argument"), mcp.RequiredArgument()),
		mcp.WithArgument("arg2", mcp.ArgumentDescription("Second test argument"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			t := fmt.Sprintf("Prompt with arguments: arg1='%s', arg2='%s'", req.Params.Arguments["arg1"], req.Params.Arguments["arg2"])
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{user(mcp.NewTextContent(t))}}, nil
		})
	s.mcp.AddPrompt(mcp.NewPrompt("test_prompt_with_embedded_resource", mcp.WithPromptTitle("Prompt With Embedded Resource"),
		mcp.WithPromptDescription("A prompt that includes an embedded resource"),
		mcp.WithArgument("resourceUri", mcp.ArgumentDescription("URI of the resource to embed"), mcp.RequiredArgument())),
		func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				user(mcp.NewEmbeddedResource(mcp.TextResourceContents{URI: req.Params.Arguments["resourceUri"], MIMEType: "text/plain",
					Text: "Embedded resource content for testing."})),
				user(mcp.NewTextContent("Please process the embedded resource above.")),
			}}, nil
		})
	s.mcp.AddPrompt(mcp.NewPrompt("test_prompt_with_image", mcp.WithPromptTitle("Prompt With Image"),
		mcp.WithPromptDescription("A prompt that includes image content")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []mcp.PromptMessage{
				user(mcp.NewImageContent(ConformanceImage, "image/png")),
				user(mcp.NewTextContent("Please analyze the image above.")),
			}}, nil
		})
}

// conformance202012Schema is json_schema_2020_12_tool's input schema, with
// the 2020-12 keywords ($schema, $defs, additionalProperties) a client
// must pass on as they are.
const conformance202012Schema = `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object",` +
	`"$defs":{"address":{"type":"object","properties":{"street":{"type":"string"},"city":{"type":"string"}}}},` +
	`"properties":{"name":{"type":"string"},"address":{"$ref":"#/$defs/address"}},"additionalProperties":false}`

// pause waits d or until ctx ends, whichever is first.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// conformanceLogging sends three info log messages, conformanceStep apart.
func (s *Server) conformanceLogging(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	for i, m := range []string{"Tool execution started", "Tool processing data", "Tool execution completed"} {
		if i > 0 {
			if err := pause(ctx, conformanceStep); err != nil {
				return nil, err
			}
		}
		params := map[string]any{"level": "info", "logger": "conformance-test-server", "data": m}
		if err := s.mcp.SendNotificationToClient(ctx, string(mcp.MethodNotificationMessage), params); err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
	}
	return mcp.NewToolResultText("Tool with logging executed successfully"), nil
}

// conformanceProgress reports progress 0, 50 and 100 of 100 when the call
// asked for progress, conformanceStep apart, and answers the token.
func (s *Server) conformanceProgress(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	if token == nil {
		return mcp.NewToolResultText("0"), nil
	}
	for i, p := range []int{0, 50, 100} {
		if i > 0 {
			if err := pause(ctx, conformanceStep); err != nil {
				return nil, err
			}
		}
		params := map[string]any{"progressToken": token, "progress": p, "total": 100, "message": fmt.Sprintf("Completed step %d of 100", p)}
		if err := s.mcp.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), params); err != nil {
			return nil, fmt.Errorf("progress: %w", err)
		}
	}
	// mcp-go v1.2.1's streamable HTTP forwarder drops a notice it took off
	// the session's queue when the answer is written meanwhile (it finds
	// the request done): one more step lets it write the last notice
	// first. Over stdio nothing is lost either way.
	if err := pause(ctx, conformanceStep); err != nil {
		return nil, err
	}
	return mcp.NewToolResultText(fmt.Sprint(token)), nil
}
