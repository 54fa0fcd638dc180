package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/schema"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// app is one invocation's environment: streams, variables and the config
// location. Nothing here is package-level, so tests run many in one process.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	// args is the command line as given (without the program name), for
	// an error that shows it corrected.
	args        []string
	configFlag  string
	projectFlag string
	validator   *schema.Validator

	// reaper runs the local servers this invocation starts; set up by
	// processes. stopSweep ends the subreaper's sweeping (nil when none
	// runs).
	reaper    *procguard.Reaper
	stopSweep func()

	// startBound, if set, replaces controller.MaxStartTimeout as the bound
	// of a one-shot start that is still working (it is the one-shot
	// engine's serve.OneShotOptions.StartBound): the command tests set it
	// to see such a start run out of time without waiting minutes. serve
	// keeps controller.MaxStartTimeout.
	startBound time.Duration
	// noticeMu serializes the start notices that the starts of a one-shot
	// engine, running in parallel, write to stderr.
	noticeMu sync.Mutex
}

// usageError marks an error caused by how the command was invoked.
type usageError struct{ error }

// silentError carries an exit code whose message was already printed.
type silentError struct{ code int }

func (e silentError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	return (&app{stdin: stdin, stdout: stdout, stderr: stderr, lookupEnv: lookupEnv}).run(args)
}

// run runs the command args and returns its exit code.
func (a *app) run(args []string) int {
	a.args = args
	defer a.stopProcesses()
	stdin, stdout, stderr := a.stdin, a.stdout, a.stderr
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var se silentError
	if errors.As(err, &se) {
		return se.code
	}
	// Errors quote config values and what servers said (stderr, error
	// messages): neither may act on the terminal.
	fmt.Fprintln(stderr, "Error:", termtext.Neutralize(err.Error()))
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitError
}

// processes returns the reaper that local servers run under (see package
// procguard). The first call also makes this process a child subreaper that
// kills the orphans a killed reaper leaves behind, logging to log, until
// the command ends. Call it from the command's goroutine.
func (a *app) processes(log logr.Logger) *procguard.Reaper {
	if a.reaper != nil {
		return a.reaper
	}
	sub, err := procguard.NewSubreaper(log)
	if err != nil {
		log.Error(err, "what a killed reaper leaves behind will not be cleaned up")
	} else {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			sub.Run(ctx)
		}()
		a.stopSweep = func() {
			cancel()
			<-done
		}
	}
	a.reaper = procguard.NewHelperReaper(sub)
	return a.reaper
}

// stopProcesses ends the subreaper's sweeping, after a last sweep that
// kills whatever orphan is left; every session has ended by then.
func (a *app) stopProcesses() {
	if a.stopSweep != nil {
		a.stopSweep()
	}
}

func (a *app) getenv(k string) string {
	v, _ := a.lookupEnv(k)
	return v
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "freecode",
		Short:         "FreeCode's MCP client host",
		Version:       buildVersion(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("freecode {{.Version}}\n")
	root.PersistentFlags().StringVar(&a.configFlag, "config", "", "config `FILE` (default $FREECODE_HOME/config.json, $FREECODE_HOME defaults to ~/.freecode)")
	root.PersistentFlags().StringVar(&a.projectFlag, "project", "", "project `DIR` whose .freecode/settings.json adds servers (default: found from the working directory up to the repository root)")
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		// Serve's API and the audit log know the command by this name:
		// the host of its calls, who answered an approval.
		c.SetContext(api.WithClient(c.Context(), fmt.Sprintf("%s (pid %d)", c.CommandPath(), os.Getpid())))
		return a.checkConfigFlag(c)
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usageError{fmt.Errorf("%w\nRun '%s --help' for usage", err, c.CommandPath())}
	})
	mcp := &cobra.Command{
		Use:   "mcp",
		Short: "Configure, start and inspect MCP servers",
	}
	mcp.AddCommand(a.addCmd(), a.removeCmd(), a.enableCmd(true), a.enableCmd(false),
		a.listCmd(), a.getCmd(), a.validateCmd())
	mcp.AddCommand(a.startCmd(), a.stopCmd(), a.toolsCmd(), a.callCmd())
	mcp.AddCommand(a.resourcesCmd(), a.readCmd(), a.promptsCmd(), a.promptCmd(), a.completeCmd())
	mcp.AddCommand(a.statusCmd(), a.restartCmd(), a.logsCmd())
	mcp.AddCommand(a.trustCmd(), a.untrustCmd())
	mcp.AddCommand(a.loginCmd(), a.logoutCmd())
	mcp.AddCommand(a.addJSONCmd(), a.importCmd())
	mcp.AddCommand(a.searchRegistryCmd(), a.installCmd(), a.outdatedCmd(), a.updateCmd())
	mcp.AddCommand(a.approvalsCmd(), a.answerCmd(true), a.answerCmd(false))
	mcp.AddCommand(a.elicitationsCmd(), a.gatewayCmd(), a.auditCmd())
	root.AddCommand(mcp, a.serveCmd())
	return root
}

// configPath is --config, else $FREECODE_HOME/config.json.
func (a *app) configPath() (string, error) {
	if a.configFlag != "" {
		return a.configFlag, nil
	}
	home, err := schema.Home(a.getenv)
	if err != nil {
		return "", err
	}
	return schema.ConfigPath(home), nil
}

// createsConfig reports whether verb writes the config file, creating it
// when it does not exist yet.
func createsConfig(verb string) bool {
	switch verb {
	case "add", "add-json", "import", "install":
		return true
	}
	return false
}

// checkConfigFlag refuses an explicit --config that names no file, for
// every verb but those that create it: a mistyped path
// would otherwise read as an empty config, or have serve watch a file
// nothing writes. The default config missing is nothing configured yet.
func (a *app) checkConfigFlag(c *cobra.Command) error {
	if a.configFlag == "" || createsConfig(c.Name()) || c.Name() == "help" || strings.HasPrefix(c.Name(), cobra.ShellCompRequestCmd) {
		return nil // (help and completion read no config)
	}
	if _, err := os.Stat(a.configFlag); !errors.Is(err, fs.ErrNotExist) {
		return nil // it exists, or reading it says what else is wrong
	}
	def := "$FREECODE_HOME/config.json"
	if home, err := schema.Home(a.getenv); err == nil {
		def = schema.ConfigPath(home)
	}
	return fmt.Errorf("--config %s: no such file; create it with `%s mcp add <name> local \"<command>\"` (or mcp add-json, mcp import), or drop --config to use %s",
		a.configFlag, termtext.ShellCommand("freecode", "--config", a.configFlag), def)
}

func (a *app) schema() (*schema.Validator, error) {
	if a.validator == nil {
		v, err := schema.NewValidator()
		if err != nil {
			return nil, err
		}
		a.validator = v
	}
	return a.validator, nil
}

// sources are the files of the desired state: the user config, the
// project's settings (if there are any) and the trust store.
func (a *app) sources() (schema.Sources, error) {
	cfgPath, err := a.configPath()
	if err != nil {
		return schema.Sources{}, err
	}
	if cfgPath, err = filepath.Abs(cfgPath); err != nil {
		return schema.Sources{}, fmt.Errorf("config path: %w", err)
	}
	home, err := schema.Home(a.getenv)
	if err != nil {
		return schema.Sources{}, err
	}
	src := schema.Sources{User: cfgPath, Trust: schema.TrustPath(home)}
	dir := a.projectFlag
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return schema.Sources{}, fmt.Errorf("working directory: %w", err)
		}
	}
	if p, ok := schema.FindProject(dir); ok && filepath.Dir(p) != home {
		// (The home's own directory is never a project: running from ~
		// must not read ~/.freecode/settings.json as one.)
		src.Project = p
	} else if a.projectFlag != "" {
		return schema.Sources{}, fmt.Errorf("--project %s: no %s there or above it in the repository", a.projectFlag, schema.ProjectFile)
	}
	return src, nil
}

// load reads the desired state: the user config plus the project's servers
// (held back until trusted). expand resolves ${VAR}; display commands pass
// false so that an unset variable does not hide the rest of the file.
func (a *app) load(expand bool) (*schema.Config, error) {
	src, err := a.sources()
	if err != nil {
		return nil, err
	}
	v, err := a.schema()
	if err != nil {
		return nil, err
	}
	return v.LoadDesired(src, schema.LoadOptions{LookupEnv: a.lookupEnv, NoExpand: !expand})
}

func (a *app) printJSON(v any) error {
	return writeJSON(a.stdout, v)
}

// writeJSON prints v as indented JSON. Strings keep the exact text (of a
// server, say), but the DEL, C1 and bidirectional controls that
// encoding/json leaves raw are written as \u escapes (termtext.EscapeJSON):
// the same value to a JSON reader, nothing to act on for a terminal.
func writeJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(termtext.EscapeJSON(buf.Bytes()))
	return err
}

// exactArgs is cobra.ExactArgs with a usage error.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s needs %s (got %d argument(s))\nUsage: %s", c.CommandPath(), names, len(args), c.UseLine())}
		}
		return nil
	}
}
