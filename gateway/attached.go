package gateway

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
)

// attached is the backend of a gateway that goes through a running serve.
type attached struct {
	c    *api.Client
	g    *gateway
	opts Options
}

func newAttached(c *api.Client, g *gateway, opts Options) *attached {
	return &attached{c: c, g: g, opts: opts}
}

func (b *attached) list(context.Context) ([]defs.Def, map[string]toolMeta, error) {
	return nil, nil, errors.New("not yet")
}

func (b *attached) call(context.Context, string, json.RawMessage, func(registry.Progress)) (registry.Result, error) {
	return registry.Result{}, errors.New("not yet")
}

// settle waits for nothing: serve's servers run already.
func (b *attached) settle(context.Context) {}

func (b *attached) watch(ctx context.Context, _ func()) error {
	<-ctx.Done()
	return nil
}
