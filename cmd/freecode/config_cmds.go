package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/shlex"
	"github.com/spf13/cobra"

	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

func (a *app) addCmd() *cobra.Command {
	var (
		envs, headers    []string
		include, exclude []string
		timeout          time.Duration
		idleTimeout      time.Duration
		lifecycle        string
		disabled         bool
		transport        string
	)
	c := &cobra.Command{
		Use:   "add <name> <local|remote> <command-or-url> | add <name> local -- <command> [args...]",
		Short: "Add a server to the config file",
		Long: `Add a server to the config file. Only the file changes; a running freecode serve
then starts it, and "freecode mcp start <name>" tests it on its own.

For a local server the command is split like a shell does (quotes respected),
or given word by word after --:
  freecode mcp add fs local "npx -y @modelcontextprotocol/server-filesystem /tmp"
  freecode mcp add fs local -- npx -y @modelcontextprotocol/server-filesystem /tmp
For a remote server give its URL:
  freecode mcp add gh remote https://api.example.com/mcp --header 'Authorization=Bearer ${GH_TOKEN}'`,
		RunE: func(c *cobra.Command, args []string) error {
			dash := c.ArgsLenAtDash()
			var command []string
			if dash >= 0 {
				if dash != 2 || len(args) < 3 {
					return usageError{errors.New("with --, give the name and type before it and the command after it: add <name> local -- <command> [args...]")}
				}
				command = args[2:]
				args = args[:2]
			} else if len(args) != 3 {
				err := fmt.Errorf("add needs <name> <local|remote> <command-or-url> (got %d argument(s))", len(args))
				if hint := addCommandHint(c, a.args); hint != "" {
					err = fmt.Errorf("%w: %s", err, hint)
				}
				return usageError{err}
			}
			name, typ := args[0], schema.ServerType(args[1])
			fields := []schema.Field{{Key: "name", Value: name}, {Key: "type", Value: string(typ)}}
			switch typ {
			case schema.Local:
				if command == nil {
					var err error
					if command, err = shlex.Split(args[2]); err != nil {
						return usageError{fmt.Errorf("split command %q: %w", args[2], err)}
					}
					if len(command) == 0 {
						return usageError{errors.New("the command is empty")}
					}
				}
				if len(headers) > 0 || transport != "" {
					return usageError{errors.New("--header and --transport are for remote servers; a local server takes --env")}
				}
				if w := command[0]; strings.HasPrefix(w, "http://") || strings.HasPrefix(w, "https://") {
					return usageError{fmt.Errorf("%s is a URL, and a server reached at a URL is remote: did you mean `%s`?", termtext.Quote(w), termtext.ShellCommand("freecode", "mcp", "add", name, "remote", w))}
				}
				fields = append(fields, schema.Field{Key: "command", Value: command})
			case schema.Remote:
				if command != nil {
					return usageError{errors.New("a remote server takes a URL, not a command after --")}
				}
				if len(envs) > 0 {
					return usageError{errors.New("--env is for local servers (a remote server is no process of ours); send what it needs in a header, e.g. --header 'Authorization=Bearer ${TOKEN}'")}
				}
				fields = append(fields, schema.Field{Key: "url", Value: args[2]})
				if transport != "" {
					fields = append(fields, schema.Field{Key: "transport", Value: transport})
				}
				if len(headers) > 0 {
					m, err := keyValues("--header", headers)
					if err != nil {
						return err
					}
					fields = append(fields, schema.Field{Key: "headers", Value: m})
				}
			default:
				return usageError{fmt.Errorf("type must be local or remote, not %q", typ)}
			}
			if len(envs) > 0 {
				m, err := keyValues("--env", envs)
				if err != nil {
					return err
				}
				fields = append(fields, schema.Field{Key: "env", Value: m})
			}
			fields = append(fields, schema.Field{Key: "enabled", Value: !disabled})
			if len(include) > 0 || len(exclude) > 0 {
				for _, p := range slices.Concat(include, exclude) {
					if err := schema.CheckGlob(p); err != nil {
						return usageError{fmt.Errorf("--include/--exclude: %w", err)}
					}
				}
				filter := map[string][]string{}
				if len(include) > 0 {
					filter["include"] = include
				}
				if len(exclude) > 0 {
					filter["exclude"] = exclude
				}
				fields = append(fields, schema.Field{Key: "tools", Value: filter})
			}
			if c.Flags().Changed("timeout") {
				ms, err := wholeMillis("--timeout", timeout)
				if err != nil {
					return err
				}
				fields = append(fields, schema.Field{Key: "timeout", Value: ms})
			}
			switch schema.Lifecycle(lifecycle) {
			case "":
			case schema.LifecycleAlways, schema.LifecycleOnDemand:
				fields = append(fields, schema.Field{Key: "lifecycle", Value: lifecycle})
			default:
				return usageError{fmt.Errorf("--lifecycle %q: want always or on-demand", lifecycle)}
			}
			if c.Flags().Changed("idle-timeout") {
				if schema.Lifecycle(lifecycle) != schema.LifecycleOnDemand {
					return usageError{errors.New("--idle-timeout goes with --lifecycle on-demand")}
				}
				ms, err := wholeMillis("--idle-timeout", idleTimeout)
				if err != nil {
					return err
				}
				fields = append(fields, schema.Field{Key: "idleTimeout", Value: ms})
			}
			path, err := a.edit(c, "", func(d *schema.Doc) error { return d.AddServer(fields) })
			if err != nil {
				return err
			}
			state := ""
			if disabled {
				state = "disabled "
			}
			fmt.Fprintf(a.stdout, "Added %s%s server %q to %s\n", state, typ, name, path)
			a.printApplies([]string{name}, true)
			return nil
		},
	}
	c.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		// An unknown flag after "local" is most likely the server's.
		if hint := addCommandHint(c, a.args); hint != "" {
			return usageError{fmt.Errorf("%w: %s", err, hint)}
		}
		return usageError{fmt.Errorf("%w\nRun '%s --help' for usage", err, c.CommandPath())}
	})
	c.Flags().StringArrayVar(&envs, "env", nil, "environment variable `K=V` for a local server (repeatable; ${VAR} allowed)")
	c.Flags().StringArrayVar(&headers, "header", nil, "HTTP header `K=V` for a remote server (repeatable; ${VAR} allowed)")
	durationVar(c.Flags(), &timeout, "timeout", schema.DefaultTimeout, "time to connect, initialize and list tools: a duration (5s, 1m) or milliseconds")
	c.Flags().BoolVar(&disabled, "disabled", false, "add the server disabled")
	c.Flags().StringVar(&lifecycle, "lifecycle", "", "when the server runs: always (the default) or on-demand (started by its first use, stopped when unused)")
	durationVar(c.Flags(), &idleTimeout, "idle-timeout", schema.DefaultIdleTimeout, "with --lifecycle on-demand: how long it stays running after its last use: a duration (10m) or milliseconds")
	c.Flags().StringArrayVar(&include, "include", nil, "register only the server's tools whose names match this `glob` (path.Match syntax; repeatable)")
	c.Flags().StringArrayVar(&exclude, "exclude", nil, "never register the server's tools whose names match this `glob` (wins over --include; repeatable)")
	c.Flags().StringVar(&transport, "transport", "", "remote transport: auto, streamable-http or sse (default auto)")
	return c
}

// printApplies says, after an edit that added or enabled the servers
// names, what happens to them now — and never that a change applies when
// it does not: a running serve starts each one that can run (checked here
// against the file as written and this environment), one that cannot is
// named with why; without a serve, nothing connects yet (said when
// startHint).
func (a *app) printApplies(names []string, startHint bool) {
	cfg, err := a.load(true)
	running, other := a.serveForConfig()
	if other != "" {
		fmt.Fprintf(a.stdout, "%s: it does not apply this change.\n", other)
	}
	if err != nil {
		if running {
			fmt.Fprintf(a.stdout, "freecode serve is running but will not apply the change: %s\n", termtext.Neutralize(err.Error()))
		}
		return
	}
	a.printWarnings(cfg, names...)
	var blocked []string
	for _, name := range names {
		if s, ok := cfg.Server(name); ok && s.Hold != nil {
			blocked = append(blocked, holdReason(s.Hold))
		}
	}
	switch {
	case running && len(blocked) == 0:
		fmt.Fprintln(a.stdout, "freecode serve is running and applies the change now; see `freecode mcp status`.")
	case running:
		fmt.Fprintln(a.stdout, "freecode serve is running but will not start what cannot run:")
	case !startHint:
	case len(names) == 1 && len(blocked) == 0:
		fmt.Fprintf(a.stdout, "Nothing connects yet; try `freecode mcp start %s`.\n", names[0])
	case len(blocked) == 0:
		fmt.Fprintln(a.stdout, "Nothing connects yet; try `freecode mcp start <name>`, or `freecode serve`.")
	}
	for _, b := range blocked {
		fmt.Fprintln(a.stdout, termtext.Neutralize(b))
	}
}

// printWarnings shows on stderr the warnings of cfg's servers named names
// (of every server when none is named): what is likely wrong with an
// entry that is nonetheless valid.
func (a *app) printWarnings(cfg *schema.Config, names ...string) {
	if cfg == nil {
		return
	}
	for _, s := range cfg.MCP.Servers {
		if len(names) > 0 && !slices.Contains(names, s.Name) {
			continue
		}
		for _, w := range s.Warnings {
			fmt.Fprintf(a.stderr, "warning: %s\n", termtext.Neutralize(w.Error()))
		}
	}
}

// serveRunning reports whether a freecode serve answers for this home and
// reads this command's config file: one that reads another does not apply
// what this command changes.
func (a *app) serveRunning() bool {
	running, _ := a.serveForConfig()
	return running
}

// statusWait bounds asking serve for its status after an edit.
const statusWait = 5 * time.Second

// serveForConfig reports whether a freecode serve answers for this home
// and reads this command's config file; other says why not when one
// answers but reads another file ("" otherwise).
func (a *app) serveForConfig() (running bool, other string) {
	client, _, err := a.dialServe()
	if err != nil {
		return false, ""
	}
	defer client.Close()
	// Its callers report after their edit, with no context of their own;
	// serve answers a status from memory, over the local socket, so a
	// serve that does not answer within statusWait is wedged: the edit is
	// made, and the command does not hang on it.
	ctx, cancel := context.WithTimeout(context.Background(), statusWait)
	defer cancel()
	st, err := client.Status(ctx)
	if err != nil {
		return false, ""
	}
	path, err := a.userConfig()
	if err != nil {
		return false, ""
	}
	if other = otherConfig(st, path); other != "" {
		return false, other
	}
	return true, ""
}

func keyValues(flag string, kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("%s %q: want KEY=VALUE", flag, kv)}
		}
		m[k] = v
	}
	return m, nil
}

// edit runs fn on the config file and returns the file's path.
// name is the server the edit is about ("" when it adds one): when the user
// config has no such server but the project defines it, the error says so.
func (a *app) edit(c *cobra.Command, name string, fn func(*schema.Doc) error) (string, error) {
	path, err := a.configPath()
	if err != nil {
		return "", err
	}
	v, err := a.schema()
	if err != nil {
		return "", err
	}
	err = v.Edit(c.Context(), path, fn)
	if name != "" && errors.Is(err, schema.ErrNoServer) {
		// Commands edit the user config only; say where the server is.
		if src, serr := a.sources(); serr == nil && src.Project != "" {
			if cfg, lerr := v.LoadDesired(src, schema.LoadOptions{NoExpand: true}); lerr == nil {
				if s, ok := cfg.Server(name); ok && strings.HasPrefix(s.Source, schema.SourceProjectPrefix) {
					return path, fmt.Errorf("server %q is defined by the project in %s; edit that file (commands change only %s)", name, src.Project, path)
				}
			}
		}
		// A slip of the name: the closest names of the file edited.
		if cfg, lerr := v.Load(path, schema.LoadOptions{NoExpand: true, HoldInvalid: true}); lerr == nil {
			return path, noServer(cfg, name)
		}
	}
	return path, err
}

func (a *app) removeCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "remove <name>",
		Aliases: []string{"rm"},
		Short:   "Remove a server from the config",
		Args:    exactArgs(1, "<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			path, err := a.edit(c, args[0], func(d *schema.Doc) error { return d.RemoveServer(args[0]) })
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Removed server %q from %s\n", args[0], path)
			return nil
		},
	}
}

func (a *app) enableCmd(enable bool) *cobra.Command {
	verb, past := "enable", "enabled"
	if !enable {
		verb, past = "disable", "disabled"
	}
	return &cobra.Command{
		Use:   verb + " <name>",
		Short: strings.ToUpper(verb[:1]) + verb[1:] + " a configured server",
		Args:  exactArgs(1, "<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			changed := false
			path, err := a.edit(c, args[0], func(d *schema.Doc) error {
				var err error
				changed, err = d.SetEnabled(args[0], enable)
				return err
			})
			if err != nil {
				return err
			}
			if !changed {
				fmt.Fprintf(a.stdout, "Server %q is already %s in %s\n", args[0], past, path)
			} else {
				fmt.Fprintf(a.stdout, "Server %q %s in %s\n", args[0], past, path)
			}
			if enable {
				// Its variables are checked once it is enabled.
				a.printApplies([]string{args[0]}, false)
			}
			return nil
		},
	}
}

// loadShown reads the desired state as list and get show it: as written
// (no ${VAR} expanded, so no secret is shown), with the holds of an
// expanded read — a server whose variables are unset cannot run, and says
// so.
func (a *app) loadShown() (*schema.Config, error) {
	cfg, err := a.load(false)
	if err != nil {
		return nil, err
	}
	expanded, err := a.load(true)
	if err != nil {
		return cfg, nil // the file as written is readable; its errors show where it is used
	}
	for i, s := range cfg.MCP.Servers {
		if e, ok := expanded.Server(s.Name); ok && s.Hold == nil && e.Hold != nil && e.Source == s.Source {
			cfg.MCP.Servers[i].Hold = e.Hold
		}
	}
	return cfg, nil
}

// serverView is how list and get show a server; secrets are masked unless
// asked for.
type serverView struct {
	Name      string            `json:"name"`
	Type      schema.ServerType `json:"type"`
	Enabled   bool              `json:"enabled"`
	Command   []string          `json:"command,omitempty"`
	URL       string            `json:"url,omitempty"`
	Transport schema.Transport  `json:"transport,omitempty"`
	Headers   map[string]string `json:"headers,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
	// OAuth is a remote server's oauth object, its secret masked.
	OAuth     *oauthView `json:"oauth,omitempty"`
	TimeoutMS int64      `json:"timeout"`
	// CallTimeoutMS is the server's own callTimeout; 0 when mcp.callTimeout
	// applies.
	CallTimeoutMS int64 `json:"callTimeout,omitempty"`
	// Lifecycle is "on-demand" for a server started by its first use, and
	// IdleTimeoutMS how long it stays running after its last use, both
	// resolved (its own, else the mcp section's); left out for "always".
	Lifecycle     schema.Lifecycle `json:"lifecycle,omitempty"`
	IdleTimeoutMS int64            `json:"idleTimeout,omitempty"`
	// Roots are the directories offered as the server's roots, resolved;
	// Protocol and LogLevel as configured ("" when not).
	Roots    []string `json:"roots,omitempty"`
	Protocol string   `json:"protocol,omitempty"`
	LogLevel string   `json:"logLevel,omitempty"`
	// Tools is the server's tools filter (left out when it has none).
	Tools  schema.ToolFilter `json:"tools,omitzero"`
	Source string            `json:"source"`
	// Held says why the server does not run (untrusted project, name
	// defined twice); empty when it may run.
	Held string `json:"held,omitempty"`
	// SignIn is a remote server's stored sign-in (get only; never a
	// token); nil for a server that does not sign in with OAuth.
	SignIn *wire.SignIn `json:"signIn,omitempty"`
	// Instructions are the server's instructions as a running freecode
	// serve holds them for its session (get only); "" when serve does
	// not run, the server is not connected, or it sent none.
	Instructions string `json:"instructions,omitempty"`
	// Registry is where `mcp install` took the entry from (nil: written
	// by hand).
	Registry *schema.Provenance `json:"registry,omitempty"`
	heldKind schema.HoldKind    // of the hold Held phrases
	shown    string             // command line or URL as written (schema.Server.Shown)
}

// oauthView is an oauth object as list and get show it.
type oauthView struct {
	ClientID          string   `json:"clientId,omitempty"`
	ClientSecret      string   `json:"clientSecret,omitempty"`
	Scopes            []string `json:"scopes,omitempty"`
	Grant             string   `json:"grant"`
	CallbackPort      int      `json:"callbackPort,omitempty"`
	ClientMetadataURL string   `json:"clientMetadataUrl,omitempty"`
}

func viewOAuth(o *schema.OAuth, showSecrets bool) *oauthView {
	if o == nil {
		return nil
	}
	v := &oauthView{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes, Grant: string(o.Grant),
		CallbackPort: o.CallbackPort, ClientMetadataURL: o.ClientMetadataURL}
	if v.ClientSecret != "" && !showSecrets {
		v.ClientSecret = "***"
	}
	return v
}

func view(s schema.Server, showSecrets bool) serverView {
	mask := func(m map[string]string) map[string]string {
		if m == nil || showSecrets {
			return m
		}
		out := make(map[string]string, len(m))
		for k := range m {
			out[k] = "***"
		}
		return out
	}
	v := serverView{Name: s.Name, Type: s.Type, Enabled: s.Enabled, Command: s.Command, URL: s.URL,
		Transport: s.Transport, Headers: mask(s.Headers), Env: mask(s.Env), OAuth: viewOAuth(s.OAuth, showSecrets),
		TimeoutMS: s.Timeout.Milliseconds(),
		Source:    s.Source,
		Roots:     s.Roots, Protocol: s.Protocol, LogLevel: s.LogLevel, Tools: s.Tools, Registry: s.Registry}
	if s.Settings.OwnCallTimeout {
		v.CallTimeoutMS = s.Settings.CallTimeout.Milliseconds()
	}
	if s.OnDemand() {
		v.Lifecycle, v.IdleTimeoutMS = schema.LifecycleOnDemand, s.IdleTimeout.Milliseconds()
	}
	if s.Hold != nil {
		v.Held, v.heldKind = holdReason(s.Hold), s.Hold.Kind
	}
	v.shown = s.Shown
	return v
}

// enabledText is the ENABLED column: yes, no, or why it cannot run.
func (v serverView) enabledText() string {
	switch {
	case v.heldKind == schema.HoldConflict:
		return "conflict"
	case v.heldKind == schema.HoldInvalid:
		return "invalid"
	case v.Held != "":
		return "untrusted"
	}
	return yesNo(v.Enabled)
}

// sourceText is "user" or "project".
func (v serverView) sourceText() string {
	if strings.HasPrefix(v.Source, schema.SourceProjectPrefix) {
		return "project"
	}
	return v.Source
}

// target is the command line or URL as written in the file, quoted for
// display where it does not print as it reads (schema.Server.Shown).
func (v serverView) target() string { return v.shown }

func (a *app) listCmd() *cobra.Command {
	var asJSON, showSecrets bool
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List configured servers",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := a.loadShown()
			if err != nil {
				return a.listLastValid(c.Context(), err, asJSON)
			}
			views := make([]serverView, 0, len(cfg.MCP.Servers))
			for _, s := range cfg.MCP.Servers {
				views = append(views, view(s, showSecrets))
			}
			a.printWarnings(cfg)
			if asJSON {
				if msg := projectError(cfg); msg != "" {
					fmt.Fprintln(a.stderr, msg)
				}
				return a.printJSON(views)
			}
			if len(views) == 0 {
				fmt.Fprintf(a.stdout, "No MCP servers configured in %s.\nAdd one with `freecode mcp add <name> local \"<command>\"`.\n", cfg.Path)
				a.printHeld(views, cfg)
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			if cfg.Project == nil {
				fmt.Fprintln(tw, "NAME\tTYPE\tENABLED\tCOMMAND / URL")
				for _, v := range views {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", cell(v.Name), dash(string(v.Type)), v.enabledText(), cell(v.target()))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				a.printHeld(views, cfg)
				return nil
			}
			fmt.Fprintln(tw, "NAME\tTYPE\tSOURCE\tENABLED\tCOMMAND / URL")
			for _, v := range views {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(v.Name), dash(string(v.Type)), v.sourceText(), v.enabledText(), cell(v.target()))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			a.printHeld(views, cfg)
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&showSecrets, "show-secrets", false, "show header and env values and oauth.clientSecret instead of ***")
	return c
}

// lastValidServer is a server `mcp list --json` shows from serve while
// the config file has errors: what serve's status has of its definition.
type lastValidServer struct {
	Name    string `json:"name"`
	Type    string `json:"type,omitempty"`
	Enabled bool   `json:"enabled"`
	// Target is the command line or URL as written.
	Target string `json:"target,omitempty"`
	Source string `json:"source,omitempty"`
}

// listLastValid lists the servers of the running serve that keeps the
// last valid config applied while the file has errors (loadErr, see
// lastValid), and fails with loadErr and a note that it did: the file
// needs fixing all the same. Without such a serve it fails with loadErr.
func (a *app) listLastValid(ctx context.Context, loadErr error, asJSON bool) error {
	client, st, ok := a.lastValid(ctx, loadErr)
	if !ok {
		return loadErr
	}
	client.Close()
	err := fmt.Errorf("%w\nfreecode serve (pid %d) keeps running the last valid config; its servers are listed. Fix the file (`freecode mcp validate` shows every error)", loadErr, st.ServePID)
	if asJSON {
		out := make([]lastValidServer, 0, len(st.Servers))
		for _, s := range st.Servers {
			out = append(out, lastValidServer{s.Name, s.Desired.Type, s.Desired.Enabled, s.Desired.Target, s.Source})
		}
		if perr := a.printJSON(out); perr != nil {
			return perr
		}
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTYPE\tSOURCE\tENABLED\tCOMMAND / URL")
	for _, s := range st.Servers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(s.Name), dash(s.Desired.Type), cell(dash(s.Source)), yesNo(s.Desired.Enabled), cell(s.Desired.Target))
	}
	if perr := tw.Flush(); perr != nil {
		return perr
	}
	return err
}

// printHeld explains, once per reason, why servers do not run, and why
// the project is ignored even when it names no server.
func (a *app) printHeld(views []serverView, cfg *schema.Config) {
	seen := map[string]bool{}
	for _, v := range views {
		if v.Held != "" && !seen[v.Held] {
			seen[v.Held] = true
			fmt.Fprintln(a.stdout, "\n"+termtext.Neutralize(v.Held))
		}
	}
	if msg := projectError(cfg); msg != "" && !seen[msg] {
		fmt.Fprintln(a.stdout, "\n"+msg)
	}
}

// projectError says why the project's settings are ignored ("" when they
// are not): the file is unreadable or invalid, or trusted but its
// variables do not resolve.
func projectError(cfg *schema.Config) string {
	if cfg.Project == nil || cfg.Project.Trust.Err == nil {
		return ""
	}
	return trustReason(cfg.Project.Trust)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func (a *app) getCmd() *cobra.Command {
	var asJSON, showSecrets bool
	c := &cobra.Command{
		Use:   "get <name>",
		Short: "Show one configured server",
		Args:  exactArgs(1, "<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, err := a.loadShown()
			if err != nil {
				if client, st, ok := a.lastValid(c.Context(), err); ok {
					client.Close()
					return fmt.Errorf("%w\nfreecode serve (pid %d) keeps running the last valid config, but `freecode mcp get` shows the file's definition: fix the file first (`freecode mcp validate` shows every error; `freecode mcp list` shows serve's servers meanwhile)", err, st.ServePID)
				}
				return err
			}
			s, ok := cfg.Server(args[0])
			if !ok {
				return noServer(cfg, args[0])
			}
			v := view(s, showSecrets)
			// The token store is keyed by the URL as it expands.
			if exp, err := a.load(true); err == nil {
				if es, ok := exp.Server(s.Name); ok {
					v.SignIn = controller.ShownSignIn(es, "", a.signInOf(es))
				}
			}
			v.Instructions = a.liveInstructions(c.Context(), s.Name)
			if asJSON {
				return a.printJSON(v)
			}
			// A project's values are the repository's: each is cut as
			// trust shows it (the command line already is, in v.target).
			quote := termtext.Quote
			if strings.HasPrefix(v.Source, schema.SourceProjectPrefix) {
				quote = schema.ShowValue
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintf(tw, "name:\t%s\n", quote(v.Name))
			fmt.Fprintf(tw, "type:\t%s\n", v.Type)
			fmt.Fprintf(tw, "enabled:\t%t\n", v.Enabled)
			if v.Type == schema.Remote {
				fmt.Fprintf(tw, "url:\t%s\n", quote(v.URL))
				fmt.Fprintf(tw, "transport:\t%s\n", v.Transport)
			} else {
				fmt.Fprintf(tw, "command:\t%s\n", v.target())
			}
			for _, m := range []struct {
				label string
				kv    map[string]string
			}{{"headers", v.Headers}, {"env", v.Env}} {
				for i, k := range slices.Sorted(maps.Keys(m.kv)) {
					label := ""
					if i == 0 {
						label = m.label + ":"
					}
					fmt.Fprintf(tw, "%s\t%s\n", label, quote(k+"="+m.kv[k]))
				}
			}
			if o := v.OAuth; o != nil {
				fmt.Fprintf(tw, "oauth:\t%s\n", oauthText(o))
			}
			if v.SignIn != nil {
				fmt.Fprintf(tw, "sign-in:\t%s\n", signInText(v.Name, v.SignIn))
			}
			fmt.Fprintf(tw, "timeout:\t%dms\n", v.TimeoutMS)
			if v.CallTimeoutMS > 0 {
				fmt.Fprintf(tw, "callTimeout:\t%dms\n", v.CallTimeoutMS)
			}
			if v.Lifecycle == schema.LifecycleOnDemand {
				fmt.Fprintf(tw, "lifecycle:\ton-demand, stopped after %dms unused (idleTimeout)\n", v.IdleTimeoutMS)
			}
			for i, r := range v.Roots {
				label := ""
				if i == 0 {
					label = "roots:"
				}
				fmt.Fprintf(tw, "%s\t%s\n", label, quote(r))
			}
			if v.Protocol != "" {
				fmt.Fprintf(tw, "protocol:\t%s\n", v.Protocol)
			}
			if v.LogLevel != "" {
				fmt.Fprintf(tw, "logLevel:\t%s\n", v.LogLevel)
			}
			for _, f := range []struct {
				key  string
				pats []string
			}{{"tools.include:", v.Tools.Include}, {"tools.exclude:", v.Tools.Exclude}} {
				quoted := make([]string, len(f.pats))
				for i, p := range f.pats {
					quoted[i] = quote(p)
				}
				if len(quoted) > 0 {
					fmt.Fprintf(tw, "%s\t%s\n", f.key, strings.Join(quoted, " "))
				}
			}
			file := cfg.Path
			if cfg.Project != nil && strings.HasPrefix(v.Source, schema.SourceProjectPrefix) {
				file = cfg.Project.Path
			}
			if v.Registry != nil {
				fmt.Fprintf(tw, "registry:\t%s\n", provenanceText(v.Registry))
			}
			fmt.Fprintf(tw, "source:\t%s (%s)\n", v.sourceText(), cell(file))
			if v.Held != "" {
				fmt.Fprintf(tw, "runs:\tno: %s\n", cell(v.Held))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if v.Instructions != "" {
				fmt.Fprintln(a.stdout, "instructions:")
				for line := range strings.Lines(termtext.Neutralize(v.Instructions)) {
					fmt.Fprintln(a.stdout, "  "+strings.TrimRight(line, "\r\n"))
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&showSecrets, "show-secrets", false, "show header and env values and oauth.clientSecret instead of ***")
	return c
}

// liveInstructions are the instructions of the session a running freecode
// serve has with server name; "" when serve does not run or has none.
func (a *app) liveInstructions(ctx context.Context, name string) string {
	client, _, err := a.dialServe()
	if err != nil {
		return ""
	}
	defer client.Close()
	st, err := client.Status(ctx)
	if err != nil {
		return ""
	}
	// A serve of another config file runs another server of that name.
	if path, err := a.userConfig(); err != nil || otherConfig(st, path) != "" {
		return ""
	}
	for _, ss := range st.Servers {
		if ss.Name == name {
			return ss.Instructions
		}
	}
	return ""
}

// oauthText is an oauth object on one line of `get`, each value as
// written (quoted where it does not print as it reads).
func oauthText(o *oauthView) string {
	parts := []string{"grant=" + o.Grant}
	add := func(k, v string) {
		if v != "" {
			parts = append(parts, termtext.Quote(k+"="+v))
		}
	}
	add("clientId", o.ClientID)
	add("clientSecret", o.ClientSecret)
	add("scopes", strings.Join(o.Scopes, " "))
	if o.CallbackPort != 0 {
		add("callbackPort", fmt.Sprint(o.CallbackPort))
	}
	add("clientMetadataUrl", o.ClientMetadataURL)
	return strings.Join(parts, " ")
}

// errorView is a positioned config error for --json output.
type errorView struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Path    string `json:"path,omitempty"`
	Server  string `json:"server,omitempty"`
	Message string `json:"message"`
}

func (a *app) validateCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "validate [FILE]",
		Short: "Check a config file (default: the user config); exit 1 with every error",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			path, err := a.configPath()
			if err != nil {
				return err
			}
			userConfig := true
			if len(args) == 1 {
				userConfig = sameFile(path, args[0])
				path = args[0]
			}
			v, err := a.schema()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) && len(args) == 0 {
				// As for list and serve: no user config is nothing
				// configured yet.
				if asJSON {
					return a.printJSON(validateOutput{File: path, Valid: true, Missing: true, Errors: []errorView{}, InvalidServers: []string{}, Warnings: []errorView{}})
				}
				fmt.Fprintf(a.stdout, "%s does not exist yet: no servers are configured.\nAdd one with `freecode mcp add <name> local \"<command>\"`.\n", path)
				return nil
			}
			if err != nil {
				return fmt.Errorf("read config: %w", err)
			}
			cfg, err := v.Parse(path, data, schema.LoadOptions{LookupEnv: a.lookupEnv, HoldInvalid: true})
			var errs schema.Errors
			if err != nil && !errors.As(err, &errs) {
				return err
			}
			var invalid []string
			var warnings schema.Errors
			if cfg != nil {
				errs = cfg.ServerErrors()
				warnings = cfg.Warnings()
				for _, s := range cfg.MCP.Servers {
					if s.Hold != nil && s.Hold.Kind == schema.HoldInvalid && !slices.Contains(invalid, s.Name) {
						invalid = append(invalid, s.Name)
					}
				}
			}
			if asJSON {
				out := validateOutput{File: path, Valid: len(errs) == 0, Errors: []errorView{}, InvalidServers: []string{}, Warnings: []errorView{}}
				if cfg != nil {
					out.Servers = len(cfg.MCP.Servers)
					out.InvalidServers = append(out.InvalidServers, invalid...)
				}
				for _, e := range errs {
					out.Errors = append(out.Errors, errorView{e.File, e.Line, e.Col, schema.FormatPath(e.Path), e.Server, e.Msg})
				}
				for _, e := range warnings {
					out.Warnings = append(out.Warnings, errorView{e.File, e.Line, e.Col, schema.FormatPath(e.Path), e.Server, e.Msg})
				}
				if err := a.printJSON(out); err != nil {
					return err
				}
			} else if len(errs) > 0 {
				fmt.Fprintln(a.stderr, termtext.Neutralize(errs.Error()))
				summary := fmt.Sprintf("%s: %d error%s", path, len(errs), plural(len(errs)))
				if cfg != nil && userConfig {
					others := 0
					for _, s := range cfg.MCP.Servers {
						if s.Hold == nil || s.Hold.Kind != schema.HoldInvalid {
							others++
						}
					}
					// Only servers have errors: the others run. (A project's
					// settings file is ignored whole while it has any.)
					summary += fmt.Sprintf(" (%s %s not run until fixed", quotedNames(invalid), pick(len(invalid) == 1, "does", "do"))
					if others > 0 {
						summary += fmt.Sprintf("; the other %d server%s can", others, plural(others))
					}
					summary += ")"
				}
				fmt.Fprintln(a.stderr, termtext.Neutralize(summary))
				a.printWarnings(cfg)
			} else {
				fmt.Fprintf(a.stdout, "%s: valid (%d server%s)\n", path, len(cfg.MCP.Servers), plural(len(cfg.MCP.Servers)))
				a.printWarnings(cfg)
			}
			if len(errs) > 0 {
				return silentError{exitError}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// sameFile reports whether paths a and b name one existing file.
func sameFile(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// validateOutput is `validate --json`.
type validateOutput struct {
	File  string `json:"file"`
	Valid bool   `json:"valid"`
	// Missing: the user config does not exist yet (nothing configured).
	Missing bool        `json:"missing,omitempty"`
	Servers int         `json:"servers"`
	Errors  []errorView `json:"errors"`
	// InvalidServers are the servers held for errors of their own entry
	// (named, or mcp.servers[i] without a valid name); the others can run.
	InvalidServers []string `json:"invalidServers"`
	// Warnings are what is likely wrong in entries that are valid (a
	// whole command line as the program); they do not make the file
	// invalid.
	Warnings []errorView `json:"warnings"`
}

// quotedNames is `server "a"` or `servers "a", "b"`; an entry without a
// valid name is given by its place.
func quotedNames(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		if schema.IsEntryLabel(n) {
			q[i] = "the entry " + n
		} else {
			q[i] = strconv.Quote(n)
		}
	}
	if len(names) == 1 && schema.IsEntryLabel(names[0]) {
		return q[0]
	}
	return pick(len(names) == 1, "server ", "servers ") + strings.Join(q, ", ")
}

func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
