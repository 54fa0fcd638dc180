package serve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/mcp/auth"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// OneShotOptions configure NewOneShot. Of Options, Home, Root, Validator,
// LookupEnv, the reasons and remedies, Approver, Elicit,
// ElicitationTimeout and Logger apply; Sources.User is the config file
// the built-ins protect and the status names.
type OneShotOptions struct {
	Options
	// Config is the loaded configuration whose permission rules and call
	// limits apply (required).
	Config *schema.Config
	// Servers are the servers to start, each once, whether the config
	// enables them or not (a command asked for them). Held servers do not
	// belong here.
	Servers []schema.Server
	// Partial: a server that fails to start is left out (Failed lists it)
	// rather than failing NewOneShot.
	Partial bool
	// Launcher starts the local servers (nil: package mcp starts them
	// itself). NewOneShot makes this process no subreaper: a Launcher
	// built on one (ReaperLauncher) is how a caller asks for that.
	Launcher mcp.Launcher
	// Tokens is the remote servers' token store; nil: the home's, opened
	// (and created) only when a server signs in.
	Tokens *auth.Store
	// StartBound, if set, replaces controller.WorkingTimeout as how long a
	// start may go on while the server is still working.
	StartBound time.Duration
	// OnStderr, if set, gets each line a local server writes to stderr;
	// OnStillWorking each time a start goes on past its budget because
	// the server is still working (mcp.Options' fields, with the server's
	// name). Both may be called from several servers' starts at once.
	OnStderr       func(server, line string)
	OnStillWorking func(server, how string, spent, budget time.Duration)
}

// OneShot is an api.Engine over the servers one command needs: the Core
// of serve with the command's config applied once — no config or token
// watcher, no socket, no lock on the home, no guard process — its
// servers started once and never restarted. NewOneShot returns once each
// of them is ready or failed; Close stops them all.
type OneShot struct {
	*Core

	stop context.CancelFunc
	done chan struct{} // closed when the controller has stopped every server

	mu     sync.Mutex       // guards dialed
	dialed map[string]error // each server's first start: nil when it connected
	failed []*StartError    // the servers left out (Partial), in the order of Servers
}

// StartError is the failed start of a server of a OneShot. Err is the
// start's own error, as package mcp returned it (mcp.ExitError,
// mcp.StartTimeoutError, mcp.ErrNeedsLogin, …), so that a caller can
// branch on it with errors.Is and errors.As.
type StartError struct {
	Server string
	Err    error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

// errNotRetried is the outcome of a second start of a OneShot's server:
// the command's engine starts each server once.
var errNotRetried = errors.New("a one-shot engine starts each server once")

// NewOneShot builds the engine of opts, starts its servers and waits for
// each one's first outcome, or ctx. A server that fails to start is the
// error (a *StartError), unless opts.Partial; so is ctx ending first.
// On error nothing it started is left running.
func NewOneShot(ctx context.Context, opts OneShotOptions) (_ *OneShot, err error) {
	if opts.Config == nil {
		return nil, errors.New("serve: a one-shot engine needs a config")
	}
	c, err := newCore(opts.Options)
	if err != nil {
		return nil, err
	}
	c.tokens = opts.Tokens
	if c.tokens == nil && slices.ContainsFunc(opts.Servers, schema.Server.SignsIn) {
		if c.tokens, err = auth.OpenStore(TokenDir(opts.Home)); err != nil {
			return nil, err
		}
	}
	if err := c.assemble(); err != nil {
		return nil, err
	}
	o := &OneShot{Core: c, dialed: map[string]error{}, done: make(chan struct{})}
	// No server is asked twice: nothing retries, probes or restarts
	// within a command, whose outcome is that of the first start.
	c.finish(controller.Options{Dial: o.dialer(opts), Probe: func(context.Context, schema.Server) error { return errNotRetried },
		ProbeInterval: -1, Backoff: controller.Backoff{Initial: time.Hour, Max: time.Hour, Jitter: -1},
		// What the command learns of a server is stored for on-demand ones.
		Manifests: manifestStore(opts.Home, opts.Logger)})

	cfg := opts.Config
	c.rules.set(cfg)
	// Nothing outlives the command to load a deferred definition into:
	// every tool is advertised, and tool_search searches them all.
	c.Defs.SetPolicy(defs.Policy{Project: ProjectServers(cfg)})
	servers := make([]schema.Server, len(opts.Servers))
	for i, s := range opts.Servers {
		s.Enabled = true
		// A command starts what it needs once and stops it when done:
		// there is no idle time to wait for.
		s.Lifecycle = schema.LifecycleAlways
		servers[i] = s
		c.first = append(c.first, s.Name)
	}
	c.Controller.SetDesired(servers, cfg.MCP.PollInterval)
	close(c.applied)

	runCtx, stop := context.WithCancel(context.Background())
	o.stop = stop
	go func() {
		defer close(o.done)
		_ = c.Controller.Start(runCtx) // returns nil once every server is gone
	}()
	defer func() {
		if err != nil {
			o.Close()
		}
	}()
	if !c.Settled(ctx) {
		return nil, fmt.Errorf("starting %s: %w", serverList(c.first), context.Cause(ctx))
	}
	st := c.Controller.Status()
	for _, s := range servers {
		if serr := o.startError(s.Name, st); serr != nil {
			if !opts.Partial {
				return nil, serr
			}
			o.failed = append(o.failed, serr)
		}
	}
	return o, nil
}

// dialer dials each server once with mcp.Connect, as opts says, and
// keeps the outcome; a later dial is errNotRetried.
func (o *OneShot) dialer(opts OneShotOptions) controller.Dialer {
	log := opts.Logger
	base := mcp.Options{Logger: log.WithName("mcp"), ClientName: "freecode", Launcher: opts.Launcher, Tokens: o.tokens,
		Schemas: mcp.NewSchemaCache(schemaCacheSize), Protocols: protocolCache(opts.Home, log),
		Elicit: o.auditedElicit(opts.Elicit), ElicitTimeout: opts.ElicitationTimeout, Telemetry: opts.Telemetry}
	return func(ctx context.Context, srv schema.Server) (controller.Conn, error) {
		o.mu.Lock()
		_, again := o.dialed[srv.Name]
		o.mu.Unlock()
		if again {
			return nil, errNotRetried
		}
		mo := base
		mo.WorkingTimeout = controller.WorkingTimeout(srv.Timeout)
		if opts.StartBound > 0 {
			mo.WorkingTimeout = max(opts.StartBound, srv.Timeout)
		}
		if f := opts.OnStderr; f != nil {
			mo.OnStderr = func(line string) { f(srv.Name, line) }
		}
		if f := opts.OnStillWorking; f != nil {
			mo.OnStillWorking = func(how string, spent, budget time.Duration) { f(srv.Name, how, spent, budget) }
		}
		if a := controller.AttemptFrom(ctx); a.OnProcess != nil {
			mo.OnProcess = func(pid int, _ <-chan struct{}) { a.OnProcess(pid) }
		}
		sess, err := mcp.Connect(ctx, controller.MCPSpec(srv), mo)
		o.mu.Lock()
		o.dialed[srv.Name] = err
		o.mu.Unlock()
		if err != nil {
			return nil, err
		}
		return sess, nil
	}
}

// startError is the failed first start of server name, whose status is
// in st, or nil when it is ready.
func (o *OneShot) startError(name string, st wire.Status) *StartError {
	i := slices.IndexFunc(st.Servers, func(s wire.ServerStatus) bool { return s.Name == name })
	if i >= 0 && st.Servers[i].Phase == wire.PhaseReady {
		return nil
	}
	o.mu.Lock()
	err := o.dialed[name]
	o.mu.Unlock()
	if err == nil {
		// Connected, yet not ready: the controller says why.
		msg := fmt.Sprintf("server %q did not start", name)
		if i >= 0 && st.Servers[i].LastError != "" {
			msg = fmt.Sprintf("server %q: %s", name, st.Servers[i].LastError)
		}
		err = errors.New(msg)
	}
	return &StartError{Server: name, Err: err}
}

// Failed lists the servers that failed to start (with Partial), in the
// order they were given.
func (o *OneShot) Failed() []*StartError { return o.failed }

// Close stops every server and returns once all of them are gone (their
// processes reaped). It may be called more than once.
func (o *OneShot) Close() {
	o.stop()
	<-o.done
	o.closeAudit()
}

// serverList names servers for an error: `"a"`, `"a", "b"`.
func serverList(names []string) string {
	if len(names) == 0 {
		return "the built-in tools"
	}
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%q", n)
	}
	return out
}
