package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

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
	// completions are the servers that complete arguments, sorted.
	completions []string
}

// completes says whether the gateway offers completions: some server does
// (only, when it fronts one, that one).
func (f features) completes(only string) bool {
	if only != "" {
		return slices.Contains(f.completions, only)
	}
	return len(f.completions) > 0
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

// exposeFeatures is what the gateway lists of f: copies of the servers'
// descriptors with the URIs and names made unique per server (Raw, the
// server's own object, stays as it is). With only set, the descriptors of
// that server alone, as it lists them.
func exposeFeatures(f features, only string) ([]wire.Resource, []wire.ResourceTemplate, []wire.Prompt) {
	var rs []wire.Resource
	var ts []wire.ResourceTemplate
	if only != "" {
		for _, s := range f.resources.Servers {
			if s.Server == only {
				rs, ts = append(rs, s.Resources...), append(ts, s.Templates...)
			}
		}
		var ps []wire.Prompt
		for _, s := range f.prompts.Servers {
			if s.Server == only {
				ps = append(ps, s.Prompts...)
			}
		}
		return rs, ts, ps
	}
	for _, s := range f.resources.Servers {
		for _, r := range s.Resources {
			r.URI, r.Name = resourceURI(s.Server, r.URI), s.Server+"__"+r.Name
			rs = append(rs, r)
		}
		for _, t := range s.Templates {
			t.URITemplate, t.Name = resourceURI(s.Server, t.URITemplate), s.Server+"__"+t.Name
			ts = append(ts, t)
		}
	}
	var ps []wire.Prompt
	for _, s := range f.prompts.Servers {
		for _, p := range s.Prompts {
			p.Name = s.Server + "__" + p.Name
			ps = append(ps, p)
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

// read reads a listed resource from its server; the parts' URIs are
// rewritten as the gateway lists them (and kept as they are when it fronts
// one server).
func (g *gateway) read(ctx context.Context, uri string) ([]wire.ResourceContent, error) {
	if g.opts.Server != "" {
		rr, err := g.eng.ReadResource(ctx, g.opts.Server, uri)
		if err != nil {
			return nil, err
		}
		return rr.Contents, nil
	}
	server, own, err := splitResourceURI(uri)
	if err != nil {
		return nil, err
	}
	rr, err := g.eng.ReadResource(ctx, server, own)
	if err != nil {
		return nil, err
	}
	for i := range rr.Contents {
		rr.Contents[i].URI = resourceURI(server, rr.Contents[i].URI)
	}
	return rr.Contents, nil
}

// promptServerOf names the server a listed prompt is got from ("" when
// the name is not one of the gateway's).
func (g *gateway) promptServerOf(name string) string {
	if g.opts.Server != "" {
		return g.opts.Server
	}
	server, _, ok := strings.Cut(name, "__")
	if !ok {
		return ""
	}
	return server
}

// getPrompt gets a listed prompt from its server (the one it fronts, if
// it fronts one).
func (g *gateway) getPrompt(ctx context.Context, name string, args map[string]string) (wire.PromptResult, error) {
	if g.opts.Server != "" {
		return g.eng.GetPrompt(ctx, g.opts.Server, name, args)
	}
	server, own, ok := strings.Cut(name, "__")
	if !ok {
		return wire.PromptResult{}, fmt.Errorf("prompt %q: the gateway's prompts are named <server>__<prompt>", name)
	}
	return g.eng.GetPrompt(ctx, server, own, args)
}

// complete completes an argument of a listed prompt or resource template
// through its server (the one it fronts, if it fronts one): a prompt
// <server>__<prompt> and a template freecode://<server>/<template> are
// the server's own prompt and template.
func (g *gateway) complete(ctx context.Context, ref wire.CompletionRef, arg wire.CompletionArgument, given map[string]string) (wire.Completion, error) {
	server := g.opts.Server
	if server == "" {
		var err error
		switch ref.Type {
		case wire.RefPrompt:
			s, own, ok := strings.Cut(ref.Name, "__")
			if !ok {
				return wire.Completion{}, fmt.Errorf("prompt %q: the gateway's prompts are named <server>__<prompt>", ref.Name)
			}
			server, ref.Name = s, own
		case wire.RefResource:
			if server, ref.URI, err = splitResourceURI(ref.URI); err != nil {
				return wire.Completion{}, err
			}
		default:
			return wire.Completion{}, fmt.Errorf("completion/complete: a ref of type %q names nothing of the gateway's", ref.Type)
		}
	}
	return g.eng.Complete(ctx, server, wire.CompletionRequest{Ref: ref, Argument: arg, Context: given})
}
