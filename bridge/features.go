package bridge

import (
	"context"
	"errors"
	"fmt"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

// FeatureSource reads a server's resources and gets its prompts by the
// server's own names; *mcp.Session satisfies it.
type FeatureSource interface {
	ReadResource(ctx context.Context, uri string) ([]wire.ResourceContent, error)
	GetPrompt(ctx context.Context, name string, args map[string]string) (wire.PromptResult, error)
}

// Features is what a session lists beside tools, for the registry: the
// same lists (the registry copies what it keeps), and Read and GetPrompt
// through src, set only when the server declares resources and prompts.
// Their errors that wrap mcp.ErrTransport also wrap registry.ErrTransport,
// as for tool calls.
func Features(src FeatureSource, f mcp.Features) registry.Features {
	out := registry.Features{Resources: f.Resources, Templates: f.Templates, Prompts: f.Prompts}
	if f.Offers.Resources {
		out.Read = func(ctx context.Context, uri string) ([]wire.ResourceContent, error) {
			got, err := src.ReadResource(ctx, uri)
			if err != nil {
				return nil, transportError(err)
			}
			return got, nil
		}
	}
	if f.Offers.Prompts {
		out.GetPrompt = func(ctx context.Context, name string, args map[string]string) (wire.PromptResult, error) {
			res, err := src.GetPrompt(ctx, name, args)
			if err != nil {
				return wire.PromptResult{}, transportError(err)
			}
			return res, nil
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
