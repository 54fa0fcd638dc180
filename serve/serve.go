// Package serve is the daemon behind `freecode serve`: it composes the
// config watcher, the controller, the registry with its built-in tools, the
// orchestrator and the local API, runs them on one errgroup, and guards the
// processes the servers start.
package serve

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/api/wire"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/mcp/auth"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
)

// Options configure Run. Home and Sources are required.
type Options struct {
	// Home is the FreeCode home: run/ in it holds the lock and the socket
	// (api.SocketPath).
	Home string
	// Sources are the files of the desired state; Sources.User is the
	// config file the status names.
	Sources schema.Sources
	// Validator checks the config (nil: a new schema.NewValidator).
	Validator *schema.Validator
	// LookupEnv resolves ${VAR} in the config (nil: os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Root is the directory the built-in tools work in ("": the working
	// directory).
	Root string
	// ProjectError says, for the status, why the project's settings are
	// ignored ("" when they are not); nil: the reason schema gives.
	ProjectError func(*schema.Config) string
	// HoldReason phrases why a held server does not run, with what to do
	// about it, for the status and restart errors (controller.Options).
	HoldReason func(*schema.Hold) string
	// LoginReason phrases what a server in the needs-login phase waits
	// for (controller.Options).
	LoginReason func(name string) string
	// Remedy says what to do about a server's failure, for the status and
	// the log (controller.Options); nil: nothing beyond the error.
	Remedy func(srv schema.Server, err error) string
	// ElicitationTimeout bounds how long a server's elicitation waits for
	// an answer through the API before the server is sent "cancel" (0:
	// api.DefaultElicitationTimeout).
	ElicitationTimeout time.Duration
	// Logger gets serve's log; Stderr the guard process's own output (nil:
	// os.Stderr).
	Logger logr.Logger
	Stderr io.Writer
}

// schemaCacheSize bounds the shared schema cache: room for the distinct
// input schemas of many servers (10,000 tools with all-distinct schemas take
// about 150 MiB; most servers share schemas between tools).
const schemaCacheSize = 10000

// Run runs the daemon until ctx ends or a part of it fails, then stops
// every server and returns once all of them are gone: nil after ctx ended,
// else the first failure, named by the part that failed. Startup failures
// (another serve holds the home, an unusable home) return an error before
// anything is started.
//
// Run makes this process a child subreaper that kills the foreign children
// reparented to it (see procguard.Subreaper) and runs reapers and the
// guard as this same executable, whose main must call procguard.Dispatch
// first. So a process runs one Run at a time, and starts any other child
// that gets a process group of its own through procguard.
func Run(ctx context.Context, opts Options) (err error) {
	home, src, log := opts.Home, opts.Sources, opts.Logger
	cfgPath := src.User
	v := opts.Validator
	if v == nil {
		if v, err = schema.NewValidator(); err != nil {
			return err
		}
	}
	lookupEnv := opts.LookupEnv
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	root := opts.Root
	if root == "" {
		if root, err = os.Getwd(); err != nil {
			return fmt.Errorf("working directory: %w", err)
		}
	}

	lock, err := lockHome(home)
	if err != nil {
		return err
	}
	defer lock.release()
	ln, err := listenSocket(api.SocketPath(home), log)
	if err != nil {
		return err
	}
	defer ln.Close() // unlinks the socket file

	// Every server runs under a reaper, and serve takes what a killed
	// reaper leaves; the guard covers serve and a reaper dying together.
	// The sweeping ends last, once every server is gone.
	reaper, sub, stopSweep := processes(log.WithName("procguard"))
	defer stopSweep()
	g, err := procguard.StartGuard(procguard.GuardOptions{Path: procguard.SelfExe, Sub: sub, Logger: log.WithName("guard"), Stderr: stderr})
	if err != nil {
		log.Error(err, "no guard process: if serve and a server's reaper are killed together, what the server started may outlive them")
	} else {
		defer g.Close()
	}

	// Remote servers' OAuth tokens: shared with `freecode mcp login` and
	// the other commands, each server's file under its own lock.
	tokens, err := auth.OpenStore(TokenDir(home))
	if err != nil {
		return err
	}

	bus := event.NewBus()
	reg := registry.NewRegistry(bus)
	// The home holds provider keys and trust decisions, and serve may well
	// run in a directory that contains it (~). Results over their cap are
	// kept in its outputs directory, which read may read.
	outputs := filepath.Join(home, orchestrator.OutputsDirName)
	rules := &rulesHolder{phrase: opts.ProjectError, outputs: outputs}
	// The definitions are deferred as the config says; tool_search, a
	// built-in, finds and loads the deferred ones.
	defsCache := defs.NewDefsCache(reg, defs.Options{Policy: defs.Policy{Budget: schema.DefaultToolBudget}, Bus: bus})
	search, err := defsCache.SearchTool()
	if err != nil {
		return err
	}
	if err := registry.RegisterBuiltins(reg, registry.BuiltinOptions{Root: root, Protected: []string{home, cfgPath}, Outputs: outputs,
		Extra: []registry.Tool{search}}); err != nil {
		return err
	}
	// The guard learns of each server's process group the moment it starts,
	// so a serve killed during a long first start (an `npx -y` download)
	// takes the group with it too.
	// One schema cache for every session: restarts and re-lists of servers
	// whose tools did not change resolve and compile nothing. One protocol
	// cache too: a server with protocol "auto" is asked its revision once
	// per serve, not at every restart.
	// The servers' elicitations wait for an answer through the API.
	elicitations := api.NewElicitations(bus, opts.ElicitationTimeout)
	mcpOpts := mcp.Options{Logger: log.WithName("mcp"), ClientName: "freecode", OnProcess: g.Track,
		Schemas: mcp.NewSchemaCache(schemaCacheSize), Launcher: ReaperLauncher(reaper, log.WithName("procguard")),
		Tokens: tokens, Protocols: mcp.NewProtocolCache(),
		Elicit: elicitThroughAPI(elicitations, log.WithName("elicitation")),
		// The API's own timeout answers first; the session's is a backstop.
		ElicitTimeout: elicitations.Timeout() + time.Minute}
	ctrl := controller.New(controller.Options{
		Registry: reg,
		Bus:      bus,
		Logger:   log.WithName("controller"),
		Dial:     controller.MCPDialer(mcpOpts),
		Probe:    controller.MCPProber(mcpOpts),
		// The status and errors of serve say what to do, as the
		// commands do.
		HoldReason:  opts.HoldReason,
		LoginReason: opts.LoginReason,
		Remedy:      opts.Remedy,
		SignIn:      func(s schema.Server) *wire.SignIn { return SignIn(tokens, s) },
	})
	approvals := api.NewApprovals(bus, 0)
	orch := orchestrator.New(orchestrator.Options{
		Registry: reg,
		Rules:    rules.get,
		Limits:   rules.limits,
		Approver: approvals,
		Logger:   log.WithName("orchestrator"),
	})
	be := backend{ctrl: ctrl, cfgPath: cfgPath, rules: rules}
	srv := api.NewServer(api.Options{
		Backend:      be,
		Features:     be,
		Bus:          bus,
		Defs:         defsCache,
		Runner:       orch,
		Approvals:    approvals,
		Elicitations: elicitations,
		Logger:       log.WithName("api"),
	})

	// The first part to fail stops the others; each one's error is named.
	eg, ctx := errgroup.WithContext(ctx)
	run := func(name string, fn func() error) {
		eg.Go(func() error {
			if err := fn(); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			return nil
		})
	}
	run("controller", func() error { return ctrl.Start(ctx) })
	run("config watcher", func() error {
		return controller.Watch(ctx, controller.WatchOptions{
			Sources: src,
			Load: func(src schema.Sources, c schema.Contents) (*schema.Config, error) {
				cfg, err := v.Desired(src, c, schema.LoadOptions{LookupEnv: lookupEnv})
				if err == nil && cfg.Project != nil && cfg.Project.Trust.Err != nil {
					log.Info("project settings ignored; the user config applies", "project", src.Project, "error", cfg.Project.Trust.Err.Error())
				}
				return cfg, err
			},
			OnApplied: func(cfg *schema.Config) {
				rules.set(cfg)
				defsCache.SetPolicy(DefsPolicy(cfg))
			},
			Controller: ctrl,
			Logger:     log.WithName("config"),
		})
	})
	run("api", func() error { return srv.Serve(ctx, ln) })
	eg.Go(func() error {
		watchTokens(ctx, tokens, ctrl, log.WithName("tokens"))
		return nil
	})
	log.Info("serving", "home", home, "config", cfgPath, "project", src.Project, "socket", api.SocketPath(home), "pid", os.Getpid())
	<-ctx.Done()
	log.Info("stopping every server")
	err = eg.Wait()
	log.Info("stopped")
	return err
}

// processes makes this process a child subreaper that kills the orphans a
// killed reaper leaves behind, logging to log, and returns the reaper the
// servers run under, the subreaper, and the function that ends the
// sweeping after a last sweep (once every server has ended). Without a
// subreaper (the kernel refused) the reaper still works; what a killed
// reaper leaves is then not cleaned up.
func processes(log logr.Logger) (*procguard.Reaper, *procguard.Subreaper, func()) {
	sub, err := procguard.NewSubreaper(log)
	if err != nil {
		log.Error(err, "what a killed reaper leaves behind will not be cleaned up")
		return procguard.NewReaper(procguard.SelfExe, nil), nil, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sub.Run(ctx)
	}()
	return procguard.NewReaper(procguard.SelfExe, sub), sub, func() {
		cancel()
		<-done
	}
}
