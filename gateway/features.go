package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/wire"
)

// A resource's URI, and a template's, is made unique per server as
// ResourcePrefix + <server> + "/" + its own URI, which the gateway strips
// again to read it from that server: freecode://fs/file:///tmp/a. Names of
// resources and prompts get the tools' "<server>__" prefix.
const ResourcePrefix = "freecode://"

// ErrUnknownResource is a read of a URI the gateway did not make.
var ErrUnknownResource = errors.New("not a resource of the gateway")

// features is what an engine lists besides tools.
type features struct {
	resources wire.Resources
	prompts   wire.Prompts
	// instructions are each server's instructions, by server name.
	instructions map[string]string
}

func resourceURI(server, uri string) string { return ResourcePrefix + server + "/" + uri }

// splitResourceURI is the server and its own URI of a URI resourceURI made.
func splitResourceURI(uri string) (server, own string, err error) {
	rest, ok := strings.CutPrefix(uri, ResourcePrefix)
	if ok {
		server, own, ok = strings.Cut(rest, "/")
	}
	if !ok || server == "" || own == "" {
		return "", "", fmt.Errorf("%q: %w (its URIs are %s<server>/<the server's URI>)", uri, ErrUnknownResource, ResourcePrefix)
	}
	return server, own, nil
}

// exposeFeatures is what the gateway lists of f.
func exposeFeatures(f features) ([]mcp.GatewayResource, []mcp.GatewayTemplate, []mcp.GatewayPrompt) {
	var rs []mcp.GatewayResource
	var ts []mcp.GatewayTemplate
	for _, s := range f.resources.Servers {
		for _, r := range s.Resources {
			rs = append(rs, mcp.GatewayResource{URI: resourceURI(s.Server, r.URI), Name: s.Server + "__" + r.Name, Title: r.Title,
				Description: r.Description, MimeType: r.MimeType, Size: r.Size, Annotations: r.Annotations, Raw: r.Raw})
		}
		for _, t := range s.Templates {
			ts = append(ts, mcp.GatewayTemplate{URITemplate: resourceURI(s.Server, t.URITemplate), Name: s.Server + "__" + t.Name, Title: t.Title,
				Description: t.Description, MimeType: t.MimeType, Annotations: t.Annotations, Raw: t.Raw})
		}
	}
	var ps []mcp.GatewayPrompt
	for _, s := range f.prompts.Servers {
		for _, p := range s.Prompts {
			gp := mcp.GatewayPrompt{Name: s.Server + "__" + p.Name, Title: p.Title, Description: p.Description, Raw: p.Raw}
			for _, a := range p.Arguments {
				gp.Arguments = append(gp.Arguments, mcp.GatewayPromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required})
			}
			ps = append(ps, gp)
		}
	}
	return rs, ts, ps
}

// mergeInstructions is the gateway's instructions: a line on how names are
// made, then each server's own under a header naming it, by name.
func mergeInstructions(by map[string]string) string {
	names := make([]string, 0, len(by))
	for n, text := range by {
		if strings.TrimSpace(text) != "" {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("FreeCode gateway: each server's tools and prompts are named <server>__<name>, its resources " +
		ResourcePrefix + "<server>/<uri>. The servers' own instructions follow.\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\n## %s\n\n%s\n", n, strings.TrimSpace(by[n]))
	}
	return b.String()
}

// read reads a listed resource from its server.
func (g *gateway) read(ctx context.Context, uri string) ([]mcp.GatewayContents, error) {
	server, own, err := splitResourceURI(uri)
	if err != nil {
		return nil, err
	}
	rr, err := g.eng.ReadResource(ctx, server, own)
	if err != nil {
		return nil, err
	}
	out := make([]mcp.GatewayContents, 0, len(rr.Contents))
	for _, c := range rr.Contents {
		gc := mcp.GatewayContents{URI: resourceURI(server, c.URI), MimeType: c.MimeType, Meta: metaOf(c.Raw)}
		if c.Text != nil {
			gc.Text = *c.Text
		} else {
			gc.Blob, gc.Binary = c.Blob, true
		}
		out = append(out, gc)
	}
	return out, nil
}

// getPrompt gets a listed prompt from its server.
func (g *gateway) getPrompt(ctx context.Context, name string, args map[string]string) (mcp.GatewayPromptResult, error) {
	server, own, ok := strings.Cut(name, "__")
	if !ok {
		return mcp.GatewayPromptResult{}, fmt.Errorf("prompt %q: the gateway's prompts are named <server>__<prompt>", name)
	}
	pr, err := g.eng.GetPrompt(ctx, server, own, args)
	if err != nil {
		return mcp.GatewayPromptResult{}, err
	}
	out := mcp.GatewayPromptResult{Description: pr.Description, Meta: pr.Meta, Messages: make([]mcp.GatewayMessage, 0, len(pr.Messages))}
	for _, m := range pr.Messages {
		out.Messages = append(out.Messages, mcp.GatewayMessage{Role: m.Role, Content: m.Content})
	}
	return out, nil
}

// metaOf is the _meta of raw, a server's object (nil: none).
func metaOf(raw json.RawMessage) json.RawMessage {
	var o struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &o) != nil || string(o.Meta) == "null" {
		return nil
	}
	return o.Meta
}
