package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/serve"
)

// Run serves one gateway until its host is gone (stdio ends) or ctx ends.
//
// With attach set (a client of the home's serve, say), the gateway goes
// through it: its servers, rules and approvals, its events; if that serve
// goes away, the gateway runs the servers itself from then on (switching).
// With attach nil it runs them itself from the start, with so
// (serve.NewCore); when the host is gone, every server is stopped before
// Run returns. Either way it goes through an engine alone (api.Engine),
// in process too: the Core's approvals and elicitations wait in its API
// queues and the gateway answers them as it does serve's, so so.Approver
// and so.Elicit are ignored.
func Run(ctx context.Context, opts Options, so serve.Options, attach api.Engine) error {
	so.Approver, so.Elicit = nil, nil
	if attach != nil {
		// The servers of a fallback run until the gateway ends, which
		// their failure ends too (as without attach); Run waits for
		// them to stop. g.serve returns only once its event stream
		// ended, so wg.Go always comes before wg.Wait.
		ctx, fail := context.WithCancelCause(ctx)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer fail(nil)
		sw := &switching{cur: attach, log: opts.Logger,
			gone: func() bool {
				c, err := api.Dial(api.SocketPath(so.Home))
				if err == nil {
					c.Close()
				}
				return errors.Is(err, api.ErrNotRunning)
			},
			start: func(ctx context.Context) (api.Engine, error) {
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
				return core, nil
			}}
		return newGateway(sw, sw.owned, opts).serve(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	core, err := serve.NewCore(so)
	if err != nil {
		return err
	}
	defer core.Close()
	g := newGateway(core, func() bool { return true }, opts)
	return core.Run(ctx, serve.Part{Name: "gateway", Run: func(ctx context.Context) error {
		// The host leaving ends the whole run: every server stops.
		defer cancel()
		return g.serve(ctx)
	}})
}
