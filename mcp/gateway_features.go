package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/freecode/freecode/telemetry"
	"github.com/freecode/freecode/wire"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// listed is what mcp-go models of a resource's, template's or prompt's
// own object beside the fields the gateway sets: its icons and _meta.
// A part that does not decode is left out.
func listed(raw json.RawMessage) (icons []mcpgo.Icon, meta *mcpgo.Meta) {
	var extra struct {
		Icons json.RawMessage `json:"icons"`
		Meta  json.RawMessage `json:"_meta"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &extra) != nil {
		return nil, nil
	}
	if json.Unmarshal(extra.Icons, &icons) != nil {
		icons = nil
	}
	return icons, metaOf(extra.Meta)
}

// rawMeta is the _meta member of raw, a server's object; nil when it has
// none or does not decode.
func rawMeta(raw json.RawMessage) json.RawMessage {
	var o struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &o) != nil {
		return nil
	}
	return o.Meta
}

// SetResources makes rs and ts the listed resources and templates (their
// URIs and names as the host sees them, Raw their servers' objects, whose
// icons and _meta are listed too) and reports whether they changed; the
// host is sent notifications/resources/list_changed only then (compared
// as SetTools compares tools), once for a change of either list, twice
// when both changed (mcp-go notifies for each). A template mcp-go cannot
// parse is left out. It has one caller at a time (see Gateway).
func (g *Gateway) SetResources(rs []wire.Resource, ts []wire.ResourceTemplate) (changed bool) {
	rs, ts = slices.Clone(rs), slices.Clone(ts)
	slices.SortFunc(rs, func(a, b wire.Resource) int { return strings.Compare(a.URI, b.URI) })
	slices.SortFunc(ts, func(a, b wire.ResourceTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
	g.mu.Lock()
	newResources := !g.featuresSet || !slices.EqualFunc(g.resources, rs, sameResource)
	newTemplates := !g.featuresSet || !slices.EqualFunc(g.templates, ts, sameTemplate)
	g.resources, g.templates, g.featuresSet = rs, ts, true
	g.mu.Unlock()
	// mcp-go's SetResources and SetResourceTemplates each notify every
	// session: only the list that changed is set.
	if newResources {
		sr := make([]server.ServerResource, 0, len(rs))
		for _, r := range rs {
			res := mcpgo.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MimeType, Size: r.Size}
			res.Annotations = annotations(r.Annotations)
			res.Icons, res.Meta = listed(r.Raw)
			sr = append(sr, server.ServerResource{Resource: res, Handler: g.readHandler()})
		}
		g.srv.SetResources(sr...)
	}
	if newTemplates {
		st := make([]server.ServerResourceTemplate, 0, len(ts))
		for _, t := range ts {
			tmpl, ok := resourceTemplate(t)
			if !ok {
				g.opts.Logger.Info("left out a resource template that cannot be parsed", "template", t.URITemplate)
				continue
			}
			st = append(st, server.ServerResourceTemplate{Template: tmpl, Handler: server.ResourceTemplateHandlerFunc(g.readHandler())})
		}
		g.srv.SetResourceTemplates(st...)
	}
	return newResources || newTemplates
}

// SetPrompts makes ps the listed prompts and reports whether they changed;
// the host is sent notifications/prompts/list_changed only then. It has
// one caller at a time (see Gateway).
func (g *Gateway) SetPrompts(ps []wire.Prompt) (changed bool) {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b wire.Prompt) int { return strings.Compare(a.Name, b.Name) })
	g.mu.Lock()
	same := slices.EqualFunc(g.prompts, ps, samePrompt) && g.promptsSet
	if !same {
		g.prompts, g.promptsSet = ps, true
	}
	g.mu.Unlock()
	if same {
		return false
	}
	sp := make([]server.ServerPrompt, 0, len(ps))
	for _, p := range ps {
		mp := mcpgo.Prompt{Name: p.Name, Title: p.Title, Description: p.Description}
		mp.Icons, mp.Meta = listed(p.Raw)
		for _, a := range p.Arguments {
			mp.Arguments = append(mp.Arguments, mcpgo.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
		}
		sp = append(sp, server.ServerPrompt{Prompt: mp, Handler: g.promptHandler(p.Name)})
	}
	g.srv.SetPrompts(sp...)
	return true
}

func sameResource(a, b wire.Resource) bool {
	return a.URI == b.URI && a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && a.MimeType == b.MimeType &&
		(a.Size == nil) == (b.Size == nil) && (a.Size == nil || *a.Size == *b.Size) && bytes.Equal(a.Annotations, b.Annotations) &&
		bytes.Equal(a.Raw, b.Raw)
}

func sameTemplate(a, b wire.ResourceTemplate) bool {
	return a.URITemplate == b.URITemplate && a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		a.MimeType == b.MimeType && bytes.Equal(a.Annotations, b.Annotations) && bytes.Equal(a.Raw, b.Raw)
}

func samePrompt(a, b wire.Prompt) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		slices.EqualFunc(a.Arguments, b.Arguments, sameArgument) && bytes.Equal(a.Raw, b.Raw)
}

func sameArgument(a, b wire.PromptArgument) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && a.Required == b.Required &&
		bytes.Equal(a.Raw, b.Raw)
}

// annotations decodes a source's annotations for mcp-go, which models
// audience, priority and lastModified; nil when there are none (or they do
// not decode).
func annotations(raw json.RawMessage) *mcpgo.Annotations {
	if len(raw) == 0 {
		return nil
	}
	var a mcpgo.Annotations
	if json.Unmarshal(raw, &a) != nil {
		return nil
	}
	return &a
}

// resourceTemplate is t for mcp-go, whose parser panics on a template it
// cannot read; ok is false then.
func resourceTemplate(t wire.ResourceTemplate) (tmpl mcpgo.ResourceTemplate, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	tmpl = mcpgo.NewResourceTemplate(t.URITemplate, t.Name, mcpgo.WithTemplateDescription(t.Description), mcpgo.WithTemplateMIMEType(t.MimeType))
	tmpl.Title = t.Title
	tmpl.Annotations = annotations(t.Annotations)
	tmpl.Icons, tmpl.Meta = listed(t.Raw)
	return tmpl, true
}

// readHandler answers the host's resources/read. As for tools/call, the
// host's trace context in the request's _meta is the parent of its SERVER
// span and goes on with ctx to the server; the URI is not recorded.
func (g *Gateway) readHandler() server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
		if g.opts.Read == nil {
			return nil, fmt.Errorf("read %s: %w", req.Params.URI, ErrNotOffered)
		}
		if req.Params.Meta != nil {
			ctx = telemetry.ExtractMeta(ctx, req.Params.Meta.AdditionalFields)
		}
		ctx, span := g.opts.Telemetry.StartServer(ctx, telemetry.Request{Method: string(mcpgo.MethodResourcesRead)})
		cs, err := g.opts.Read(ctx, req.Params.URI)
		span.End(telemetry.ErrorType(ctx, err), 0)
		if err != nil {
			return nil, err
		}
		out := make([]mcpgo.ResourceContents, 0, len(cs))
		for _, c := range cs {
			meta := metaMap(rawMeta(c.Raw))
			if c.Binary() {
				out = append(out, mcpgo.BlobResourceContents{URI: c.URI, MIMEType: c.MimeType, Blob: base64.StdEncoding.EncodeToString(c.Blob), Meta: meta})
			} else {
				out = append(out, mcpgo.TextResourceContents{URI: c.URI, MIMEType: c.MimeType, Text: *c.Text, Meta: meta})
			}
		}
		return out, nil
	}
}

// promptHandler answers the host's prompts/get of name, under a SERVER
// span whose parent is the host's trace context in the request's _meta
// (see readHandler); the arguments are not recorded.
func (g *Gateway) promptHandler(name string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcpgo.GetPromptRequest) (_ *mcpgo.GetPromptResult, err error) {
		if g.opts.GetPrompt == nil {
			return nil, fmt.Errorf("prompt %s: %w", name, ErrNotOffered)
		}
		if req.Params.Meta != nil {
			ctx = telemetry.ExtractMeta(ctx, req.Params.Meta.AdditionalFields)
		}
		ctx, span := g.opts.Telemetry.StartServer(ctx, telemetry.Request{Method: string(mcpgo.MethodPromptsGet), Prompt: name})
		defer func() { span.End(telemetry.ErrorType(ctx, err), 0) }()
		res, ir, err := g.bridged(ctx, string(mcpgo.MethodPromptsGet), name, req.Params.MultiRoundTripParams,
			func(ctx context.Context) (any, error) {
				if g.opts.PromptServerOf != nil {
					if done := g.track(ctx, g.opts.PromptServerOf(name)); done != nil {
						defer done()
					}
				}
				return g.opts.GetPrompt(ctx, name, req.Params.Arguments)
			})
		if err != nil {
			return nil, err
		}
		if ir != nil {
			return &mcpgo.GetPromptResult{Result: mcpgo.Result{ResultType: mcpgo.ResultTypeInputRequired}, MultiRoundTripResult: *ir}, nil
		}
		return promptResult(res.(wire.PromptResult)), nil
	}
}

// promptResult is a prompt for mcp-go.
func promptResult(res wire.PromptResult) *mcpgo.GetPromptResult {
	out := &mcpgo.GetPromptResult{Description: res.Description, Messages: make([]mcpgo.PromptMessage, 0, len(res.Messages))}
	out.Meta = metaOf(res.Meta)
	for _, m := range res.Messages {
		out.Messages = append(out.Messages, mcpgo.PromptMessage{Role: mcpgo.Role(m.Role), Content: rawContent{raw: m.Content}})
	}
	return out
}
