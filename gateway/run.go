package gateway

import (
	"context"
	"errors"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/serve"
)

// Run serves one gateway until its host is gone (stdio ends) or ctx ends.
//
// With attach set, the gateway goes through that serve: its servers, rules
// and approvals, its tools_changed events. Otherwise it runs the servers
// itself with so (serve.NewCore): asks become elicitations to the host and
// the servers' elicitations are forwarded to it; when the host is gone,
// every server is stopped before Run returns. so.Approver and so.Elicit
// are the gateway's own.
func Run(ctx context.Context, opts Options, so serve.Options, attach *api.Client) error {
	if attach != nil {
		g := newGateway(nil, opts)
		g.be = newAttached(attach, opts)
		return g.serve(ctx)
	}
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
	core, err := serve.NewCore(so)
	if err != nil {
		return err
	}
	defer core.Close()
	g.be = inProcess{core: core}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	return core.Run(ctx, serve.Part{Name: "gateway", Run: func(ctx context.Context) error {
		// The host leaving ends the whole run: every server stops.
		defer cancel()
		return g.serve(ctx)
	}})
}
