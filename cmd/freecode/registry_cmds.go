package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcpregistry"
	"github.com/freecode/freecode/schema"
)

// registries are the clients of the user config's mcp.registries (the
// official registry when it names none).
func (a *app) registries() ([]*mcpregistry.Client, error) {
	var urls []string
	if path, err := a.configPath(); err == nil {
		if v, err := a.schema(); err == nil {
			if _, serr := os.Stat(path); serr == nil {
				cfg, err := v.Load(path, schema.LoadOptions{NoExpand: true, HoldInvalid: true})
				if err != nil {
					return nil, err
				}
				urls = cfg.MCP.Registries
			}
		}
	}
	if len(urls) == 0 {
		urls = []string{mcpregistry.OfficialURL}
	}
	out := make([]*mcpregistry.Client, 0, len(urls))
	for _, u := range urls {
		c, err := mcpregistry.New(u, nil, mcpregistry.Limits{})
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// searchView is one search result as --json prints it.
type searchView struct {
	Registry    string   `json:"registry"`
	Name        string   `json:"name"`
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Version     string   `json:"version"`
	Packages    []string `json:"packages,omitempty"`
	Remotes     []string `json:"remotes,omitempty"`
	Status      string   `json:"status"`
	Digest      string   `json:"digest"`
}

func viewEntry(e mcpregistry.Entry) searchView {
	v := searchView{Registry: e.Registry, Name: e.Server.Name, Title: e.Server.Title, Description: e.Server.Description,
		Version: e.Server.Version, Status: e.Official.Status, Digest: e.Digest}
	for _, p := range e.Server.Packages {
		v.Packages = append(v.Packages, p.RegistryType+":"+p.Identifier)
	}
	for _, r := range e.Server.Remotes {
		v.Remotes = append(v.Remotes, r.Type+":"+r.URL)
	}
	return v
}

// kinds is the KIND column: the package types and "remote".
func (v searchView) kinds() string {
	var ks []string
	for _, p := range v.Packages {
		k, _, _ := strings.Cut(p, ":")
		ks = append(ks, k)
	}
	if len(v.Remotes) > 0 {
		ks = append(ks, "remote")
	}
	slices.Sort(ks)
	return strings.Join(slices.Compact(ks), ",")
}

func (a *app) searchRegistryCmd() *cobra.Command {
	var asJSON, all bool
	c := &cobra.Command{
		Use:   "search <words>",
		Short: "Search the MCP registries for servers to install",
		Long: `Search the configured MCP registries (mcp.registries; the official registry,
https://registry.modelcontextprotocol.io, when unset) for servers whose
names contain the words, and show each one's latest version. Install one
with "freecode mcp install <name>".`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			regs, err := a.registries()
			if err != nil {
				return err
			}
			var views []searchView
			var errs []error
			for _, r := range regs {
				es, err := r.Search(c.Context(), strings.Join(args, " "), mcpregistry.SearchOptions{IncludeDeleted: all})
				if err != nil {
					errs = append(errs, err)
				}
				for _, e := range es {
					views = append(views, viewEntry(e))
				}
			}
			if len(views) == 0 && len(errs) > 0 {
				return errors.Join(errs...)
			}
			for _, err := range errs {
				fmt.Fprintf(a.stderr, "warning: %s\n", termtext.Neutralize(err.Error()))
			}
			if asJSON {
				if views == nil {
					views = []searchView{}
				}
				return a.printJSON(views)
			}
			if len(views) == 0 {
				fmt.Fprintf(a.stdout, "No server in the registry matches %s.\n", termtext.Quote(strings.Join(args, " ")))
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tVERSION\tKIND\tSTATUS\tDESCRIPTION")
			for _, v := range views {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(v.Name), cell(termtext.Elide(v.Version, 20)), v.kinds(), cell(v.Status), cell(termtext.Elide(v.Description, 70)))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&all, "all", false, "list deleted servers too")
	return c
}

// installFlags are the values install and update take.
type installFlags struct {
	envs, headers, vars, args []string
	prefer                    string
}

func (f *installFlags) register(c *cobra.Command) {
	c.Flags().StringArrayVar(&f.envs, "env", nil, "environment variable `NAME=VALUE` the server.json asks for (a secret only as '${VAR}'; repeatable)")
	c.Flags().StringArrayVar(&f.headers, "header", nil, "HTTP header `NAME=VALUE` of a remote (a secret only as '${VAR}'; repeatable)")
	c.Flags().StringArrayVar(&f.vars, "var", nil, "`NAME=VALUE` of a {variable} (remote URLs, values) or a bundle's user_config (repeatable)")
	c.Flags().StringArrayVar(&f.args, "arg", nil, "`NAME=VALUE` of an argument, by its valueHint or flag name (repeatable)")
	c.Flags().StringVar(&f.prefer, "package", "", "what to install: npm, pypi, oci, nuget, mcpb or remote (default: the first package this machine runs, else a remote)")
}

func (f *installFlags) values() (mcpregistry.Values, error) {
	var v mcpregistry.Values
	var err error
	if v.Env, err = keyValues("--env", f.envs); err != nil {
		return v, err
	}
	if v.Header, err = keyValues("--header", f.headers); err != nil {
		return v, err
	}
	if v.Var, err = keyValues("--var", f.vars); err != nil {
		return v, err
	}
	v.Arg, err = keyValues("--arg", f.args)
	return v, err
}

// findServer reads version (""/latest: the latest) of name from the first
// registry that has it; not found anywhere, the error names close ones.
func (a *app) findServer(ctx context.Context, regs []*mcpregistry.Client, name, version string) (mcpregistry.Entry, error) {
	var errs []error
	for _, r := range regs {
		e, err := r.Get(ctx, name, version)
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, mcpregistry.ErrNotFound) {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return mcpregistry.Entry{}, errors.Join(errs...)
	}
	what := name
	if version != "" && version != "latest" {
		what += "@" + version
		if _, err := a.findServer(ctx, regs, name, ""); err == nil {
			return mcpregistry.Entry{}, fmt.Errorf("%s: no such version of %s in the registry; `freecode mcp search %s` shows its latest", termtext.Quote(what), termtext.Quote(name), termtext.ShellWord(name))
		}
	}
	// Names close to it: the registry searches by substring, so each
	// word of the name's last part is searched for (bounded by the
	// client's limits) and the results ranked by edit distance.
	word := name[strings.LastIndex(name, "/")+1:]
	var names []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(word, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		if len(w) < 3 || seen[w] {
			continue
		}
		seen[w] = true
		for _, r := range regs {
			es, _ := r.Search(ctx, w, mcpregistry.SearchOptions{})
			for _, e := range es {
				if !slices.Contains(names, e.Server.Name) {
					names = append(names, e.Server.Name)
				}
			}
		}
	}
	near := closest(name, names)
	for _, n := range names {
		if len(near) < maxSuggestions && !slices.Contains(near, n) && strings.Contains(n, word) {
			near = append(near, n)
		}
	}
	return mcpregistry.Entry{}, fmt.Errorf("%s is not in the registry.%s", termtext.Quote(what), didYouMean(near))
}

var nameCharRE = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// localName is the entry name of registry server name: its last part,
// made a valid server name.
func localName(name string) string {
	n := name[strings.LastIndex(name, "/")+1:]
	n = nameCharRE.ReplaceAllString(n, "-")
	for strings.Contains(n, "__") {
		n = strings.ReplaceAll(n, "__", "_")
	}
	n = strings.TrimLeft(n, "-_0123456789")
	if len(n) > 48 {
		n = n[:48]
	}
	n = strings.TrimRight(n, "_-")
	if n == "" || n == "builtin" {
		n = "server"
	}
	return n
}

var versionCharRE = regexp.MustCompile(`[^A-Za-z0-9._+-]+`)

// versionDir is version as one path element ("1.0.0" stays).
func versionDir(version string) string {
	v := versionCharRE.ReplaceAllString(version, "-")
	if len(v) > 64 {
		v = v[:64]
	}
	if v == "" || strings.HasPrefix(v, ".") {
		v = "v" + v
	}
	return v
}

// planEntry maps e and, for a bundle not dry, downloads and unpacks it.
func (a *app) planEntry(ctx context.Context, e mcpregistry.Entry, local string, f *installFlags, dry bool) (mcpregistry.Plan, error) {
	vals, err := f.values()
	if err != nil {
		return mcpregistry.Plan{}, err
	}
	plan, err := mcpregistry.Map(e.Server, mcpregistry.Options{Values: vals, LookPath: exec.LookPath, Prefer: f.prefer})
	var me *mcpregistry.MissingError
	if errors.As(err, &me) && !dry {
		// Required values not given: asked on a terminal, once each.
		if term := a.stdinTerminal(); term != nil {
			if perr := promptMissing(bufio.NewReader(term), a.stderr, me, f); perr != nil {
				return plan, perr
			}
			if vals, err = f.values(); err != nil {
				return plan, err
			}
			plan, err = mcpregistry.Map(e.Server, mcpregistry.Options{Values: vals, LookPath: exec.LookPath, Prefer: f.prefer})
		}
	}
	if err != nil {
		return plan, err
	}
	if plan.Bundle == nil || dry {
		return plan, nil
	}
	home, err := a.home()
	if err != nil {
		return plan, err
	}
	dir := filepath.Join(home, "mcpb", local, versionDir(e.Server.Version)+"-"+plan.Bundle.SHA256[:12])
	if err := os.RemoveAll(dir); err != nil {
		return plan, err
	}
	res, err := mcpregistry.InstallBundle(ctx, nil, *plan.Bundle, dir, vals.Var)
	if err != nil {
		return plan, err
	}
	plan.Command = append(res.Command, plan.Command...)
	if len(res.Env) > 0 {
		if plan.Env == nil {
			plan.Env = map[string]string{}
		}
		maps.Copy(plan.Env, res.Env)
	}
	plan.Secrets = append(plan.Secrets, res.Secrets...)
	return plan, nil
}

// promptMissing asks for each value me names ("--env NAME=…") on r,
// adding the answers to f. An empty answer ends it with me. (Secrets are
// never asked: they are ${VAR} references.)
func promptMissing(r *bufio.Reader, w io.Writer, me *mcpregistry.MissingError, f *installFlags) error {
	for _, fl := range me.Flags {
		flag, rest, _ := strings.Cut(fl, " ")
		name, _, _ := strings.Cut(rest, "=")
		fmt.Fprintf(w, "%s needs %s (%s): ", termtext.Neutralize(me.Server), termtext.Neutralize(name), flag)
		line, err := r.ReadString('\n')
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return me
		}
		kv := name + "=" + line
		switch flag {
		case "--env":
			f.envs = append(f.envs, kv)
		case "--header":
			f.headers = append(f.headers, kv)
		case "--var":
			f.vars = append(f.vars, kv)
		case "--arg":
			f.args = append(f.args, kv)
		}
	}
	return nil
}

// entryFields is the config entry of plan, named local, from e.
func entryFields(local string, e mcpregistry.Entry, plan mcpregistry.Plan, enabled bool) []schema.Field {
	fields := []schema.Field{{Key: "name", Value: local}, {Key: "type", Value: plan.Type}}
	if plan.Type == "remote" {
		fields = append(fields, schema.Field{Key: "url", Value: plan.URL}, schema.Field{Key: "transport", Value: plan.Transport})
		if len(plan.Headers) > 0 {
			fields = append(fields, schema.Field{Key: "headers", Value: plan.Headers})
		}
	} else {
		fields = append(fields, schema.Field{Key: "command", Value: plan.Command})
	}
	if len(plan.Env) > 0 {
		fields = append(fields, schema.Field{Key: "env", Value: plan.Env})
	}
	fields = append(fields, schema.Field{Key: "enabled", Value: enabled})
	prov := map[string]string{"url": e.Registry, "name": e.Server.Name, "version": e.Server.Version, "digest": e.Digest, "kind": plan.Kind}
	if plan.Bundle != nil {
		prov["bundleSha256"] = plan.Bundle.SHA256
	}
	return append(fields, schema.Field{Key: "registry", Value: prov})
}

// projectSettings is the project's settings file to write: the one found,
// else .freecode/settings.json in --project or the working directory.
func (a *app) projectSettings() (string, error) {
	src, err := a.sources()
	if err != nil {
		return "", err
	}
	if src.Project != "" {
		return src.Project, nil
	}
	dir := a.projectFlag
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, schema.ProjectFile), nil
}

func splitNameVersion(arg string) (string, string) {
	if i := strings.LastIndex(arg, "@"); i > 0 {
		return arg[:i], arg[i+1:]
	}
	return arg, ""
}

func (a *app) installCmd() *cobra.Command {
	var (
		f        installFlags
		as       string
		scope    string
		dry      bool
		disabled bool
	)
	c := &cobra.Command{
		Use:   "install <name>[@version]",
		Short: "Add a server from the MCP registry to the config file",
		Long: `Add a server from the MCP registry (mcp.registries; the official registry when
unset) to the config file, pinned to its version (the latest unless
@version is given): an npm package runs with "npx -y pkg@version", a PyPI
one with uvx, an OCI image with docker (or podman) run, an mcpb bundle is
downloaded, checked against its fileSha256 and unpacked under
$FREECODE_HOME/mcpb, and a remote is reached at its URL.

Values the server asks for are given with --env, --header, --var and --arg.
Secrets are never written: the entry holds a ${VAR} reference and install
says which variables to set. The entry records where it came from
(registry, name, version and the server.json's digest): "mcp get" shows it,
"mcp outdated" and "mcp update" compare it with the registry.`,
		Args: exactArgs(1, "<name>[@version]"),
		RunE: func(c *cobra.Command, args []string) error {
			name, version := splitNameVersion(args[0])
			if scope != "user" && scope != "project" {
				return usageError{fmt.Errorf("--scope must be user or project, not %q", scope)}
			}
			regs, err := a.registries()
			if err != nil {
				return err
			}
			e, err := a.findServer(c.Context(), regs, name, version)
			if err != nil {
				return err
			}
			switch e.Official.Status {
			case mcpregistry.StatusDeleted:
				return fmt.Errorf("%s %s is deleted from the registry%s", termtext.Quote(name), termtext.Quote(e.Server.Version), statusMessage(e))
			case mcpregistry.StatusDeprecated:
				fmt.Fprintf(a.stderr, "warning: %s %s is deprecated%s\n", termtext.Quote(name), termtext.Quote(e.Server.Version), statusMessage(e))
			}
			local := as
			if local == "" {
				local = localName(name)
			}
			plan, err := a.planEntry(c.Context(), e, local, &f, dry)
			if err != nil {
				return err
			}
			fields := entryFields(local, e, plan, !disabled)
			what := fmt.Sprintf("%s %s (%s)", termtext.Quote(name), termtext.Quote(e.Server.Version), plan.Kind)
			if dry {
				fmt.Fprintf(a.stdout, "Would install %s as %q:\n", what, local)
				a.printPlan(plan)
				a.printSecrets(plan.Secrets)
				return nil
			}
			var path string
			if scope == "project" {
				if path, err = a.projectSettings(); err != nil {
					return err
				}
				v, err := a.schema()
				if err != nil {
					return err
				}
				if err := v.Edit(c.Context(), path, func(d *schema.Doc) error { return addNew(d, local, fields) }); err != nil {
					return err
				}
			} else if path, err = a.edit(c, "", func(d *schema.Doc) error { return addNew(d, local, fields) }); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Installed %s as %s server %q in %s\n", what, plan.Type, local, path)
			a.printSecrets(plan.Secrets)
			if scope == "project" {
				fmt.Fprintln(a.stdout, "A project's servers run once you trust it: `freecode mcp trust`.")
				return nil
			}
			a.printApplies([]string{local}, true)
			return nil
		},
	}
	f.register(c)
	c.Flags().StringVar(&as, "as", "", "the entry's `NAME` (default: the last part of the registry name)")
	c.Flags().StringVar(&scope, "scope", "user", "where to write it: user ($FREECODE_HOME/config.json) or project (.freecode/settings.json, run once trusted)")
	c.Flags().BoolVar(&dry, "dry-run", false, "show the entry without writing it (nor downloading a bundle)")
	c.Flags().BoolVar(&disabled, "disabled", false, "add the server disabled")
	return c
}

func addNew(d *schema.Doc, local string, fields []schema.Field) error {
	if d.HasServer(local) {
		return fmt.Errorf("a server named %q already exists: choose another name with --as, or `freecode mcp update %s`", local, local)
	}
	return d.AddServer(fields)
}

func statusMessage(e mcpregistry.Entry) string {
	if e.Official.StatusMessage == "" {
		return ""
	}
	return ": " + termtext.Neutralize(termtext.Elide(e.Official.StatusMessage, 200))
}

func (a *app) printPlan(p mcpregistry.Plan) {
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	if p.Type == "remote" {
		fmt.Fprintf(tw, "  url:\t%s\n", termtext.Quote(p.URL))
		fmt.Fprintf(tw, "  transport:\t%s\n", p.Transport)
	} else if p.Bundle != nil {
		fmt.Fprintf(tw, "  bundle:\t%s (sha256 %s), unpacked under $FREECODE_HOME/mcpb\n", termtext.Quote(p.Bundle.URL), p.Bundle.SHA256)
	} else {
		fmt.Fprintf(tw, "  command:\t%s\n", termtext.ShellCommand(p.Command...))
	}
	for _, m := range []struct {
		label string
		kv    map[string]string
	}{{"headers", p.Headers}, {"env", p.Env}} {
		for i, k := range slices.Sorted(maps.Keys(m.kv)) {
			label := ""
			if i == 0 {
				label = "  " + m.label + ":"
			}
			val := m.kv[k]
			if !strings.Contains(val, "${") && m.label == "headers" {
				val = "***" // as get shows a header: a value may be a token
			}
			fmt.Fprintf(tw, "%s\t%s\n", label, termtext.Quote(k+"="+val))
		}
	}
	tw.Flush()
}

// printSecrets tells which variables to set; never a value.
func (a *app) printSecrets(ss []mcpregistry.Secret) {
	if len(ss) == 0 {
		return
	}
	fmt.Fprintln(a.stdout, "Set these environment variables where FreeCode runs (the entry holds only ${VAR} references):")
	for _, s := range ss {
		line := fmt.Sprintf("  %s  (%s)", s.Var, s.For)
		if s.Description != "" {
			line += ": " + termtext.Elide(s.Description, 100)
		}
		fmt.Fprintln(a.stdout, termtext.Neutralize(line))
	}
}

// installed are the configured servers that came from a registry.
func (a *app) installed() ([]schema.Server, error) {
	cfg, err := a.loadShown()
	if err != nil {
		return nil, err
	}
	var out []schema.Server
	for _, s := range cfg.MCP.Servers {
		if s.Registry != nil {
			out = append(out, s)
		}
	}
	return out, nil
}

type outdatedView struct {
	Name      string `json:"name"`
	Registry  string `json:"registry"`
	Server    string `json:"server"`
	Installed string `json:"installed"`
	Latest    string `json:"latest"`
	Status    string `json:"status"`
}

// latestOf reads the latest version of s's registry server.
func latestOf(ctx context.Context, s schema.Server) (mcpregistry.Entry, error) {
	r, err := mcpregistry.New(s.Registry.URL, nil, mcpregistry.Limits{})
	if err != nil {
		return mcpregistry.Entry{}, err
	}
	return r.Get(ctx, s.Registry.Name, "latest")
}

func (a *app) outdatedCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "outdated",
		Short: "List installed servers with a newer version in their registry",
		Args:  exactArgs(0, ""),
		RunE: func(c *cobra.Command, args []string) error {
			ss, err := a.installed()
			if err != nil {
				return err
			}
			views := []outdatedView{}
			for _, s := range ss {
				e, err := latestOf(c.Context(), s)
				if err != nil {
					fmt.Fprintf(a.stderr, "warning: %s: %s\n", s.Name, termtext.Neutralize(err.Error()))
					continue
				}
				if e.Server.Version != s.Registry.Version || e.Official.Status != mcpregistry.StatusActive {
					views = append(views, outdatedView{Name: s.Name, Registry: s.Registry.URL, Server: s.Registry.Name,
						Installed: s.Registry.Version, Latest: e.Server.Version, Status: e.Official.Status})
				}
			}
			if asJSON {
				return a.printJSON(views)
			}
			if len(views) == 0 {
				fmt.Fprintf(a.stdout, "Every installed server is at its registry's latest version (%d checked).\n", len(ss))
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSERVER\tINSTALLED\tLATEST\tSTATUS")
			for _, v := range views {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", cell(v.Name), cell(v.Server), cell(v.Installed), cell(v.Latest), cell(v.Status))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout, "Update one with `freecode mcp update <name>`.")
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func (a *app) updateCmd() *cobra.Command {
	var (
		f   installFlags
		dry bool
	)
	c := &cobra.Command{
		Use:   "update <name>[@version]",
		Short: "Move an installed server to its registry's latest version (or @version)",
		Long: `Rewrite the entry of a server installed from a registry for its latest version
(or @version), through the same editor as every edit: a running freecode
serve restarts it when its command or URL changed. The entry's env and
headers as written are given again (a secret stays the reference it is);
give other values with --env, --header, --var and --arg. A server the
project installed is updated in the project's settings, which then wait
to be trusted again.`,
		Args: exactArgs(1, "<name>[@version]"),
		RunE: func(c *cobra.Command, args []string) error {
			local, version := splitNameVersion(args[0])
			cfg, err := a.loadShown()
			if err != nil {
				return err
			}
			s, ok := cfg.Server(local)
			if !ok {
				return noServer(cfg, local)
			}
			if s.Registry == nil {
				return fmt.Errorf("server %q was not installed from a registry (it has no registry object): nothing to update from", local)
			}
			// A project's entry is updated in its settings file, which a
			// change makes the project's to trust again.
			project := ""
			if strings.HasPrefix(s.Source, schema.SourceProjectPrefix) && cfg.Project != nil {
				project = cfg.Project.Path
			}
			r, err := mcpregistry.New(s.Registry.URL, nil, mcpregistry.Limits{})
			if err != nil {
				return err
			}
			e, err := a.findServer(c.Context(), []*mcpregistry.Client{r}, s.Registry.Name, version)
			if err != nil {
				return err
			}
			if e.Server.Version == s.Registry.Version && e.Digest == s.Registry.Digest {
				fmt.Fprintf(a.stdout, "%q is at %s %s already.\n", local, termtext.Quote(s.Registry.Name), termtext.Quote(e.Server.Version))
				return nil
			}
			// What the entry holds is given again; flags win.
			for k, v := range s.Env {
				f.envs = append([]string{k + "=" + v}, f.envs...)
			}
			for k, v := range s.Headers {
				f.headers = append([]string{k + "=" + v}, f.headers...)
			}
			if f.prefer == "" {
				f.prefer = s.Registry.Kind
			}
			plan, err := a.planEntry(c.Context(), e, local, &f, dry)
			if err != nil {
				return err
			}
			fields := entryFields(local, e, plan, s.Enabled)
			from := fmt.Sprintf("%s → %s", termtext.Quote(s.Registry.Version), termtext.Quote(e.Server.Version))
			if dry {
				fmt.Fprintf(a.stdout, "Would update %q (%s) %s:\n", local, termtext.Quote(s.Registry.Name), from)
				a.printPlan(plan)
				a.printSecrets(plan.Secrets)
				return nil
			}
			// Only what the registry decides is written: a timeout, a
			// tools filter, roots or a lifecycle set by hand stay.
			drop := []string{"url", "transport", "headers"}
			if plan.Type == "remote" {
				drop = []string{"command"}
			}
			if len(plan.Env) == 0 {
				drop = append(drop, "env")
			}
			set := func(d *schema.Doc) error {
				return d.SetServerFields(local, slices.DeleteFunc(fields, func(f schema.Field) bool { return f.Key == "name" }), drop)
			}
			path := project
			if project != "" {
				v, verr := a.schema()
				if verr != nil {
					return verr
				}
				err = v.Edit(c.Context(), project, set)
			} else {
				path, err = a.edit(c, local, set)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Updated %q (%s) %s in %s\n", local, termtext.Quote(s.Registry.Name), from, path)
			a.printSecrets(plan.Secrets)
			switch {
			case project != "":
				fmt.Fprintln(a.stdout, "The project's settings changed, so its servers wait until you trust them again: `freecode mcp trust`.")
			case s.Enabled:
				a.printApplies([]string{local}, false)
			}
			return nil
		},
	}
	f.register(c)
	c.Flags().BoolVar(&dry, "dry-run", false, "show the new entry without writing it")
	return c
}

// provenanceText is the registry line of mcp get.
func provenanceText(p *schema.Provenance) string {
	d := strings.TrimPrefix(p.Digest, "sha256:")
	if _, err := hex.DecodeString(d); err == nil && len(d) > 12 {
		d = d[:12]
	}
	s := fmt.Sprintf("%s %s from %s (%s, sha256:%s)", p.Name, p.Version, p.URL, p.Kind, d)
	return cell(s)
}
