package testserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// The resources of --resources: test://text/0 .. test://text/<N-1> (text),
// BinaryURI (binary), and those set_resource adds; the template
// ItemTemplate; with --evil-text also EvilURI.
const (
	BinaryURI    = "test://binary"
	ItemTemplate = "test://items/{id}"
	EvilURI      = "test://evil"
)

// BinaryContents is what BinaryURI holds: every byte value once, 0 to 255,
// terminal escapes (ESC, CSI, BEL) included.
func BinaryContents() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// DynURI is the text resource the n-th SIGUSR1 adds with --resources.
func DynURI(n int) string { return "test://dyn/" + strconv.Itoa(n) }

// TextURI is the URI of the i-th text resource of --resources.
func TextURI(i int) string { return "test://text/" + strconv.Itoa(i) }

// TextContents is the text of TextURI(i).
func TextContents(i int) string { return fmt.Sprintf("text resource %d\n", i) }

// instructionsText is --instructions-bytes bytes of instructions, made of
// two-byte characters so that a cut must find a character boundary.
func instructionsText(n int) string {
	const unit = "é"
	var b strings.Builder
	b.WriteString("Use this server well. ")
	for b.Len()+len(unit) <= n {
		b.WriteString(unit)
	}
	return b.String()
}

// featureOptions are the server options of --resources, --prompts and the
// instructions flags.
func (c Config) featureOptions() []server.ServerOption {
	var opts []server.ServerOption
	if c.Resources > 0 || c.EndlessResourcePages || c.Rich {
		opts = append(opts, server.WithResourceCapabilities(true, true))
	}
	if c.ReadDelay > 0 {
		opts = append(opts, server.WithResourceHandlerMiddleware(func(next server.ResourceHandlerFunc) server.ResourceHandlerFunc {
			return func(ctx context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				t := time.NewTimer(c.ReadDelay)
				defer t.Stop()
				select {
				case <-t.C:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return next(ctx, req)
			}
		}))
	}
	if c.Prompts || c.Rich {
		opts = append(opts, server.WithPromptCapabilities(true))
	}
	if c.Completions {
		opts = append(opts, server.WithCompletions(), server.WithPromptCompletionProvider(completer{}),
			server.WithResourceCompletionProvider(completer{}))
	}
	switch {
	case c.Instructions != "":
		opts = append(opts, server.WithInstructions(c.Instructions))
	case c.InstructionsBytes > 0:
		opts = append(opts, server.WithInstructions(instructionsText(c.InstructionsBytes)))
	}
	return opts
}

// addFeatures registers the resources, templates, prompts and their tools.
func (s *Server) addFeatures() {
	if s.cfg.Resources > 0 {
		for i := range s.cfg.Resources {
			s.setText(TextURI(i), TextContents(i))
		}
		s.mcp.AddResource(mcp.NewResource(BinaryURI, "binary", mcp.WithResourceDescription("Every byte value once."),
			mcp.WithMIMEType("application/octet-stream"), mcp.WithResourceSize(256)),
			func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				return []mcp.ResourceContents{mcp.BlobResourceContents{URI: BinaryURI, MIMEType: "application/octet-stream",
					Blob: encodeBase64(BinaryContents())}}, nil
			})
		s.mcp.AddResourceTemplate(mcp.NewResourceTemplate(ItemTemplate, "item", mcp.WithTemplateDescription("An item by its id."),
			mcp.WithTemplateMIMEType("text/plain")),
			func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
				id := strings.TrimPrefix(req.Params.URI, "test://items/")
				return []mcp.ResourceContents{mcp.TextResourceContents{URI: req.Params.URI, MIMEType: "text/plain", Text: "item " + id}}, nil
			})
		if s.cfg.EvilText {
			s.mcp.AddResource(mcp.NewResource(EvilURI, "evil "+EvilText, mcp.WithResourceDescription(EvilText), mcp.WithMIMEType("text/plain")),
				func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
					return []mcp.ResourceContents{mcp.TextResourceContents{URI: EvilURI, MIMEType: "text/plain", Text: EvilText}}, nil
				})
		}
		s.mcp.AddTools(
			server.ServerTool{Tool: rawTool("set_resource", "Sets the text of a resource (adding it if new) and announces the change.",
				setResourceSchema, readOnly(false)), Handler: s.handleSetResource},
			server.ServerTool{Tool: rawTool("remove_resource", "Removes a resource and announces the change.",
				uriSchema, readOnly(false)), Handler: s.handleRemoveResource},
			server.ServerTool{Tool: rawTool("links", "Returns links to test://text/0 and test://binary.",
				emptySchema, readOnly(true)), Handler: handleLinks},
		)
	}
	if s.cfg.Prompts {
		s.mcp.AddPrompt(mcp.NewPrompt("greet", mcp.WithPromptTitle("Greeting"), mcp.WithPromptDescription("Greets someone by name."),
			mcp.WithArgument("name", mcp.RequiredArgument(), mcp.ArgumentDescription("Who to greet")),
			mcp.WithArgument("greeting", mcp.ArgumentDescription("The word to greet with (default Hello)"))), handleGreet)
		s.mcp.AddPrompt(mcp.NewPrompt("plain", mcp.WithPromptDescription("A prompt without arguments.")), s.handlePlain)
		if s.cfg.Ask {
			s.mcp.AddPrompt(mcp.NewPrompt("ask", mcp.WithPromptDescription("On a 2026-07-28 request, asks for a form (input_required) and greets the name given.")), handleAskPrompt)
		}
		s.mcp.AddTools(server.ServerTool{Tool: rawTool("add_prompt", "Registers a prompt with the given name and announces the change.",
			nameSchema, readOnly(false)), Handler: s.handleAddPrompt})
	}
	if s.cfg.Resources > 0 || s.cfg.Prompts {
		s.mcp.AddTools(server.ServerTool{Tool: rawTool("relist", "Announces that the resources and prompts changed, without changing them.",
			emptySchema, readOnly(true)), Handler: s.handleRelist})
	}
}

const (
	setResourceSchema = `{"type":"object","properties":{"uri":{"type":"string"},"text":{"type":"string"}},"required":["uri","text"]}`
	uriSchema         = `{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"]}`
)

// setText makes uri a text resource holding text. It reports whether uri
// is new; mcp-go announces a new resource with list_changed itself.
func (s *Server) setText(uri, text string) bool {
	s.mu.Lock()
	if s.texts == nil {
		s.texts = map[string]string{}
	}
	_, had := s.texts[uri]
	s.texts[uri] = text
	s.mu.Unlock()
	if had {
		return false
	}
	name := strings.TrimPrefix(uri, "test://")
	s.mcp.AddResource(mcp.NewResource(uri, name, mcp.WithMIMEType("text/plain")),
		func(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			s.mu.Lock()
			t, ok := s.texts[uri]
			s.mu.Unlock()
			if !ok {
				return nil, errors.New("no resource " + uri)
			}
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: t}}, nil
		})
	return true
}

func (s *Server) handleSetResource(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	uri, err := req.RequireString("uri")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	text, err := req.RequireString("text")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	if s.setText(uri, text) {
		return mcp.NewToolResultText("added " + uri), nil
	}
	// A changed resource: its subscribers hear of it.
	s.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
	return mcp.NewToolResultText("updated " + uri), nil
}

func (s *Server) handleRemoveResource(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	uri, err := req.RequireString("uri")
	if err != nil {
		return mcp.NewToolResultError(err.Error()), nil
	}
	s.mu.Lock()
	_, had := s.texts[uri]
	delete(s.texts, uri)
	s.mu.Unlock()
	if !had {
		return mcp.NewToolResultError("no text resource " + uri), nil
	}
	s.mcp.DeleteResources(uri)
	return mcp.NewToolResultText("removed " + uri), nil
}

func handleLinks(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	return &mcp.CallToolResult{Content: []mcp.Content{
		mcp.NewTextContent("two links follow"),
		mcp.NewResourceLink(TextURI(0), "text/0", "The first text resource.", "text/plain"),
		mcp.NewResourceLink(BinaryURI, "binary", "Every byte value once.", "application/octet-stream"),
	}}, nil
}

func handleGreet(_ context.Context, req mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	greeting := req.Params.Arguments["greeting"]
	if greeting == "" {
		greeting = "Hello"
	}
	return mcp.NewGetPromptResult("A greeting.", []mcp.PromptMessage{
		mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(fmt.Sprintf("%s, %s!", greeting, req.Params.Arguments["name"]))),
	}), nil
}

func (s *Server) handlePlain(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	msgs := []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("A prompt without arguments."))}
	if s.cfg.EvilText {
		msgs = append(msgs, mcp.NewPromptMessage(mcp.RoleAssistant, mcp.NewTextContent(EvilText)))
	}
	return mcp.NewGetPromptResult("", msgs), nil
}

func (s *Server) handleAddPrompt(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	name, err := req.RequireString("name")
	if err != nil || name == "" {
		return mcp.NewToolResultError("name must be a non-empty string"), nil
	}
	s.mcp.AddPrompt(mcp.NewPrompt(name, mcp.WithPromptDescription("Prompt added at run time by add_prompt.")), s.handlePlain)
	return mcp.NewToolResultText("added prompt " + name), nil
}

// handleRelist sends both list_changed notifications with nothing changed:
// a client that re-lists must find no change.
func (s *Server) handleRelist(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	if s.cfg.Resources > 0 {
		s.mcp.SendNotificationToAllClients(mcp.MethodNotificationResourcesListChanged, nil)
	}
	if s.cfg.Prompts {
		s.mcp.SendNotificationToAllClients(mcp.MethodNotificationPromptsListChanged, nil)
	}
	return mcp.NewToolResultText("announced"), nil
}

// endlessResourcePage answers resources/list for --endless-resource-pages:
// a page of fresh resources and a cursor never sent before.
func (s *Server) endlessResourcePage(id, params json.RawMessage) ([]byte, error) {
	var p struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(params, &p)
	page, _ := strconv.Atoi(strings.TrimPrefix(p.Cursor, "page-"))
	size := s.cfg.PageSize
	if size <= 0 {
		size = defaultEndlessPageSize
	}
	resources := make([]map[string]any, size)
	for i := range resources {
		resources[i] = map[string]any{"uri": fmt.Sprintf("test://page/%d/%d", page, i), "name": fmt.Sprintf("page%d_resource%d", page, i)}
	}
	return json.Marshal(map[string]any{
		"jsonrpc": mcp.JSONRPC_VERSION,
		"id":      id,
		"result":  map[string]any{"resources": resources, "nextCursor": fmt.Sprintf("page-%d", page+1)},
	})
}
