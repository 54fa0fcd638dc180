package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/gofrs/flock"
	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
)

// serveFlags are serve's command-line options.
type serveFlags struct {
	logFormat string
	verbose   int
}

func (a *app) serveCmd() *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run the configured MCP servers and the local API",
		Long: `Run every enabled MCP server of the config and keep them in line with it:
edits to the config file are applied as they are saved, crashed servers are
restarted with backoff, and an invalid edit changes nothing until it is fixed.

The local API listens on $FREECODE_HOME/run/freecode.sock (only your user can
reach it); ` + "`freecode mcp status`, `restart` and `logs`" + ` talk to it.
Stop with Ctrl-C, SIGTERM or SIGHUP (its terminal closing): every server is
stopped before serve exits.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			switch f.logFormat {
			case "text", "json":
			default:
				return usageError{fmt.Errorf("--log-format must be text or json, not %q", f.logFormat)}
			}
			return a.serve(c.Context(), f)
		},
	}
	c.Flags().StringVar(&f.logFormat, "log-format", "text", "log format on stderr: text or json")
	c.Flags().CountVarP(&f.verbose, "verbose", "v", "log more (repeat for more detail; -v shows servers' stderr)")
	return c
}

// serve runs until ctx ends. Startup failures (another serve, an unusable
// home) return an error before anything is started.
func (a *app) serve(ctx context.Context, f serveFlags) (err error) {
	home, err := schema.Home(a.getenv)
	if err != nil {
		return err
	}
	src, err := a.sources()
	if err != nil {
		return err
	}
	cfgPath := src.User
	v, err := a.schema()
	if err != nil {
		return err
	}
	log := newLogger(a.stderr, f)

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
	reaper := a.processes(log.WithName("procguard"))
	g, err := procguard.StartGuard(procguard.GuardOptions{Path: procguard.SelfExe, Sub: a.sub, Logger: log.WithName("guard"), Stderr: a.stderr})
	if err != nil {
		log.Error(err, "no guard process: if serve and a server's reaper are killed together, what the server started may outlive them")
	} else {
		defer g.Close()
	}

	root, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("working directory: %w", err)
	}
	bus := event.NewBus()
	reg := registry.NewRegistry(bus)
	// The home holds provider keys and trust decisions, and serve may well
	// run in a directory that contains it (~).
	if err := registry.RegisterBuiltins(reg, registry.BuiltinOptions{Root: root, Protected: []string{home, cfgPath}}); err != nil {
		return err
	}
	// The guard learns of each server's process group the moment it starts,
	// so a serve killed during a long first start (an `npx -y` download)
	// takes the group with it too.
	// One schema cache for every session: restarts and re-lists of servers
	// whose tools did not change resolve and compile nothing.
	mcpOpts := mcp.Options{Logger: log.WithName("mcp"), ClientName: "freecode", OnProcess: g.Track,
		Schemas: mcp.NewSchemaCache(schemaCacheSize), Launcher: reaperLauncher{reaper: reaper, log: log.WithName("procguard")}}
	ctrl := controller.New(controller.Options{
		Registry: reg,
		Bus:      bus,
		Logger:   log.WithName("controller"),
		Dial:     controller.MCPDialer(mcpOpts),
		// The status and errors of serve say what to do, as the
		// commands do.
		HoldReason: holdReason,
	})
	rules := &rulesHolder{}
	approvals := api.NewApprovals(bus, 0)
	orch := orchestrator.New(orchestrator.Options{
		Registry: reg,
		Rules:    rules.get,
		Limits:   rules.limits,
		Approver: approvals,
		Logger:   log.WithName("orchestrator"),
	})
	srv := api.NewServer(api.Options{
		Status: func() api.Status {
			st := statusFromController(ctrl.Status())
			st.ServePID, st.ConfigPath = os.Getpid(), cfgPath
			st.ProjectError = rules.projectError()
			return st
		},
		Restart: func(name string) error {
			err := ctrl.Restart(name)
			switch {
			case errors.Is(err, controller.ErrUnknownServer):
				return api.WithStatus(err, http.StatusNotFound)
			case errors.Is(err, controller.ErrDisabled), errors.Is(err, controller.ErrHeld):
				return api.WithStatus(err, http.StatusConflict)
			}
			return err
		},
		Logs: func(name string) (api.Logs, error) {
			lines, err := ctrl.Logs(name)
			if errors.Is(err, controller.ErrUnknownServer) {
				return api.Logs{}, api.WithStatus(err, http.StatusNotFound)
			}
			if err != nil {
				return api.Logs{}, err
			}
			// The ring belongs to the start the status reflects; read
			// separately, so a restart in between may be attributed late.
			logs := api.Logs{Server: name, Lines: lines}
			for _, s := range ctrl.Status().Servers {
				if s.Name == name {
					logs.Session = s.ObservedGeneration
				}
			}
			return logs, nil
		},
		Bus:       bus,
		Defs:      defs.NewDefsCache(reg),
		Runner:    orch,
		Approvals: approvals,
		Logger:    log.WithName("api"),
	})

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
	)
	run := func(name string, fn func() error) {
		wg.Go(func() {
			if err := fn(); err != nil {
				errMu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("%s: %w", name, err)
				}
				errMu.Unlock()
				cancel()
			}
		})
	}
	run("controller", func() error { return ctrl.Start(ctx) })
	run("config watcher", func() error {
		return controller.Watch(ctx, controller.WatchOptions{
			Sources: src,
			Load: func(src schema.Sources, c schema.Contents) (*schema.Config, error) {
				cfg, err := v.Desired(src, c, schema.LoadOptions{LookupEnv: a.lookupEnv})
				if err == nil && cfg.Project != nil && cfg.Project.Trust.Err != nil {
					log.Info("project settings ignored; the user config applies", "project", src.Project, "error", cfg.Project.Trust.Err.Error())
				}
				return cfg, err
			},
			OnApplied:  rules.set,
			Controller: ctrl,
			Logger:     log.WithName("config"),
		})
	})
	run("api", func() error { return srv.Serve(ctx, ln) })
	log.Info("serving", "home", home, "config", cfgPath, "project", src.Project, "socket", api.SocketPath(home), "pid", os.Getpid())
	<-ctx.Done()
	log.Info("stopping every server")
	wg.Wait()
	log.Info("stopped")
	return firstErr
}

// schemaCacheSize bounds the shared schema cache: room for the distinct
// input schemas of many servers (10,000 tools with all-distinct schemas take
// about 150 MiB; most servers share schemas between tools).
const schemaCacheSize = 10000

func newLogger(w io.Writer, f serveFlags) logr.Logger {
	opts := &slog.HandlerOptions{
		Level: slog.Level(-f.verbose),
		// logr's V(n) is slog level -n; show it as DEBUG with the
		// verbosity, not as "DEBUG+3".
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if lv, ok := a.Value.Any().(slog.Level); ok && len(groups) == 0 && a.Key == slog.LevelKey && lv < slog.LevelInfo {
				return slog.String(slog.LevelKey, "DEBUG"+strconv.Itoa(-int(lv)))
			}
			return a
		},
	}
	// The log quotes servers' stderr (with -v) and errors. The text handler
	// quotes any value with a control character (strconv.Quote); the JSON
	// handler leaves DEL, C1 and bidi controls raw, which escapeJSONWriter
	// escapes.
	var h slog.Handler
	if f.logFormat == "json" {
		h = slog.NewJSONHandler(escapeJSONWriter{w}, opts)
	} else {
		h = slog.NewTextHandler(w, opts)
	}
	return logr.FromSlogHandler(h)
}

// escapeJSONWriter applies termtext.EscapeJSON to every write; slog's JSON
// handler writes each record (whole lines of JSON) in one.
type escapeJSONWriter struct{ w io.Writer }

func (e escapeJSONWriter) Write(p []byte) (int, error) {
	if _, err := e.w.Write(termtext.EscapeJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// homeLock is serve's exclusive lock on a FreeCode home.
type homeLock struct {
	fl *flock.Flock
}

// lockHome takes $home/run/serve.lock (creating run/ 0700) and writes this
// process's pid into it. Another serve holding it is an error naming its pid.
func lockHome(home string) (*homeLock, error) {
	dir := filepath.Join(home, "run")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	// MkdirAll keeps an existing directory's mode; the socket's privacy
	// rests on this one.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("make %s private: %w", dir, err)
	}
	path := filepath.Join(dir, "serve.lock")
	fl := flock.New(path, flock.SetPermissions(0o600))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		holder := "unknown pid"
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			holder = "pid " + string(bytes.TrimSpace(b))
		}
		return nil, fmt.Errorf("freecode serve is already running for %s (%s holds %s); stop it first, or set FREECODE_HOME to use another home", home, holder, path)
	}
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &homeLock{fl: fl}, nil
}

func (l *homeLock) release() {
	// The pid is cleared before the lock goes, so the file never names a
	// serve that is gone while another one holds it.
	_ = os.Truncate(l.fl.Path(), 0)
	_ = l.fl.Unlock()
}

// listenSocket listens on the unix socket path (0600). The caller holds the
// home lock, so a socket file already there was left by a serve that died
// without cleaning up, and is removed.
func listenSocket(path string, log logr.Logger) (net.Listener, error) {
	if err := os.Remove(path); err == nil {
		log.Info("removed a stale socket left by an earlier serve", "socket", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, fmt.Errorf("make %s private: %w", path, err)
	}
	return ln, nil
}

// rulesHolder keeps what serve takes from the last valid configuration
// besides its servers: the permission rules and call limits for the
// orchestrator, which reads them on every batch, and why the project is
// ignored, for the status. Before the first configuration is applied the
// limits are the defaults.
type rulesHolder struct {
	mu         sync.Mutex // guards rules, lim and projectErr
	rules      orchestrator.Rules
	lim        *orchestrator.Limits
	projectErr string
}

func (r *rulesHolder) get() orchestrator.Rules {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rules
}

func (r *rulesHolder) limits() orchestrator.Limits {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lim == nil {
		return orchestrator.Limits{CallTimeout: schema.DefaultCallTimeout}
	}
	return *r.lim
}

func (r *rulesHolder) set(cfg *schema.Config) {
	lim := callLimits(cfg)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rules = orchestrator.Rules(cfg.Permission)
	r.lim = &lim
	r.projectErr = projectError(cfg)
}

func (r *rulesHolder) projectError() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.projectErr
}

// callLimits are the orchestrator's limits for cfg: mcp.maxArgumentBytes,
// mcp.callTimeout for every tool, and each server's callTimeout for its own.
func callLimits(cfg *schema.Config) orchestrator.Limits {
	lim := orchestrator.Limits{MaxArgumentBytes: cfg.MCP.MaxArgumentBytes, CallTimeout: cfg.MCP.CallTimeoutOf(schema.Server{})}
	for _, s := range cfg.MCP.Servers {
		if s.CallTimeout > 0 {
			if lim.SourceCallTimeouts == nil {
				lim.SourceCallTimeouts = map[string]time.Duration{}
			}
			lim.SourceCallTimeouts[s.Name] = s.CallTimeout
		}
	}
	return lim
}

func statusFromController(cs controller.Status) api.Status {
	st := api.Status{ConfigError: cs.ConfigError, ObservedAt: cs.ObservedAt, Servers: make([]api.ServerStatus, 0, len(cs.Servers))}
	for _, s := range cs.Servers {
		st.Servers = append(st.Servers, api.ServerStatus{
			Name: s.Name, Source: s.Source,
			Desired: api.Desired{Enabled: s.Desired.Enabled, SpecHash: s.Desired.SpecHash, Type: s.Desired.Type, Target: s.Desired.Target},
			Phase:   s.Phase.String(), SpecHash: s.SpecHash,
			Generation: s.Generation, ObservedGeneration: s.ObservedGeneration,
			PID: s.PID, Tools: s.Tools, Restarts: s.Restarts, Since: s.Since,
			LastError: s.LastError, StderrTail: s.StderrTail, NextRetry: s.NextRetry, Reason: s.Reason,
			LastFailure: s.LastFailure, LastFailureAt: s.LastFailureAt,
		})
	}
	return st
}
