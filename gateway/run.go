package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/serve"
)

// Run serves one gateway until its host is gone (stdio ends) or ctx ends.
//
// With attach set, the gateway goes through that serve: its servers, rules
// and approvals, its tools_changed events; if that serve goes away, the
// gateway runs the servers itself from then on (fallback). Otherwise it
// runs them itself from the start, with so (serve.NewCore): asks become
// elicitations to the host and the servers' elicitations are forwarded to
// it; when the host is gone, every server is stopped before Run returns.
// so.Approver and so.Elicit are the gateway's own.
func Run(ctx context.Context, opts Options, so serve.Options, attach *api.Client) error {
	g := newGateway(nil, opts)
	so.Approver = hostApprover{configPath: opts.ConfigPath}
	so.Elicit = func(ctx context.Context, e *mcp.Elicitation) (mcp.ElicitResult, error) {
		res, err := g.srv.Elicit(ctx, e)
		if errors.Is(err, mcp.ErrHostCannotElicit) {
			opts.Logger.Info("declined an elicitation: the host declared no elicitation capability", "server", e.Server)
			return mcp.ElicitResult{Action: mcp.ElicitDecline}, nil
		}
		return res, err
	}
	if attach != nil {
		// The servers of a fallback run until the gateway ends, which
		// their failure ends too (as without attach); Run waits for
		// them to stop. g.serve returns only once watch has, so wg.Go
		// always comes before wg.Wait.
		ctx, fail := context.WithCancelCause(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer fail(nil)
		g.be = &fallback{cur: newAttached(attach, opts), log: opts.Logger,
			gone: func() bool {
				c, err := api.Dial(api.SocketPath(so.Home))
				if err == nil {
					c.Close()
				}
				return errors.Is(err, api.ErrNotRunning)
			},
			start: func(ctx context.Context) (backend, error) {
				core, err := serve.NewCore(so)
				if err != nil {
					return nil, err
				}
				wg.Go(func() {
					defer core.Close()
					if err := core.Run(ctx); err != nil && ctx.Err() == nil {
						fail(fmt.Errorf("the servers run in this process stopped: %w", err))
					}
				})
				return inProcess{core: core}, nil
			}}
		return g.serve(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	core, err := serve.NewCore(so)
	if err != nil {
		return err
	}
	defer core.Close()
	g.be = inProcess{core: core}
	return core.Run(ctx, serve.Part{Name: "gateway", Run: func(ctx context.Context) error {
		// The host leaving ends the whole run: every server stops.
		defer cancel()
		return g.serve(ctx)
	}})
}
