package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/serve"
)

// callSearch runs `mcp call tool_search`: through freecode serve when it
// runs for this home (its tools are searched, and the matches loaded into
// its definitions, as the model's own search would), else over one-shot
// sessions of every enabled server, the call bounded by timeout unless
// o says otherwise.
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
			return a.callThroughServe(ctx, r, defs.SearchToolID, args, o)
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

// searchOneShot connects every enabled server at once, registers their
// tools (filtered as configured) and runs tool_search over them. A server
// that cannot be connected is named on stderr and left out.
func (a *app) searchOneShot(ctx context.Context, cfg *schema.Config, args json.RawMessage, o callOpts) error {
	reg, outputs, err := a.oneShotRegistry(cfg)
	if err != nil {
		return err
	}
	// No deferral here: every server's tools are searched, alwaysLoad
	// ones too, and nothing is loaded — the command only prints.
	search, err := defs.NewDefsCache(reg, defs.Options{Policy: defs.Policy{Project: serve.ProjectServers(cfg)}}).SearchTool()
	if err != nil {
		return err
	}
	// Bad arguments are refused before any server is started for them.
	if err := search.Validate(ctx, args); err != nil {
		return fmt.Errorf("invalid arguments for %s: %w", defs.SearchToolID, err)
	}
	if _, err := reg.ReplaceSource(registry.SourceBuiltin, append(reg.SourceTools(registry.SourceBuiltin), search)); err != nil {
		return fmt.Errorf("register %s: %w", defs.SearchToolID, err)
	}
	// The reapers are set up here, on the command's goroutine (see
	// processes); the connects below only read them.
	a.processes(logr.Discard())
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex // guards sessions and failures
		sessions []*mcp.Session
		failures []string
	)
	for _, s := range cfg.MCP.Servers {
		if !s.Enabled {
			continue
		}
		if s.Hold != nil {
			failures = append(failures, fmt.Sprintf("server %s does not run: %s", termtext.Quote(s.Name), holdReason(s.Hold)))
			continue
		}
		wg.Go(func() {
			sess, err := a.connect(ctx, s)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// The error names the server.
				failures = append(failures, a.withRemedy(s, err).Error())
				return
			}
			sessions = append(sessions, sess)
			tools, _ := controller.FilterTools(s.Tools, sess.Tools())
			if _, err := reg.ReplaceSource(s.Name, bridge.Tools(sess, tools)); err != nil {
				failures = append(failures, fmt.Sprintf("server %s: %v", termtext.Quote(s.Name), err))
			}
		})
	}
	wg.Wait()
	defer func() {
		for _, s := range sessions {
			_ = s.Close()
		}
	}()
	// Sorted, so that runs print alike (connects end in any order). What
	// servers said may hold terminal controls.
	slices.Sort(failures)
	for _, f := range failures {
		fmt.Fprintf(a.stderr, "Not searched: %s\n", termtext.Neutralize(f))
	}
	out := a.oneShotOrchestrator(reg, cfg, outputs, o).Run(ctx, []orchestrator.Call{{ID: "cli", Tool: defs.SearchToolID, Args: args}})[0]
	view := callView(out)
	view.Via = viaOneShot
	return a.printOutcome(view, out.Result.Text(), out.Err, o.asJSON)
}
