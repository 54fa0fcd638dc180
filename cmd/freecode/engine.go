package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/serve"
)

// Every verb that reaches servers is written once, against the api.Engine
// its route opens: the running serve's client, or a one-shot engine
// (serve.OneShot) that starts the servers the command needs, once, in
// this process, and stops them when it ends.

// oneShotOpts are what a command's one-shot engine does beside starting
// its servers.
type oneShotOpts struct {
	// approver answers the calls a rule asks about (nil: a.approver(false),
	// which refuses them off a terminal).
	approver orchestrator.Approver
	// elicit answers the servers' elicitations (nil: none, and the
	// sessions declare no elicitation capability, as nobody could answer).
	elicit mcp.ElicitHandler
	// partial: a server that fails to start is left out (serve.OneShot.Failed)
	// rather than failing the command.
	partial bool
	// live, if set, shows a start's stderr and why it still waits (one
	// server); else the "still starting" notices go to stderr.
	live *startLive
}

// oneShot starts servers of cfg for the command (none: the built-ins
// alone) under cfg's rules and limits: local servers under the reapers of
// a.processes, remote ones with the home's tokens, a start still working
// waited for as serve waits (bound by a.startBound when set). A failed
// start is a *serve.StartError (unless o.partial). Close the engine when
// done.
func (a *app) oneShot(ctx context.Context, cfg *schema.Config, servers []schema.Server, o oneShotOpts) (*serve.OneShot, error) {
	home, err := a.home()
	if err != nil {
		return nil, err
	}
	v, err := a.schema()
	if err != nil {
		return nil, err
	}
	so := serve.OneShotOptions{
		Options: serve.Options{Home: home, Sources: schema.Sources{User: cfg.Path}, Validator: v, LookupEnv: a.lookupEnv,
			Approver: o.approver, Elicit: o.elicit, Logger: logr.Discard()},
		Config: cfg, Servers: servers, Partial: o.partial, StartBound: a.startBound,
		OnStillWorking: func(name, how string, spent, budget time.Duration) {
			a.noticeMu.Lock()
			defer a.noticeMu.Unlock()
			fmt.Fprintf(a.stderr, "%s: %s\n", name, stillStarting(how, spent, budget))
		},
	}
	if so.Approver == nil {
		so.Approver = a.approver(false)
	}
	if o.live != nil {
		so.OnStderr = func(_, line string) { o.live.line(line) }
		so.OnStillWorking = func(_, how string, spent, budget time.Duration) { o.live.working(how, spent, budget) }
	}
	if slices.ContainsFunc(servers, func(s schema.Server) bool { return s.Type != schema.Remote }) {
		// The reapers are set up here, on the command's goroutine (see
		// processes); the starts only use them.
		so.Launcher = a.launcher(logr.Discard())
	}
	if slices.ContainsFunc(servers, schema.Server.SignsIn) {
		if so.Tokens, err = a.tokenStore(true); err != nil {
			return nil, err
		}
	}
	return serve.NewOneShot(ctx, so)
}

// startErr is the start's own error of a *serve.StartError (what package
// mcp said), else err.
func startErr(err error) error {
	if se, ok := errors.AsType[*serve.StartError](err); ok {
		return se.Err
	}
	return err
}

// withServer runs verb, one of a single server's verbs, on the engine
// serveRoute picks: serve's (once the server is ready there) or a
// one-shot engine of that server alone, whose failed start is the error
// with what to do about it. what says, with -v, what the verb does.
func (a *app) withServer(ctx context.Context, name string, verbose bool, what string, verb func(api.Engine) error) error {
	cfg, srv, err := a.configuredServer(name)
	var r route
	if err != nil {
		// A broken file: serve may still run the server.
		if r, err = a.lastValidRoute(ctx, name, err); err != nil {
			return err
		}
		srv.Name = name
	} else {
		r = a.serveRoute(ctx, cfg, srv)
	}
	defer r.close()
	if verbose {
		fmt.Fprintf(a.stderr, "%s %q %s.\n", what, srv.Name, r.describe())
	}
	if r.client != nil {
		if _, err := a.serveReady(ctx, r); err != nil {
			return err
		}
		return verb(r.client)
	}
	eng, err := a.oneShot(ctx, cfg, []schema.Server{srv}, oneShotOpts{})
	if err != nil {
		return a.withRemedy(srv, startErr(err))
	}
	defer eng.Close()
	return verb(eng)
}

// allEngine is the engine of a verb over every server (`mcp resources`,
// `mcp prompts` and `mcp tools` without a name): the serve of this
// config when it runs, else a one-shot engine of every enabled server,
// each failed start a warning on stderr. oneShot is nil through serve.
// Close it with closeAll.
func (a *app) allEngine(ctx context.Context, cfg *schema.Config, verbose bool) (eng api.Engine, oneShot *serve.OneShot, closeAll func(), err error) {
	client, home, err := a.dialServe()
	switch {
	case err == nil:
		// All of serve's servers are listed: those of its config file and
		// project, which must be this command's.
		st, err := client.Status(ctx)
		why := "cannot reach freecode serve: " + fmt.Sprint(err)
		if err == nil {
			why = unlikeSources(st, cfg)
		}
		if why == "" {
			if verbose {
				fmt.Fprintf(a.stderr, "Listing through freecode serve (pid %d).\n", st.ServePID)
			}
			return client, nil, client.Close, nil
		}
		client.Close()
		if verbose {
			fmt.Fprintf(a.stderr, "%s; connecting each server for the command.\n", why)
		}
	case verbose && errors.Is(err, api.ErrNotRunning):
		fmt.Fprintf(a.stderr, "freecode serve is not running for %s; connecting each server for the command.\n", home)
	}
	var servers []schema.Server
	for _, srv := range cfg.MCP.Servers {
		if srv.Enabled && srv.Hold == nil {
			servers = append(servers, srv)
		}
	}
	o, err := a.oneShot(ctx, cfg, servers, oneShotOpts{partial: true})
	if err != nil {
		return nil, nil, nil, err
	}
	for _, f := range o.Failed() {
		srv, _ := cfg.Server(f.Server)
		fmt.Fprintf(a.stderr, "warning: %s\n", termtext.Neutralize(a.withRemedy(srv, f.Err).Error()))
	}
	return o, o, o.Close, nil
}
