package gateway

import (
	"context"
	"errors"
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
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if attach != nil {
		// The servers of a fallback run until the gateway ends; Run
		// waits for them to stop.
		var wg sync.WaitGroup
		defer wg.Wait()
		defer cancel()
		g.be = &fallback{cur: newAttached(attach, opts), log: opts.Logger, start: func(ctx context.Context) (backend, error) {
			core, err := serve.NewCore(so)
			if err != nil {
				return nil, err
			}
			wg.Go(func() {
				defer core.Close()
				if err := core.Run(ctx); err != nil {
					opts.Logger.Error(err, "the servers run in this process stopped")
				}
			})
			return inProcess{core: core}, nil
		}}
		return g.serve(ctx)
	}
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
