package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// How a command reaches a server (`mcp call`, `mcp tools`): through the
// running serve of the home — the same session, the same approvals, no
// second copy of the server — when there is one that runs exactly the
// server the command would start, else in a one-shot session of its own.
const (
	viaServe   = "serve"
	viaOneShot = "one-shot"
)

// route is how one command reaches one server.
type route struct {
	// client is the serve to go through; nil for a one-shot session.
	client   *api.Client
	servePID int
	// server is serve's status of the server (when client is set).
	server wire.ServerStatus
	// why says why a one-shot session it is.
	why string
}

// describe is the route for -v.
func (r route) describe() string {
	if r.client != nil {
		return fmt.Sprintf("through freecode serve (pid %d)", r.servePID)
	}
	return "in a one-shot session: " + r.why
}

// close releases the client, if any.
func (r route) close() {
	if r.client != nil {
		r.client.Close()
	}
}

// serveRoute decides how to reach srv, configured in cfg: through the serve
// of this home only if one runs, watches the same config file, and runs the
// same definition of srv (its spec hash: the same file, project and
// environment give the same resolved server); a disabled server, which
// serve does not run, is reached one-shot, as a test (mcp start, mcp
// tools). mcp call refuses a disabled server's tool before it asks.
func (a *app) serveRoute(ctx context.Context, cfg *schema.Config, srv schema.Server) route {
	client, home, err := a.dialServe()
	if errors.Is(err, api.ErrNotRunning) {
		return route{why: fmt.Sprintf("freecode serve is not running for %s", home)}
	}
	if err != nil {
		return route{why: "cannot reach freecode serve: " + err.Error()}
	}
	st, err := client.Status(ctx)
	if err != nil {
		client.Close()
		return route{why: "cannot reach freecode serve: " + err.Error()}
	}
	r := route{why: a.unlikeServe(st, cfg, srv)}
	if r.why != "" {
		client.Close()
		return r
	}
	for _, s := range st.Servers {
		if s.Name == srv.Name {
			r.server = s
		}
	}
	r.client, r.servePID = client, st.ServePID
	return r
}

// unlikeServe says why serve, whose status is st, does not run srv as this
// command would ("" when it does).
func (a *app) unlikeServe(st wire.Status, cfg *schema.Config, srv schema.Server) string {
	if filepath.Clean(st.ConfigPath) != filepath.Clean(cfg.Path) {
		return fmt.Sprintf("freecode serve (pid %d) watches another config file, %s", st.ServePID, st.ConfigPath)
	}
	for _, s := range st.Servers {
		if s.Name != srv.Name {
			continue
		}
		switch {
		case s.Desired.SpecHash != srv.SpecHash():
			return fmt.Sprintf("freecode serve (pid %d) runs another definition of %q (its environment or project differs)", st.ServePID, srv.Name)
		case !s.Desired.Enabled:
			return fmt.Sprintf("server %q is disabled, so freecode serve does not run it", srv.Name)
		case s.Desired.ToolsFilter != srv.Tools.Key():
			// serve may still register a tool this filter hides.
			return fmt.Sprintf("freecode serve (pid %d) has not applied this tools filter of %q yet", st.ServePID, srv.Name)
		}
		return ""
	}
	return fmt.Sprintf("freecode serve (pid %d) does not know server %q (its project differs)", st.ServePID, srv.Name)
}

// notReady is the error of a server that serve runs but that is not ready:
// its phase, its last error and where to look.
func notReady(s wire.ServerStatus) error {
	msg := fmt.Sprintf("server %q is not ready under freecode serve (phase %s)", s.Name, s.Phase)
	if s.LastError != "" {
		msg += ": " + s.LastError
	}
	return fmt.Errorf("%s\nsee `freecode mcp status` and `freecode mcp logs %s`", msg, s.Name)
}

// starting reports whether a server in phase p is on its way to ready.
func starting(p wire.Phase) bool {
	return p == wire.PhasePending || p == wire.PhaseStarting
}

// waitStarted waits, on serve's events, until server name is no longer
// pending or starting (it is ready, or failed), and returns its status.
func (a *app) waitStarted(ctx context.Context, client *api.Client, name string) (wire.ServerStatus, error) {
	events, err := client.Events(ctx)
	if err != nil {
		return wire.ServerStatus{}, err
	}
	defer events.Close()
	fmt.Fprintf(a.stderr, "Waiting for server %q to start under freecode serve…\n", name)
	for {
		st, err := client.Status(ctx)
		if err != nil {
			return wire.ServerStatus{}, err
		}
		i := slices.IndexFunc(st.Servers, func(s wire.ServerStatus) bool { return s.Name == name })
		switch {
		case i < 0:
			return wire.ServerStatus{}, fmt.Errorf("server %q is no longer configured in freecode serve", name)
		case !starting(st.Servers[i].Phase):
			return st.Servers[i], nil
		}
		if _, err := events.Next(); err != nil {
			if ctx.Err() != nil {
				return wire.ServerStatus{}, ctx.Err()
			}
			return wire.ServerStatus{}, fmt.Errorf("freecode serve stopped: %w", err)
		}
	}
}

// userConfig is the config file this command reads, as an absolute path
// (serve reports its own so).
func (a *app) userConfig() (string, error) {
	path, err := a.configPath()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("config path %s: %w", path, err)
	}
	return abs, nil
}

// otherConfig says why serve, whose status is st, is not this command's:
// it reads another config file than path ("" when it reads path, however
// named).
func otherConfig(st wire.Status, path string) string {
	if samePath(st.ConfigPath, path) {
		return ""
	}
	return fmt.Sprintf("freecode serve (pid %d) reads another config file, %s, not %s", st.ServePID, st.ConfigPath, path)
}

// otherConfigRemedy is what to do when serve reads another config file
// than this command: drop the --config that names another one, or name
// serve's.
func (a *app) otherConfigRemedy(st wire.Status) string {
	if a.configFlag != "" {
		return "drop --config, or run another serve with its own FREECODE_HOME"
	}
	return "pass --config " + termtext.ShellWord(st.ConfigPath) + ", or restart serve without --config"
}

// dialServeOf connects to the serve of this home for c, a verb that only
// works through serve. Its error says that serve is not running, or that
// it reads another config file than this command: its servers are not the
// ones the command names.
func (a *app) dialServeOf(c *cobra.Command) (*api.Client, error) {
	client, home, err := a.dialServe()
	if err != nil {
		return nil, needServe(home, err)
	}
	st, err := client.Status(c.Context())
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("freecode serve: %w", err)
	}
	path, err := a.userConfig()
	if err != nil {
		client.Close()
		return nil, err
	}
	if why := otherConfig(st, path); why != "" {
		client.Close()
		return nil, fmt.Errorf("%s; `%s` acts on serve's servers: %s", why, c.CommandPath(), a.otherConfigRemedy(st))
	}
	return client, nil
}

// unlikeSources says why serve, whose status is st, does not run every
// server of cfg ("" when it does): it reads another config file, or
// another project's settings (or none, or some where cfg has none).
func unlikeSources(st wire.Status, cfg *schema.Config) string {
	src := schema.Sources{User: cfg.Path}
	if cfg.Project != nil {
		src.Project = cfg.Project.Path
	}
	return unlikeGateway(st, src, false, nil)
}

// lastValid is the running serve of this command's config file when
// loading it failed with loadErr, errors of that file (a half-saved edit,
// say): serve keeps the last valid config applied, and the command can
// answer from it. ok is false, and no client returned, when loadErr is
// something else or no such serve answers.
func (a *app) lastValid(ctx context.Context, loadErr error) (client *api.Client, st wire.Status, ok bool) {
	var errs schema.Errors
	path, err := a.userConfig()
	if err != nil || !errors.As(loadErr, &errs) || len(errs) == 0 {
		return nil, wire.Status{}, false
	}
	for _, e := range errs {
		if !samePath(e.File, path) {
			return nil, wire.Status{}, false
		}
	}
	client, _, err = a.dialServe()
	if err != nil {
		return nil, wire.Status{}, false
	}
	if st, err = client.Status(ctx); err != nil || otherConfig(st, path) != "" {
		client.Close()
		return nil, wire.Status{}, false
	}
	// A serve of another project runs that project's servers under its
	// rules: what this directory's command asks is not for it.
	if src, err := a.sources(); err != nil || unlikeGateway(st, src, false, nil) != "" {
		client.Close()
		return nil, wire.Status{}, false
	}
	return client, st, true
}

// lastValidRoute reaches server name ("" for serve's own tools, such as
// tool_search) through the serve that keeps the last valid config applied
// while the file has errors (loadErr, see lastValid), warning that it
// does. Its error is loadErr when no such serve runs, and says so when
// serve runs no enabled server of that name.
func (a *app) lastValidRoute(ctx context.Context, name string, loadErr error) (route, error) {
	client, st, ok := a.lastValid(ctx, loadErr)
	if !ok {
		return route{}, loadErr
	}
	r := route{client: client, servePID: st.ServePID}
	if name != "" {
		i := slices.IndexFunc(st.Servers, func(s wire.ServerStatus) bool { return s.Name == name && s.Desired.Enabled })
		if i < 0 {
			client.Close()
			return route{}, fmt.Errorf("%w\nfreecode serve (pid %d) keeps running the last valid config, which has no enabled server %q; fix the file first (`freecode mcp validate` shows every error)", loadErr, st.ServePID, name)
		}
		r.server = st.Servers[i]
	}
	fmt.Fprintf(a.stderr, "warning: %s\nfreecode serve (pid %d) keeps running the last valid config: going through it.\n", termtext.Neutralize(loadErr.Error()), st.ServePID)
	return r, nil
}
