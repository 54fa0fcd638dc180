package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/schema"
)

// callSearch runs `mcp call tool_search`: through freecode serve when it
// runs for this home (its tools are searched, and the matches loaded into
// its definitions, as the model's own search would), else on a one-shot
// engine of every enabled server, the call bounded by timeout unless o
// says otherwise.
func (a *app) callSearch(ctx context.Context, cfg *schema.Config, args json.RawMessage, o callOpts, verbose bool, timeout time.Duration) error {
	client, home, err := a.dialServe()
	why := ""
	if err == nil {
		st, serr := client.Status(ctx)
		// Serve searches all its servers: they must be this command's.
		if serr == nil {
			why = unlikeSources(st, cfg)
		}
		if serr == nil && why == "" {
			r := route{client: client, servePID: st.ServePID}
			defer r.close()
			if verbose {
				fmt.Fprintf(a.stderr, "Calling %s %s.\n", defs.SearchToolID, r.describe())
			}
			return a.callThrough(ctx, callEngine{Engine: client, via: viaServe}, defs.SearchToolID, args, o, a.progressLine())
		}
		client.Close()
		err = serr
	}
	if verbose {
		switch {
		case why != "":
		case errors.Is(err, api.ErrNotRunning):
			why = "freecode serve is not running for " + home
		default:
			why = "cannot reach freecode serve: " + fmt.Sprint(err)
		}
		fmt.Fprintf(a.stderr, "Calling %s in a one-shot session of every enabled server: %s.\n", defs.SearchToolID, why)
	}
	if !o.timeoutSet() {
		o.timeout = timeout
	}
	return a.searchOneShot(ctx, cfg, args, o)
}

// searchOneShot starts every enabled server at once on a one-shot engine
// (which defers nothing: every server's tools are searched, alwaysLoad
// ones too, and nothing is loaded — the command only prints) and runs
// tool_search there. A server that cannot start is named on stderr and
// left out.
func (a *app) searchOneShot(ctx context.Context, cfg *schema.Config, args json.RawMessage, o callOpts) error {
	// Bad arguments are refused before any server is started for them.
	if err := validateSearch(ctx, args); err != nil {
		return err
	}
	var servers []schema.Server
	var failures []string
	for _, s := range cfg.MCP.Servers {
		switch {
		case !s.Enabled:
		case s.Hold != nil:
			failures = append(failures, fmt.Sprintf("server %s does not run: %s", termtext.Quote(s.Name), holdReason(s.Hold)))
		default:
			servers = append(servers, s)
		}
	}
	one, err := a.oneShot(ctx, cfg, servers, oneShotOpts{approver: a.approver(o.yes), partial: true})
	if err != nil {
		return err
	}
	defer one.Close()
	for _, f := range one.Failed() {
		srv, _ := cfg.Server(f.Server)
		// The error names the server.
		failures = append(failures, a.withRemedy(srv, f.Err).Error())
	}
	// Sorted, so that runs print alike. What servers said may hold
	// terminal controls.
	slices.Sort(failures)
	for _, f := range failures {
		fmt.Fprintf(a.stderr, "Not searched: %s\n", termtext.Neutralize(f))
	}
	return a.callThrough(ctx, callEngine{Engine: one, via: viaOneShot}, defs.SearchToolID, args, o, a.progressLine())
}

// validateSearch checks args against tool_search's input schema.
func validateSearch(ctx context.Context, args json.RawMessage) error {
	search, err := defs.NewDefsCache(registry.NewRegistry(nil), defs.Options{}).SearchTool()
	if err != nil {
		return err
	}
	if err := search.Validate(ctx, args); err != nil {
		return fmt.Errorf("invalid arguments for %s: %w", defs.SearchToolID, err)
	}
	return nil
}
