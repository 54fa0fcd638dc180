// Package serve is the daemon behind `freecode serve`: it composes the
// config watcher, the controller, the registry with its built-in tools, the
// orchestrator and the local API, runs them on one errgroup, and guards the
// processes the servers start.
package serve

import (
	"context"
	"io"
	"os"
	"time"

	"github.com/go-logr/logr"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/telemetry"
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
	// Approver answers the orchestrator's asks (nil: the API's approvals,
	// which a client of the API answers).
	Approver orchestrator.Approver
	// Elicit answers the servers' elicitations (nil: through the API, see
	// elicitThroughAPI); ElicitationTimeout then bounds each one's wait as
	// mcp.Options.ElicitTimeout does.
	Elicit mcp.ElicitHandler
	// ElicitationTimeout bounds how long a server's elicitation waits for
	// an answer through the API before the server is sent "cancel" (0:
	// api.DefaultElicitationTimeout).
	ElicitationTimeout time.Duration
	// Logger gets serve's log; Stderr the guard process's own output (nil:
	// os.Stderr).
	Logger logr.Logger
	Stderr io.Writer
	// Telemetry records the servers' requests, the tool calls and the
	// metrics (telemetry.New; nil: off). The caller owns it and shuts it
	// down after Run returned.
	Telemetry *telemetry.Telemetry
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
// first. So a process runs one Run (or one Core) at a time, and starts any
// other child that gets a process group of its own through procguard.
func Run(ctx context.Context, opts Options) (err error) {
	home, log := opts.Home, opts.Logger
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

	core, err := NewCore(opts)
	if err != nil {
		return err
	}
	defer core.Close()
	srv := api.NewServer(core, api.ServerOptions{Logger: log.WithName("api")})
	log.Info("serving", "home", home, "config", opts.Sources.User, "project", opts.Sources.Project, "socket", api.SocketPath(home), "pid", os.Getpid())
	return core.Run(ctx, Part{Name: "api", Run: func(ctx context.Context) error { return srv.Serve(ctx, ln) }})
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
		return procguard.NewHelperReaper(nil), nil, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sub.Run(ctx)
	}()
	return procguard.NewHelperReaper(sub), sub, func() {
		cancel()
		<-done
	}
}
