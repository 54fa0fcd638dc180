package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/serve"
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
reach it); ` + "`freecode mcp status`, `restart`, `logs` and `approvals`" + ` talk to it,
and ` + "`mcp call` and `mcp tools`" + ` go through it.
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

// serve runs the daemon (serve.Run) until ctx ends. Startup failures
// (another serve, an unusable home) return an error before anything is
// started.
func (a *app) serve(ctx context.Context, f serveFlags) error {
	so, err := a.serveOptions(newLogger(a.stderr, f))
	if err != nil {
		return err
	}
	tel, shutdown := a.telemetry(ctx, so.Logger.WithName("telemetry"))
	defer shutdown()
	so.Telemetry = tel
	return serve.Run(ctx, so)
}

// serveOptions are what serve.Run (and the gateway's own servers) run
// with: this invocation's home, config sources and validator, the words of
// the remedies, and log.
func (a *app) serveOptions(log logr.Logger) (serve.Options, error) {
	home, err := schema.Home(a.getenv)
	if err != nil {
		return serve.Options{}, err
	}
	src, err := a.sources()
	if err != nil {
		return serve.Options{}, err
	}
	v, err := a.schema()
	if err != nil {
		return serve.Options{}, err
	}
	return serve.Options{
		Home:         home,
		Sources:      src,
		Validator:    v,
		LookupEnv:    a.lookupEnv,
		ProjectError: projectError,
		HoldReason:   holdReason,
		LoginReason:  loginRemedy,
		Remedy:       a.remedy,
		Logger:       log,
		Stderr:       a.stderr,
	}, nil
}

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
