package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
)

// FeatureSource reads a server's resources and gets its prompts by the
// server's own names; *mcp.Session satisfies it.
type FeatureSource interface {
	ReadResource(ctx context.Context, uri string) ([]mcp.ResourceContents, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (*mcp.PromptResult, error)
}

// Features converts what a session lists beside tools into the registry's
// terms. Read and GetPrompt go through src, and are set only when the
// server declares resources and prompts; an error that wraps
// mcp.ErrTransport also wraps registry.ErrTransport, as for tool calls.
func Features(src FeatureSource, f mcp.Features) registry.Features {
	out := registry.Features{
		Resources: make([]registry.Resource, len(f.Resources)),
		Templates: make([]registry.ResourceTemplate, len(f.Templates)),
		Prompts:   make([]registry.Prompt, len(f.Prompts)),
	}
	for i, r := range f.Resources {
		out.Resources[i] = registry.Resource{URI: r.URI, Name: r.Name, Title: r.Title, Description: r.Description,
			MimeType: r.MimeType, Size: r.Size, Annotations: r.Annotations, Raw: r.Raw}
	}
	for i, t := range f.Templates {
		out.Templates[i] = registry.ResourceTemplate{URITemplate: t.URITemplate, Name: t.Name, Title: t.Title,
			Description: t.Description, MimeType: t.MimeType, Annotations: t.Annotations, Raw: t.Raw}
	}
	for i, p := range f.Prompts {
		args := make([]registry.PromptArgument, len(p.Arguments))
		for j, a := range p.Arguments {
			args[j] = registry.PromptArgument{Name: a.Name, Title: a.Title, Description: a.Description, Required: a.Required, Raw: a.Raw}
		}
		out.Prompts[i] = registry.Prompt{Name: p.Name, Title: p.Title, Description: p.Description, Arguments: args, Raw: p.Raw}
	}
	if f.Offers.Resources {
		out.Read = func(ctx context.Context, uri string) ([]registry.ResourceContents, error) {
			got, err := src.ReadResource(ctx, uri)
			if err != nil {
				return nil, transportError(err)
			}
			rc := make([]registry.ResourceContents, len(got))
			for i, c := range got {
				rc[i] = registry.ResourceContents{URI: c.URI, MimeType: c.MimeType, Text: c.Text, Blob: c.Blob, Binary: c.Binary, Raw: c.Raw}
			}
			return rc, nil
		}
	}
	if f.Offers.Prompts {
		out.GetPrompt = func(ctx context.Context, name string, args map[string]string) (registry.PromptResult, error) {
			res, err := src.GetPrompt(ctx, name, args)
			if err != nil {
				return registry.PromptResult{}, transportError(err)
			}
			if res == nil {
				return registry.PromptResult{}, fmt.Errorf("prompts/get %q: empty result", name)
			}
			pr := registry.PromptResult{Description: res.Description, Meta: res.Meta, Messages: make([]registry.PromptMessage, len(res.Messages))}
			for i, m := range res.Messages {
				pr.Messages[i] = registry.PromptMessage{Role: m.Role, Content: m.Content}
			}
			return pr, nil
		}
	}
	return out
}

// transportError is err, also wrapping registry.ErrTransport when it
// wraps mcp.ErrTransport.
func transportError(err error) error {
	if errors.Is(err, mcp.ErrTransport) && !errors.Is(err, registry.ErrTransport) {
		return fmt.Errorf("%w: %w", registry.ErrTransport, err)
	}
	return err
}
