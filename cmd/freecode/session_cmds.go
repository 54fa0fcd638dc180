package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/gofrs/flock"
	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/internal/termtext"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// configuredServer loads the config (with ${VAR} expanded) and returns the
// named server.
func (a *app) configuredServer(name string) (*schema.Config, schema.Server, error) {
	cfg, err := a.load(true)
	if err != nil {
		return nil, schema.Server{}, err
	}
	s, err := a.serverIn(cfg, name)
	if err != nil {
		return nil, schema.Server{}, err
	}
	return cfg, s, nil
}

// serverIn returns the named server of cfg, if it is configured and not
// held back.
func (a *app) serverIn(cfg *schema.Config, name string) (schema.Server, error) {
	s, ok := cfg.Server(name)
	if !ok {
		return schema.Server{}, noServer(cfg, name)
	}
	if s.Hold != nil {
		return schema.Server{}, fmt.Errorf("server %q does not run: %s", name, holdReason(s.Hold))
	}
	return s, nil
}

// connectWith starts one server for the duration of a command (`mcp
// start`). A remote server is signed in to with the home's stored tokens
// (renewed as needed); one that needs a user to sign in fails with
// mcp.ErrNeedsLogin. A local server still working when its timeout runs
// out is waited for (keepWaiting). live, if not nil, shows the server's
// stderr lines as they come and why the start still waits; elicit
// answers the server's elicitations (mcp.Options.Elicit; nil: none, and
// the session declares no elicitation capability).
func (a *app) connectWith(ctx context.Context, srv schema.Server, live *startLive, elicit mcp.ElicitHandler) (*mcp.Session, error) {
	opts := mcp.Options{Logger: logr.Discard(), ClientName: "freecode",
		Launcher: a.launcher(logr.Discard()), Elicit: elicit}
	if live != nil {
		opts.OnStderr = live.line
		a.keepWaiting(&opts, srv, live.working)
	} else {
		a.keepWaiting(&opts, srv, nil)
	}
	if srv.SignsIn() {
		store, err := a.tokenStore(true)
		if err != nil {
			return nil, err
		}
		opts.Tokens = store
	}
	return mcp.Connect(ctx, controller.MCPSpec(srv), opts)
}

// keepWaiting makes a one-shot start of srv wait as serve's starts do:
// when its timeout runs out while the server is still working (using CPU
// or writing to stderr, as a first `npx -y` does while it downloads), it
// goes on, up to controller.WorkingTimeout (a.startBound in the command
// tests); a server that shows no sign of work still fails at its timeout.
// notice is told each time the start goes on (mcp.Options.OnStillWorking);
// nil: a line on stderr, which leaves stdout (and so --json) as it is.
func (a *app) keepWaiting(opts *mcp.Options, srv schema.Server, notice func(how string, spent, budget time.Duration)) {
	timeout := srv.Timeout
	opts.WorkingTimeout = controller.WorkingTimeout(timeout)
	if a.startBound > 0 {
		opts.WorkingTimeout = max(a.startBound, timeout)
	}
	if notice == nil {
		notice = func(how string, spent, budget time.Duration) {
			a.noticeMu.Lock()
			defer a.noticeMu.Unlock()
			fmt.Fprintf(a.stderr, "%s: %s\n", srv.Name, stillStarting(how, spent, budget))
		}
	}
	opts.OnStillWorking = notice
}

// stillStarting says why a start still waits: "still starting (using CPU,
// 5s); waiting up to 10s …".
func stillStarting(how string, spent, budget time.Duration) string {
	return fmt.Sprintf("still starting (%s, %s); waiting up to %s …", how, spent, budget)
}

// toolLine is a tool's id and flag for a listing. The id holds the
// server's tool name, so it is neutralised like all server text.
func toolLine(t mcp.Tool) string {
	id := termtext.Neutralize(t.ID)
	if t.ReadOnly {
		return id + " (read-only)"
	}
	return id
}

func (a *app) startCmd() *cobra.Command {
	var watch bool
	c := &cobra.Command{
		Use:   "start <name>",
		Short: "Test a configured server: connect it now, list its tools, and stop it again (or --watch)",
		Long: `Test one configured server for real: start its process (or reach its URL),
initialize it, list and convert its tools, print them, and stop it again.
On a terminal it shows the time so far and the server's stderr while it
starts.
With --watch it stays connected and prints changes of its tools, resources
and prompts until Ctrl-C or
` + "`freecode mcp stop <name>`" + ` from another terminal. No process is left behind.
Watching with stdin on a terminal, it answers the server's questions
(elicitations) there, field by field; without one it declares none.`,
		Args: exactArgs(1, "<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			cfg, srv, err := a.configuredServer(args[0])
			if err != nil {
				return err
			}
			if !srv.Enabled {
				fmt.Fprintf(a.stderr, "note: server %q is disabled in %s; starting it anyway for this test\n", srv.Name, cfg.Path)
			}
			a.printWarnings(cfg, srv.Name)
			var ready func() error
			if watch {
				var unlock func()
				if ready, unlock, err = a.claimWatch(srv.Name); err != nil {
					return err
				}
				defer unlock()
			}
			began := time.Now()
			// On a terminal the wait is shown as it happens: the time so
			// far and what the server writes to stderr.
			var live *startLive
			if writerIsTerminal(a.stdout) {
				live = newStartLive(a.stdout, srv.Name, began)
			}
			// Watching on a terminal, the server's questions are asked
			// there, once the watch has begun: the start's status line
			// would overwrite one asked before. Else the session declares
			// no elicitation, as nobody could answer.
			var elicit mcp.ElicitHandler
			watching := make(chan struct{})
			if term := a.stdinTerminal(); watch && term != nil {
				elicit = a.watchElicit(watching, term)
			}
			sess, err := a.connectWith(c.Context(), srv, live, elicit)
			if live != nil {
				live.stop()
			}
			elapsed := time.Since(began).Round(time.Millisecond)
			if err != nil {
				fmt.Fprintf(a.stdout, "✗ Server %q failed to start (%s)\n", srv.Name, elapsed)
				return a.withRemedy(srv, err)
			}
			defer sess.Close()
			tools, hidden := controller.FilterTools(srv.Tools, sess.Tools())
			count := fmt.Sprintf("%d tool%s", len(tools), plural(len(tools)))
			if len(hidden) > 0 {
				count = fmt.Sprintf("%d of %d tools", len(tools), len(tools)+len(hidden))
			}
			fmt.Fprintf(a.stdout, "✓ Server %q started with %s%s (%s)\n", srv.Name, count, featureCounts(sess.Features()), elapsed)
			for _, t := range tools {
				fmt.Fprintln(a.stdout, "  "+toolLine(t))
			}
			a.printConvertErrors(sess)
			if !watch {
				if err := sess.Close(); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "Stopped %q again: `mcp start` only tests a server; `freecode serve` keeps servers running.\n", srv.Name)
				return nil
			}
			if err := ready(); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Watching %q; Ctrl-C or `freecode mcp stop %s` ends it.\n", srv.Name, srv.Name)
			close(watching)
			return a.watchSession(c.Context(), sess, srv.Tools, tools)
		},
	}
	c.Flags().BoolVar(&watch, "watch", false, "stay connected and print changes of tools, resources and prompts")
	return c
}

// featureCounts is what a session lists beside tools, for `mcp start`'s
// summary: ", 3 resources, 1 resource template and 2 prompts", or "" for a
// server that lists none.
func featureCounts(f mcp.Features) string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{len(f.Resources), "resource"}, {len(f.Templates), "resource template"}, {len(f.Prompts), "prompt"}} {
		if c.n > 0 {
			parts = append(parts, countOf(c.n, c.what))
		}
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return " and " + parts[0]
	}
	return ", " + strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// printConvertErrors prints, as warnings, the tools left out and the tools
// kept with input schema references not followed.
func (a *app) printConvertErrors(sess *mcp.Session) {
	for _, err := range sess.ConvertErrors() {
		fmt.Fprintf(a.stderr, "warning: %s\n", termtext.Neutralize(err.Error()))
	}
	a.printToolWarnings(sess.Warnings())
}

func (a *app) printToolWarnings(warnings []mcp.ToolWarning) {
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", termtext.Neutralize(w.String()))
	}
}

// watchSession prints changes of the tool set, the resources and the
// prompts until ctx ends or the server does.
func (a *app) watchSession(ctx context.Context, sess *mcp.Session, filter schema.ToolFilter, tools []mcp.Tool) error {
	prev := map[string]mcp.Tool{}
	for _, t := range tools {
		prev[t.ID] = t
	}
	prevFeatures := sess.Features()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(a.stdout, "Stopped %q.\n", sess.Name())
			return sess.Close()
		case <-sess.Done():
			err := sess.Err()
			if err == nil {
				err = errors.New("the session ended")
			}
			return fmt.Errorf("server %q stopped: %w", sess.Name(), err)
		case <-sess.ToolsChanged():
			cur := map[string]mcp.Tool{}
			kept, _ := controller.FilterTools(filter, sess.Tools())
			for _, t := range kept {
				cur[t.ID] = t
			}
			fmt.Fprintf(a.stdout, "Tools changed: now %d tool%s\n", len(cur), plural(len(cur)))
			for _, id := range sortedKeys(cur) {
				if _, ok := prev[id]; !ok {
					fmt.Fprintln(a.stdout, "  + "+toolLine(cur[id]))
				}
			}
			for _, id := range sortedKeys(prev) {
				if _, ok := cur[id]; !ok {
					fmt.Fprintln(a.stdout, "  - "+termtext.Neutralize(id))
				}
			}
			a.printConvertErrors(sess)
			prev = cur
		case <-sess.FeaturesChanged():
			cur := sess.Features()
			fmt.Fprintf(a.stdout, "Resources and prompts changed: now %s, %s and %s\n", countOf(len(cur.Resources), "resource"),
				countOf(len(cur.Templates), "resource template"), countOf(len(cur.Prompts), "prompt"))
			printAddedRemoved(a.stdout, featureKeys(prevFeatures), featureKeys(cur))
			prevFeatures = cur
		}
	}
}

// featureKeys names what f lists, for watching it change: resource URIs,
// "template <uri template>" and "prompt <name>".
func featureKeys(f mcp.Features) map[string]bool {
	keys := map[string]bool{}
	for _, r := range f.Resources {
		keys[r.URI] = true
	}
	for _, t := range f.Templates {
		keys["template "+t.URITemplate] = true
	}
	for _, p := range f.Prompts {
		keys["prompt "+p.Name] = true
	}
	return keys
}

// printAddedRemoved prints "  + key" for the keys of cur not in prev and
// "  - key" for those of prev not in cur, sorted, neutralised.
func printAddedRemoved(w io.Writer, prev, cur map[string]bool) {
	for _, k := range sortedKeys(cur) {
		if !prev[k] {
			fmt.Fprintln(w, "  + "+termtext.Neutralize(k))
		}
	}
	for _, k := range sortedKeys(prev) {
		if !cur[k] {
			fmt.Fprintln(w, "  - "+termtext.Neutralize(k))
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// watchLockPath is where `start --watch` records itself for `stop`.
func (a *app) watchLockPath(name string) (string, error) {
	home, err := a.home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "run", "start-"+name+".lock"), nil
}

// home is $FREECODE_HOME (default ~/.freecode), also with --config: the
// run directory belongs to the home, not to wherever a config file lives.
func (a *app) home() (string, error) {
	return schema.Home(a.getenv)
}

// claimWatch takes the watch lock for name. ready writes our pid into it
// once the server is connected, which is when `stop` can find us; unlock
// releases it.
func (a *app) claimWatch(name string) (ready func() error, unlock func(), err error) {
	path, err := a.watchLockPath(name)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("create run directory: %w", err)
	}
	lock := flock.New(path)
	ok, err := lock.TryLock()
	if err != nil {
		return nil, nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		pid, _ := os.ReadFile(path)
		return nil, nil, fmt.Errorf("server %q is already being watched by process %s; run `freecode mcp stop %s` first", name, strings.TrimSpace(string(pid)), name)
	}
	ready = func() error {
		if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		return nil
	}
	unlock = func() {
		_ = os.Remove(path)
		_ = lock.Unlock()
	}
	return ready, unlock, nil
}

func (a *app) stopCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "stop <name>",
		Short: "Stop a `freecode mcp start --watch` of this server running in another terminal",
		Args:  exactArgs(1, "<name>"),
		RunE: func(c *cobra.Command, args []string) error {
			name := args[0]
			path, err := a.watchLockPath(name)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(path)
			if errors.Is(err, os.ErrNotExist) {
				// A name that is not configured is more likely a slip
				// than a watch that is not running.
				if cfg, lerr := a.load(false); lerr == nil {
					if _, ok := cfg.Server(name); !ok {
						return noServer(cfg, name)
					}
				}
				return fmt.Errorf("server %q is not running under `freecode mcp start --watch` (servers run by `freecode serve` follow the config: use `freecode mcp disable %s`)", name, name)
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", path, err)
			}
			lock := flock.New(path)
			if ok, _ := lock.TryLock(); ok {
				_ = lock.Unlock()
				_ = os.Remove(path)
				return fmt.Errorf("server %q is not running under `freecode mcp start --watch` (removed a stale record)", name)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil || pid <= 0 {
				return fmt.Errorf("server %q is still starting under `freecode mcp start --watch`; try again", name)
			}
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
				return fmt.Errorf("signal process %d: %w", pid, err)
			}
			// The watcher releases the lock once its server has stopped.
			ctx, cancel := context.WithTimeout(c.Context(), 15*time.Second)
			defer cancel()
			if ok, err := lock.TryLockContext(ctx, 20*time.Millisecond); err != nil || !ok {
				return fmt.Errorf("process %d did not stop within 15s: %w", pid, errors.Join(err, ctx.Err()))
			}
			_ = lock.Unlock()
			fmt.Fprintf(a.stdout, "Stopped %q (process %d).\n", name, pid)
			return nil
		},
	}
}

func (a *app) toolsCmd() *cobra.Command {
	var asJSON, verbose, all bool
	c := &cobra.Command{
		Use:   "tools [name]",
		Short: "Show a server's converted tools with ids, flags and resolved schemas; without a name, every tool",
		Long: `Show the converted tools of one server: ids, flags and resolved schemas.
When freecode serve runs this server (the same definition), the tools are
those of its session; otherwise the server is connected for the command.
Tools the server's "tools" filter hides are not shown; --all lists them
after the others, each with the rule that hides it.

Without a name, list the tools of every server, one line each: id, server
and flags (read-only or mutating; ask or denied by the permission rules;
deferred when serve leaves the definition out for mcp.toolBudget). They
come from freecode serve when it runs for this config, else each enabled
server is connected for the command.`,
		Args: rangeArgs(0, 1, "[name]"),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				if all {
					return usageError{errors.New("--all lists the tools a server's filter hides: give the server's name")}
				}
				return a.allTools(c.Context(), asJSON, verbose)
			}
			name := args[0]
			var st wire.ServerTools
			err := a.withServer(c.Context(), name, verbose, "Listing the tools of", func(eng api.Engine) error {
				var err error
				if st, err = eng.AllServerTools(c.Context(), name); err == nil && st.Phase != wire.PhaseReady {
					err = notReady(wire.ServerStatus{Name: name, Phase: st.Phase})
				}
				return err
			})
			if err != nil {
				return err
			}
			for _, w := range st.Warnings {
				fmt.Fprintf(a.stderr, "warning: %s\n", termtext.Neutralize(w))
			}
			if n := len(st.Hidden); n > 0 {
				more := " (--all lists them)"
				if all {
					more = ""
				}
				fmt.Fprintf(a.stderr, "%d of %d tools: %d hidden by the tools filter of %q%s.\n",
					len(st.Tools), len(st.Tools)+n, n, name, more)
			}
			if asJSON {
				if all {
					return a.printJSON(struct {
						Tools  []wire.Tool       `json:"tools"`
						Hidden []wire.HiddenTool `json:"hidden"`
					}{st.Tools, append([]wire.HiddenTool{}, st.Hidden...)})
				}
				return a.printJSON(st.Tools)
			}
			for i, t := range st.Tools {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				writeToolText(a.stdout, t)
			}
			if all && len(st.Hidden) > 0 {
				if len(st.Tools) > 0 {
					fmt.Fprintln(a.stdout)
				}
				for _, h := range st.Hidden {
					fmt.Fprintf(a.stdout, "%s  (hidden by %s)\n", termtext.Neutralize(h.Name), h.Reason)
				}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&all, "all", false, "also list the tools the server's tools filter hides")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "say where the tools come from: freecode serve or a one-shot session")
	return c
}

// writeToolText prints one tool. Everything in it but the flags is the
// server's text, shown with terminal controls neutralised.
func writeToolText(w io.Writer, v wire.Tool) {
	flags := "mutating"
	if v.ReadOnly {
		flags = "read-only"
	}
	indent := func(s string) string {
		return strings.ReplaceAll(termtext.Neutralize(strings.TrimSpace(s)), "\n", "\n          ")
	}
	fmt.Fprintf(w, "%s  [%s]\n", termtext.Neutralize(v.ID), flags)
	if v.Title != "" {
		fmt.Fprintf(w, "  title:  %s\n", indent(v.Title))
	}
	if v.Description != "" {
		fmt.Fprintf(w, "  about:  %s\n", indent(v.Description))
	}
	schemaJSON, err := json.MarshalIndent(v.InputSchema, "          ", "  ")
	if err != nil {
		schemaJSON = v.InputSchema
	}
	fmt.Fprintf(w, "  input:  %s\n", termtext.EscapeJSON(schemaJSON))
}
