package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/gateway"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// gatewayFlags are `mcp serve`'s options.
type gatewayFlags struct {
	serveFlags
	builtins    bool
	http        string
	allowRemote bool
	noAttach    bool
	printConfig string
	server      string
}

func (a *app) gatewayCmd() *cobra.Command {
	var f gatewayFlags
	c := &cobra.Command{
		Use:   "serve",
		Short: "Serve every configured server's tools as one MCP server (the gateway)",
		Long: `Speak MCP as a server, over stdio (or streamable HTTP with --http), and
offer every configured server's tools behind it: github's create_issue is
listed as github__create_issue. Point a host (Claude Code, Cursor, VS Code,
Codex) at it instead of configuring each server in each host.

When freecode serve runs for the home with the same config file and project
(and, with --builtins, in the same directory), the gateway goes through it,
so every host shares one set of running servers, and runs them itself should
serve stop; otherwise it runs the servers itself until its host disconnects.
Calls go through the permission rules: a call that asks is put to the host as
an elicitation when the host can show one, and is refused otherwise, naming
what would let it through.

With --server NAME the gateway fronts that one server alone, under its own
names: its tools, resources, templates and prompts are listed as the server
lists them (create_issue, not github__create_issue), with the permission
rules, limits and (with --http) the bearer token of the gateway in front.

--print-config HOST prints what HOST (claude, cursor, vscode, codex) needs
in its config to start the gateway.`,
		Args: exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			switch f.logFormat {
			case "text", "json":
			default:
				return usageError{fmt.Errorf("--log-format must be text or json, not %q", f.logFormat)}
			}
			if f.server != "" && f.builtins {
				return usageError{errors.New("--server and --builtins do not go together: the gateway of one server lists that server's tools alone")}
			}
			if f.printConfig != "" {
				return a.printGatewayConfig(f)
			}
			return a.gateway(c.Context(), f)
		},
	}
	c.Flags().BoolVar(&f.builtins, "builtins", false, "list FreeCode's built-in tools (read, write) too")
	c.Flags().StringVar(&f.http, "http", "", "serve streamable HTTP on ADDR (host:port; loopback only unless --allow-remote) instead of stdio")
	c.Flags().BoolVar(&f.allowRemote, "allow-remote", false, "let --http listen on an address other hosts can reach")
	c.Flags().BoolVar(&f.noAttach, "no-attach", false, "run the servers in this process even when freecode serve runs")
	c.Flags().StringVar(&f.server, "server", "", "front this one configured server alone, under its own tool, resource and prompt names")
	c.Flags().StringVar(&f.printConfig, "print-config", "", "print the config snippet for a host: claude, cursor, vscode or codex")
	c.Flags().StringVar(&f.logFormat, "log-format", "text", "log format on stderr: text or json")
	c.Flags().CountVarP(&f.verbose, "verbose", "v", "log more (repeat for more detail)")
	return c
}

// gateway runs `mcp serve` until the host is gone or ctx ends.
func (a *app) gateway(ctx context.Context, f gatewayFlags) error {
	log := newLogger(a.stderr, f.serveFlags)
	so, err := a.serveOptions(log)
	if err != nil {
		return err
	}
	home, src := so.Home, so.Sources
	tel, shutdown := a.telemetry(ctx, log.WithName("telemetry"))
	defer shutdown()
	so.Telemetry = tel
	opts := gateway.Options{Builtins: f.builtins, Version: buildVersion(), Stdin: a.stdin, Stdout: a.stdout,
		ConfigPath: src.User, Logger: log.WithName("gateway"), Telemetry: tel}
	// What a host may send is bounded as what a server may: by the
	// file's mcp.limits, as the gateway starts. An invalid file is the
	// servers' to report; the defaults hold meanwhile.
	cfg, err := a.load(false)
	if err != nil {
		if f.server != "" {
			// Which servers there are is the file's to say.
			return fmt.Errorf("--server %s: %w", f.server, err)
		}
		cfg = schema.Empty("")
	}
	if f.server != "" {
		if err := checkServer(cfg, f.server); err != nil {
			return err
		}
		opts.Server = f.server
	}
	opts.MaxMessageBytes = cfg.MCP.Limits.MaxMessageBytes
	if f.http != "" {
		ln, err := listenGateway(f.http, f.allowRemote)
		if err != nil {
			return err
		}
		defer ln.Close()
		tok, err := gateway.LoadToken(home)
		if err != nil {
			return err
		}
		opts.HTTP, opts.Token = ln, tok
		// The token is shown nowhere (hosts read the file); this names
		// where it is.
		fmt.Fprintf(a.stderr, "freecode mcp serve: streamable HTTP on http://%s%s\n"+
			"  send \"Authorization: Bearer <token>\", the token being the content of %s\n"+
			"  (`freecode mcp serve --http %s --print-config claude` prints a host's whole config)\n",
			ln.Addr(), gateway.HTTPPath, gateway.TokenFile(home), f.http)
	}
	if f.http == "" && a.stdinTerminal() != nil {
		fmt.Fprintln(a.stderr, "freecode mcp serve speaks MCP on stdin and stdout, for a host to start it "+
			"(`freecode mcp serve --print-config claude` prints a host's config); Ctrl-D ends it")
	}
	var attach *api.Client
	why := "--no-attach"
	if !f.noAttach {
		attach, why, err = a.attachTarget(ctx, src, f.builtins)
		if err != nil {
			return err
		}
		if attach != nil {
			defer attach.Close()
		}
	}
	if attach == nil {
		log.Info("running the servers in this process", "home", home, "config", src.User, "project", src.Project, "why", why)
		return gateway.Run(ctx, opts, so, nil)
	}
	log.Info("attached to freecode serve", "home", home)
	return gateway.Run(ctx, opts, so, attach)
}

// checkServer says, wrapping schema.ErrNoServer, that cfg configures no
// server name, naming the ones it configures; nil when it does.
func checkServer(cfg *schema.Config, name string) error {
	if _, ok := cfg.Server(name); ok {
		return nil
	}
	names := serverNames(cfg)
	if len(names) == 0 {
		return fmt.Errorf("--server %q: %w in %s: none is configured (add one with `freecode mcp add <name> local \"<command>\"`)",
			name, schema.ErrNoServer, cfg.Path)
	}
	return fmt.Errorf("--server %q: %w in %s; the configured servers are %s.%s",
		name, schema.ErrNoServer, cfg.Path, strings.Join(names, ", "), didYouMean(closest(name, names)))
}

// attachTarget is the serve of the home to go through, or nil and why
// not: none runs, or it reads another config file or another project (its
// servers and rules are not this invocation's), or, with builtins, its
// built-ins work in another directory, or it is an older freecode's.
func (a *app) attachTarget(ctx context.Context, src schema.Sources, builtins bool) (*api.Client, string, error) {
	client, home, err := a.dialServe()
	if errors.Is(err, api.ErrNotRunning) {
		return nil, "freecode serve is not running for " + home, nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("freecode serve: %w", err)
	}
	st, err := client.Status(ctx)
	if err != nil {
		client.Close()
		return nil, "", fmt.Errorf("freecode serve: %w", err)
	}
	if why := unlikeGateway(st, src, builtins, os.Getwd); why != "" {
		client.Close()
		return nil, why, nil
	}
	// A serve of an older freecode (still running after an upgrade) lacks
	// what the gateway reads: the servers run here instead.
	if _, err := client.Lists(ctx); errors.Is(err, api.ErrNotFound) {
		client.Close()
		return nil, fmt.Sprintf("freecode serve (pid %d) is an older version (it has no GET /v1/lists)", st.ServePID), nil
	}
	return client, "", nil
}

// unlikeGateway says why serve, whose status is st, does not run what a
// gateway for src would ("" when it does); wd is the working directory.
func unlikeGateway(st wire.Status, src schema.Sources, builtins bool, wd func() (string, error)) string {
	switch {
	case !samePath(st.ConfigPath, src.User):
		return fmt.Sprintf("freecode serve (pid %d) watches another config file, %s", st.ServePID, st.ConfigPath)
	case (st.Project == "") != (src.Project == "") || (st.Project != "" && !samePath(st.Project, src.Project)):
		if st.Project == "" {
			return fmt.Sprintf("freecode serve (pid %d) reads no project settings, this directory's are %s", st.ServePID, src.Project)
		}
		return fmt.Sprintf("freecode serve (pid %d) reads the project settings %s", st.ServePID, st.Project)
	}
	if builtins {
		dir, err := wd()
		if err != nil || !samePath(dir, st.Root) {
			return fmt.Sprintf("freecode serve (pid %d) runs the built-in tools in %s", st.ServePID, st.Root)
		}
	}
	return ""
}

// samePath reports whether a and b name one file: the same file once both
// are found (through symlinks, /tmp and /private/tmp alike), else the same
// clean path.
func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// listenGateway listens on addr, which must be a loopback address unless
// remote is set.
func listenGateway(addr string, remote bool) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, usageError{fmt.Errorf("--http %q: want host:port, such as 127.0.0.1:8765: %w", addr, err)}
	}
	if !remote {
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return nil, usageError{fmt.Errorf("--http %q is not a loopback address: other machines could reach the gateway; "+
				"use 127.0.0.1:PORT, or add --allow-remote if that is what you want", addr)}
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http: %w", err)
	}
	return ln, nil
}

// printGatewayConfig prints the snippet of f.printConfig's host on stdout,
// and where it goes on stderr. With --http it is the HTTP endpoint's; it
// holds no token, but says how the host gets it from the token file (made
// here if it is not there yet).
func (a *app) printGatewayConfig(f gatewayFlags) error {
	if !slices.Contains(gateway.HostNames(), f.printConfig) {
		return usageError{fmt.Errorf("--print-config %q: want one of %s", f.printConfig, strings.Join(gateway.HostNames(), ", "))}
	}
	cfg, err := a.load(false)
	if err != nil {
		// The host's timeout is a hint: an invalid file's defaults do.
		cfg = schema.Empty("")
	}
	l := gateway.Launch{Name: "freecode", CallTimeout: cfg.MCP.Defaults.CallTimeout}
	for _, s := range cfg.MCP.Servers {
		l.CallTimeout = max(l.CallTimeout, s.Settings.CallTimeout)
	}
	if f.http != "" {
		host, port, err := net.SplitHostPort(f.http)
		if err != nil {
			return usageError{fmt.Errorf("--http %q: want host:port, such as 127.0.0.1:8765: %w", f.http, err)}
		}
		if host == "" || port == "" || port == "0" {
			return usageError{fmt.Errorf("--http %q: a host's config needs the address the gateway listens on, host and port, such as 127.0.0.1:8765", f.http)}
		}
		home, err := schema.Home(a.getenv)
		if err != nil {
			return err
		}
		if _, err = gateway.LoadToken(home); err != nil {
			return err
		}
		l.TokenFile = gateway.TokenFile(home)
		l.URL = "http://" + f.http + gateway.HTTPPath
	} else {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("the path of freecode: %w", err)
		}
		l.Command = exe
		l.Args = []string{"mcp", "serve"}
		if a.configFlag != "" {
			cfg, err := filepath.Abs(a.configFlag)
			if err != nil {
				return err
			}
			l.Args = append(l.Args, "--config", cfg)
		}
		if f.builtins {
			l.Args = append(l.Args, "--builtins")
		}
		if f.server != "" {
			l.Args = append(l.Args, "--server", f.server)
		}
		if h := a.getenv("FREECODE_HOME"); h != "" {
			abs, err := filepath.Abs(h)
			if err != nil {
				return err
			}
			l.Env = map[string]string{"FREECODE_HOME": abs}
		}
	}
	snippet, where, err := gateway.HostConfig(f.printConfig, l)
	if err != nil {
		return usageError{err}
	}
	fmt.Fprintf(a.stderr, "# for %s\n", where)
	fmt.Fprint(a.stdout, snippet)
	return nil
}
