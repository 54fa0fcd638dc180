package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/audit"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/mcp/auth"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/telemetry"
	"github.com/freecode/freecode/wire"
)

// Core is the machinery `freecode serve` and the gateway (`freecode mcp
// serve` without a serve to attach to) share: the config watcher, the
// controller and its servers, the registry with the built-in tools, the
// provider definitions and the orchestrator under the config's rules. It
// holds no lock on the home and listens on nothing: Run adds the home lock
// and the local API around it.
//
// The exported fields are set by NewCore and only read after. Core is the
// api.Engine in process (engine.go).
type Core struct {
	Bus          *event.Bus
	Registry     *registry.Registry
	Defs         *defs.DefsCache
	Controller   *controller.Controller
	Orchestrator *orchestrator.Orchestrator

	// approvals and elicitations are the Engine's queues (Core.Approvals,
	// Core.Elicitations). approvals answers the orchestrator's asks unless
	// Options.Approver replaces it; elicitations the servers' elicitations
	// unless Options.Elicit does.
	approvals    *api.Approvals
	elicitations *api.Elicitations
	// calls numbers the calls that come without an id (CallWith).
	calls atomic.Uint64
	// audit records the calls (nil when the log could not be opened:
	// auditErr says why); stats counts them per server (audit.go).
	audit    *audit.Logger
	auditErr string
	stats    callStats

	opts      Options
	validator *schema.Validator
	lookupEnv func(string) (string, bool)
	rules     *rulesHolder
	// root is the directory the built-ins work in (Options.Root, or the
	// working directory).
	root      string
	tokens    *auth.Store
	guard     *procguard.Guard
	stopSweep func()
	// applied is closed once the first configuration is applied.
	applied     chan struct{}
	appliedOnce sync.Once
	// first names the servers of the first configuration; written
	// before applied is closed, then only read.
	first []string
}

// Part is one more long-lived part for Core.Run, such as an API or a
// gateway's transport: Run blocks until ctx ends or the part fails.
type Part struct {
	Name string
	Run  func(ctx context.Context) error
}

// NewCore builds the parts of opts (see Core). It makes this process a
// child subreaper and starts the guard process (see Run); Close releases
// them once Run has returned. An unusable home or token store is an error
// before anything is started.
func NewCore(opts Options) (_ *Core, err error) {
	c, err := newCore(opts)
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}

	// Every server runs under a reaper, and this process takes what a
	// killed reaper leaves; the guard covers this process and a reaper
	// dying together. The sweeping ends last, once every server is gone.
	reaper, sub, stopSweep := processes(log.WithName("procguard"))
	c.stopSweep = stopSweep
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	guardPath, guardFallback := procguard.Helper()
	g, gerr := procguard.StartGuard(procguard.GuardOptions{Path: guardPath, Fallback: guardFallback, Sub: sub, Logger: log.WithName("guard"), Stderr: stderr})
	if gerr != nil {
		log.Error(gerr, "no guard process: if this process and a server's reaper are killed together, what the server started may outlive them")
	} else {
		c.guard = g
	}

	// Remote servers' OAuth tokens: shared with `freecode mcp login` and
	// the other commands, each server's file under its own lock.
	if c.tokens, err = auth.OpenStore(TokenDir(opts.Home)); err != nil {
		return nil, err
	}
	if err := c.assemble(); err != nil {
		return nil, err
	}
	// The guard learns of each server's process group the moment it starts,
	// so a process killed during a long first start (an `npx -y` download)
	// takes the group with it too.
	// One schema cache for every session: restarts and re-lists of servers
	// whose tools did not change resolve and compile nothing. One protocol
	// cache too, kept in the home: a server whose revision is not pinned
	// is asked it once per definition, not at every restart or process.
	// The servers' elicitations wait for an answer through the API, unless
	// the caller answers them itself.
	elicit, elicitTimeout := c.auditedElicit(opts.Elicit), opts.ElicitationTimeout
	if elicit == nil {
		elicit = elicitThroughAPI(c.elicitations, log.WithName("elicitation"), c.auditElicitation)
		// The API's own timeout answers first; the session's is a backstop.
		elicitTimeout = c.elicitations.Timeout() + time.Minute
	}
	mcpOpts := mcp.Options{Logger: log.WithName("mcp"), ClientName: "freecode", OnProcess: c.guard.Track,
		Schemas: mcp.NewSchemaCache(schemaCacheSize), Launcher: ReaperLauncher(reaper, log.WithName("procguard")),
		Tokens: c.tokens, Protocols: protocolCache(opts.Home, log),
		Elicit: elicit, ElicitTimeout: elicitTimeout, Telemetry: opts.Telemetry}
	// Every connect stores the server's manifest, which advertises an
	// on-demand server without starting it (one store per home, shared
	// with the gateway and the one-shot commands).
	c.finish(controller.Options{Dial: controller.MCPDialer(mcpOpts), Probe: controller.MCPProber(mcpOpts),
		Manifests: manifestStore(opts.Home, log), Schemas: mcpOpts.Schemas})
	return c, nil
}

// newCore is the start of every Core (NewCore, NewOneShot): the validator,
// the environment and the root of opts, with their defaults.
func newCore(opts Options) (c *Core, err error) {
	c = &Core{opts: opts, validator: opts.Validator, lookupEnv: opts.LookupEnv, applied: make(chan struct{})}
	if c.validator == nil {
		if c.validator, err = schema.NewValidator(); err != nil {
			return nil, err
		}
	}
	if c.lookupEnv == nil {
		c.lookupEnv = os.LookupEnv
	}
	root := opts.Root
	if root == "" {
		if root, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
	}
	if c.root, err = filepath.Abs(root); err != nil {
		return nil, fmt.Errorf("working directory: %w", err)
	}
	return c, nil
}

// assemble builds the bus, the registry with the built-ins, the
// definitions and the elicitations' queue.
func (c *Core) assemble() error {
	home := c.opts.Home
	c.Bus = event.NewBus()
	c.Registry = registry.NewRegistry(c.Bus)
	// The home holds provider keys and trust decisions, and serve may well
	// run in a directory that contains it (~). Results over their cap are
	// kept in its outputs directory, which read may read.
	outputs := filepath.Join(home, orchestrator.OutputsDirName)
	// The definitions are deferred as the config says (the default
	// budget until it is applied); tool_search, a built-in, finds and
	// loads the deferred ones.
	c.Defs = defs.NewDefsCache(c.Registry, defs.Options{Policy: defs.Policy{Budget: schema.DefaultToolBudget}, Bus: c.Bus})
	search, err := c.Defs.SearchTool()
	if err != nil {
		return err
	}
	if err := registry.RegisterBuiltins(c.Registry, registry.BuiltinOptions{Root: c.root, Protected: []string{home, c.opts.Sources.User}, Outputs: outputs,
		Extra: []registry.Tool{search}}); err != nil {
		return err
	}
	c.elicitations = api.NewElicitations(c.Bus, c.opts.ElicitationTimeout)
	c.rules = &rulesHolder{phrase: c.opts.ProjectError, outputs: outputs}
	return nil
}

// finish builds the controller, dialing and probing as ctl says, the
// approvals' queue and the orchestrator.
func (c *Core) finish(ctl controller.Options) {
	opts, log := c.opts, c.opts.Logger
	ctl.Registry, ctl.Bus, ctl.Logger = c.Registry, c.Bus, log.WithName("controller")
	// The status and errors say what to do, as the commands do.
	ctl.HoldReason, ctl.LoginReason, ctl.Remedy = opts.HoldReason, opts.LoginReason, opts.Remedy
	ctl.SignIn = func(s schema.Server) *wire.SignIn { return SignIn(c.tokens, s) }
	c.Controller = controller.New(ctl)
	c.approvals = api.NewApprovals(c.Bus, 0)
	var approver orchestrator.Approver = c.approvals
	if opts.Approver != nil {
		approver = opts.Approver
	}
	c.openAudit()
	c.Orchestrator = orchestrator.New(orchestrator.Options{
		Registry:  c.Registry,
		Rules:     c.rules.get,
		Limits:    c.rules.limits,
		Approver:  approver,
		Report:    c.report,
		Logger:    log.WithName("orchestrator"),
		Telemetry: opts.Telemetry,
	})
}

// Settled waits until Run applied the first configuration and each of its
// servers got past its first start (ready, failed, waiting to retry, held
// or disabled), or ctx ends; it reports whether they did. A gateway waits
// so before it answers, so that its host's first list already holds the
// servers' tools.
func (c *Core) Settled(ctx context.Context) bool {
	ch, cancel := c.Bus.Subscribe(64)
	defer cancel()
	select {
	case <-c.applied:
	case <-ctx.Done():
		return false
	}
	for {
		if c.settled() {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// settled reports whether every server of the first configuration is past
// its first start.
func (c *Core) settled() bool {
	phases := map[string]wire.Phase{}
	for _, s := range c.Controller.Status().Servers {
		phases[s.Name] = s.Phase
	}
	for _, name := range c.first {
		switch phases[name] {
		case "", wire.PhasePending, wire.PhaseStarting:
			return false
		}
	}
	return true
}

// Rules returns the permission rules of the last valid configuration.
func (c *Core) Rules() orchestrator.Rules { return c.rules.get() }

// Run runs the controller, the config watcher, the token watcher and
// parts on one errgroup until ctx ends or one of them fails, then stops
// the parts, then every server, and returns once all of them are gone:
// nil after ctx ended, else the first failure, named by the part that
// failed.
//
// The servers stop after the parts (the API, a gateway) have returned, so
// that no client sees the tools go away on the way out: a gateway attached
// to this serve would take the empty list for a real change, tell its host,
// and answer its next calls "tool not found" until it ran the servers
// itself.
func (c *Core) Run(ctx context.Context, parts ...Part) error {
	log := c.opts.Logger
	// The first part to fail stops the others; each one's error is named.
	eg, ctx := errgroup.WithContext(ctx)
	serversCtx, stopServers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServers()
	run := func(name string, fn func() error) {
		eg.Go(func() error {
			if err := fn(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		})
	}
	run("controller", func() error { return c.Controller.Start(serversCtx) })
	run("config watcher", func() error {
		return controller.Watch(serversCtx, controller.WatchOptions{
			Sources: c.opts.Sources,
			Load: func(src schema.Sources, contents schema.Contents) (*schema.Config, error) {
				cfg, err := c.validator.Desired(src, contents, schema.LoadOptions{LookupEnv: c.lookupEnv})
				if err == nil && cfg.Project != nil && cfg.Project.Trust.Err != nil {
					log.Info("project settings ignored; the user config applies", "project", src.Project, "error", cfg.Project.Trust.Err.Error())
				}
				return cfg, err
			},
			OnApplied: func(cfg *schema.Config) {
				c.rules.set(cfg)
				c.Defs.SetPolicy(DefsPolicy(cfg))
				c.appliedOnce.Do(func() {
					for _, srv := range cfg.MCP.Servers {
						c.first = append(c.first, srv.Name)
					}
					close(c.applied)
				})
			},
			Controller: c.Controller,
			Logger:     log.WithName("config"),
		})
	})
	var running sync.WaitGroup // the parts
	for _, p := range parts {
		running.Add(1)
		run(p.Name, func() error {
			defer running.Done()
			return p.Run(ctx)
		})
	}
	stopObserving, obsErr := c.opts.Telemetry.Observe(c.observed)
	if obsErr != nil {
		log.Error(obsErr, "the servers' metrics are not observed")
	} else {
		defer stopObserving()
	}
	eg.Go(func() error {
		watchTokens(ctx, c.tokens, c.Controller, log.WithName("tokens"))
		return nil
	})
	<-ctx.Done()
	running.Wait()
	log.Info("stopping every server")
	stopServers()
	err := eg.Wait()
	log.Info("stopped")
	return err
}

// observed is what the telemetry's observed metrics report: each server's
// phase, starts, crashes and tools, the advertised definitions' tokens
// and the calls waiting for an approval.
func (c *Core) observed() telemetry.Snapshot {
	st := c.Controller.Status()
	s := telemetry.Snapshot{Servers: make([]telemetry.ServerState, 0, len(st.Servers))}
	for _, srv := range st.Servers {
		s.Servers = append(s.Servers, telemetry.ServerState{Name: srv.Name, Phase: string(srv.Phase),
			Starts: srv.Generation, Crashes: int64(srv.Crashes), Tools: int64(srv.Tools)})
	}
	s.DefinitionTokens = int64(c.Defs.Defs(defs.DialectJSONSchema).EstimatedTokens)
	if c.approvals != nil {
		s.ApprovalsWaiting = int64(len(c.approvals.Pending()))
	}
	return s
}

// Close ends the guard and the sweeping of orphans; call it once Run has
// returned (every server is gone then).
func (c *Core) Close() {
	c.closeAudit()
	if c.guard != nil {
		c.guard.Close()
		c.guard = nil
	}
	if c.stopSweep != nil {
		c.stopSweep()
		c.stopSweep = nil
	}
}
