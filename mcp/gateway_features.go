package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// GatewayResource is one resource as the gateway lists it.
type GatewayResource struct {
	URI, Name, Title, Description, MimeType string
	Size                                    *int64
	// Annotations is the source's annotations object verbatim (nil: none).
	Annotations json.RawMessage
	// Raw is the resource as its server listed it (nil: none): its icons
	// and _meta are listed too (see GatewayTool.Raw).
	Raw json.RawMessage
}

// GatewayTemplate is one resource template (RFC 6570) as the gateway lists
// it.
type GatewayTemplate struct {
	URITemplate, Name, Title, Description, MimeType string
	Annotations                                     json.RawMessage
	// Raw is the template as its server listed it (see GatewayResource).
	Raw json.RawMessage
}

// GatewayPrompt is one prompt as the gateway lists it.
type GatewayPrompt struct {
	Name, Title, Description string
	Arguments                []GatewayPromptArgument
	// Raw is the prompt as its server listed it (see GatewayResource).
	Raw json.RawMessage
}

// GatewayPromptArgument is one argument of a GatewayPrompt.
type GatewayPromptArgument struct {
	Name, Title, Description string
	Required                 bool
}

// GatewayContents is one part of a read resource: Text, or Blob when
// Binary.
type GatewayContents struct {
	URI, MimeType, Text string
	Blob                []byte
	Binary              bool
	// Meta is the part's _meta object as its server sent it (nil: none).
	Meta json.RawMessage
}

// GatewayMessage is one message of a prompt, its content block verbatim.
type GatewayMessage struct {
	Role    string
	Content json.RawMessage
}

// GatewayPromptResult is a prompt as the host gets it.
type GatewayPromptResult struct {
	Description string
	Messages    []GatewayMessage
	// Meta is the result's _meta object as its server sent it (nil: none).
	Meta json.RawMessage
}

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

// SetResources makes rs and ts the listed resources and templates and
// reports whether they changed; the host is sent
// notifications/resources/list_changed only then (compared as SetTools
// compares tools), once for a change of either list, twice when both
// changed (mcp-go notifies for each). A template mcp-go cannot parse is
// left out. It has one caller at a time (see Gateway).
func (g *Gateway) SetResources(rs []GatewayResource, ts []GatewayTemplate) (changed bool) {
	rs, ts = slices.Clone(rs), slices.Clone(ts)
	slices.SortFunc(rs, func(a, b GatewayResource) int { return strings.Compare(a.URI, b.URI) })
	slices.SortFunc(ts, func(a, b GatewayTemplate) int { return strings.Compare(a.URITemplate, b.URITemplate) })
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
func (g *Gateway) SetPrompts(ps []GatewayPrompt) (changed bool) {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b GatewayPrompt) int { return strings.Compare(a.Name, b.Name) })
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

func sameResource(a, b GatewayResource) bool {
	return a.URI == b.URI && a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && a.MimeType == b.MimeType &&
		(a.Size == nil) == (b.Size == nil) && (a.Size == nil || *a.Size == *b.Size) && bytes.Equal(a.Annotations, b.Annotations) &&
		bytes.Equal(a.Raw, b.Raw)
}

func sameTemplate(a, b GatewayTemplate) bool {
	return a.URITemplate == b.URITemplate && a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		a.MimeType == b.MimeType && bytes.Equal(a.Annotations, b.Annotations) && bytes.Equal(a.Raw, b.Raw)
}

func samePrompt(a, b GatewayPrompt) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description && slices.Equal(a.Arguments, b.Arguments) &&
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
func resourceTemplate(t GatewayTemplate) (tmpl mcpgo.ResourceTemplate, ok bool) {
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

func (g *Gateway) readHandler() server.ResourceHandlerFunc {
	return func(ctx context.Context, req mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
		if g.opts.Read == nil {
			return nil, fmt.Errorf("read %s: %w", req.Params.URI, ErrNotOffered)
		}
		cs, err := g.opts.Read(ctx, req.Params.URI)
		if err != nil {
			return nil, err
		}
		out := make([]mcpgo.ResourceContents, 0, len(cs))
		for _, c := range cs {
			meta := metaMap(c.Meta)
			if c.Binary {
				out = append(out, mcpgo.BlobResourceContents{URI: c.URI, MIMEType: c.MimeType, Blob: base64.StdEncoding.EncodeToString(c.Blob), Meta: meta})
			} else {
				out = append(out, mcpgo.TextResourceContents{URI: c.URI, MIMEType: c.MimeType, Text: c.Text, Meta: meta})
			}
		}
		return out, nil
	}
}

func (g *Gateway) promptHandler(name string) server.PromptHandlerFunc {
	return func(ctx context.Context, req mcpgo.GetPromptRequest) (*mcpgo.GetPromptResult, error) {
		if g.opts.GetPrompt == nil {
			return nil, fmt.Errorf("prompt %s: %w", name, ErrNotOffered)
		}
		res, err := g.opts.GetPrompt(ctx, name, req.Params.Arguments)
		if err != nil {
			return nil, err
		}
		out := &mcpgo.GetPromptResult{Description: res.Description, Messages: make([]mcpgo.PromptMessage, 0, len(res.Messages))}
		out.Meta = metaOf(res.Meta)
		for _, m := range res.Messages {
			out.Messages = append(out.Messages, mcpgo.PromptMessage{Role: mcpgo.Role(m.Role), Content: rawContent{raw: m.Content}})
		}
		return out, nil
	}
}
