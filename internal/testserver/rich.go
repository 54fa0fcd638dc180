package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The fixture of --rich: every field of a tool, resource, template and
// prompt, and of their results, that a client passes on without
// interpreting, each as the JSON the server sends (numbers as written),
// so that a test can follow them end to end. Each _meta holds a key a
// client knows (anthropic/maxResultSizeChars) and vendor keys it does not.
const (
	RichTool        = "rich"
	RichToolTitle   = "Rich tool"
	RichURI         = "test://rich"
	RichTemplate    = "test://rich/{id}"
	RichPrompt      = "rich"
	RichText        = "rich result"
	RichIcons       = `[{"src":"https://example.com/rich.png","mimeType":"image/png","sizes":["48x48"]},{"src":"data:image/svg+xml;base64,PHN2Zy8+","mimeType":"image/svg+xml","sizes":["any"],"theme":"dark"}]`
	RichToolMeta    = `{"anthropic/maxResultSizeChars":500000,"example.com/vendor":{"k":[1,"two",true],"big":12345678901234567}}`
	RichInputSchema = `{"type":"object","properties":{"q":{"type":"string"}}}`
	// RichOutputSchema has keywords mcp-go's typed output schema does not
	// model ($defs, description, additionalProperties).
	RichOutputSchema  = `{"type":"object","description":"What rich returns.","properties":{"answer":{"type":"integer"},"items":{"type":"array","items":{"$ref":"#/$defs/item"}}},"required":["answer"],"additionalProperties":false,"$defs":{"item":{"type":"string"}}}`
	RichAnnotations   = `{"title":"Rich (annotated)","readOnlyHint":true,"openWorldHint":false}`
	RichStructured    = `{"answer":42,"items":["a","b"]}`
	RichResultMeta    = `{"example.com/trace":"t-1","example.com/cost":{"units":7}}`
	RichResourceMeta  = `{"example.com/etag":"v1","anthropic/maxResultSizeChars":2000}`
	RichTemplateMeta  = `{"example.com/kind":"item"}`
	RichContentsMeta  = `{"example.com/etag":"v1","example.com/ui":{"frame":true}}`
	RichContentsText  = "rich contents\n"
	RichPromptMeta    = `{"example.com/prompt":{"v":2}}`
	RichPromptResMeta = `{"example.com/rendered":"yes"}`
)

// metaMap decodes a _meta constant, its numbers as written.
func metaMap(s string) map[string]any {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		panic(fmt.Sprintf("testserver: bad fixture %s: %v", s, err))
	}
	return m
}

func richIcons() []mcp.Icon {
	var icons []mcp.Icon
	if err := json.Unmarshal([]byte(RichIcons), &icons); err != nil {
		panic(err)
	}
	return icons
}

// addRich registers the fixture of --rich.
func (s *Server) addRich() {
	var ann mcp.ToolAnnotation
	if err := json.Unmarshal([]byte(RichAnnotations), &ann); err != nil {
		panic(err)
	}
	tool := mcp.Tool{Name: RichTool, Title: RichToolTitle, Description: "Returns structured content and a result _meta.",
		RawInputSchema: json.RawMessage(RichInputSchema), RawOutputSchema: json.RawMessage(RichOutputSchema),
		Annotations: ann, Icons: richIcons(), Meta: mcp.NewMetaFromMap(metaMap(RichToolMeta))}
	s.mcp.AddTools(server.ServerTool{Tool: tool, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Result: mcp.Result{Meta: mcp.NewMetaFromMap(metaMap(RichResultMeta))},
			Content: []mcp.Content{mcp.NewTextContent(RichText)}, RawStructuredContent: json.RawMessage(RichStructured)}, nil
	}})

	res := mcp.NewResource(RichURI, "rich", mcp.WithResourceDescription("A resource with icons and _meta."), mcp.WithMIMEType("text/plain"))
	res.Title, res.Icons, res.Meta = "Rich resource", richIcons(), mcp.NewMetaFromMap(metaMap(RichResourceMeta))
	read := func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
		return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: RichContentsText,
			Meta: metaMap(RichContentsMeta)}}, nil
	}
	s.mcp.AddResource(res, read)
	tmpl := mcp.NewResourceTemplate(RichTemplate, "rich-item", mcp.WithTemplateDescription("A rich item by its id."),
		mcp.WithTemplateMIMEType("text/plain"))
	tmpl.Icons, tmpl.Meta = richIcons(), mcp.NewMetaFromMap(metaMap(RichTemplateMeta))
	s.mcp.AddResourceTemplate(tmpl, read)

	p := mcp.NewPrompt(RichPrompt, mcp.WithPromptTitle("Rich prompt"), mcp.WithPromptDescription("A prompt with icons and _meta."),
		mcp.WithArgument("topic", mcp.ArgumentDescription("What about")))
	p.Icons, p.Meta = richIcons(), mcp.NewMetaFromMap(metaMap(RichPromptMeta))
	s.mcp.AddPrompt(p, func(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		out := mcp.NewGetPromptResult("A rich prompt.", []mcp.PromptMessage{
			mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("About "+req.Params.Arguments["topic"]+".")),
		})
		out.Meta = mcp.NewMetaFromMap(metaMap(RichPromptResMeta))
		return out, nil
	})
}
