package main

import (
	"bytes"
	"cmp"
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

	"github.com/gofrs/flock"
	"github.com/spf13/cobra"

	"github.com/freecode/freecode/api"
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

// stillStarting says why a start still waits: "still starting (using CPU,
// 5s); waiting up to 10s …".
func stillStarting(how string, spent, budget time.Duration) string {
	return fmt.Sprintf("still starting (%s, %s); waiting up to %s …", how, spent, budget)
}

// toolLine is a tool's id and flag for a listing. The id holds the
// server's tool name, so it is neutralised like all server text.
func toolLine(t wire.Tool) string {
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
			ctx := c.Context()
			eng, err := a.oneShot(ctx, cfg, []schema.Server{srv}, oneShotOpts{live: live, elicit: elicit})
			if live != nil {
				live.stop()
			}
			elapsed := time.Since(began).Round(time.Millisecond)
			if err != nil {
				fmt.Fprintf(a.stdout, "✗ Server %q failed to start (%s)\n", srv.Name, elapsed)
				return a.withRemedy(srv, startErr(err))
			}
			defer eng.Close()
			// A watch subscribes before it reads what it shows first, so
			// that no change after that read goes unseen.
			var events api.Stream
			if watch {
				if events, err = eng.Events(ctx); err != nil {
					return err
				}
				defer events.Close()
			}
			v, err := readStartView(ctx, eng, srv.Name)
			if err != nil {
				return err
			}
			count := fmt.Sprintf("%d tool%s", len(v.tools.Tools), plural(len(v.tools.Tools)))
			if n := len(v.tools.Hidden); n > 0 {
				count = fmt.Sprintf("%d of %d tools", len(v.tools.Tools), len(v.tools.Tools)+n)
			}
			fmt.Fprintf(a.stdout, "✓ Server %q started with %s%s (%s)\n", srv.Name, count, v.featureCounts(), elapsed)
			for _, t := range v.tools.Tools {
				fmt.Fprintln(a.stdout, "  "+toolLine(t))
			}
			a.printToolWarnings(v.tools.Warnings)
			if !watch {
				eng.Close()
				fmt.Fprintf(a.stdout, "Stopped %q again: `mcp start` only tests a server; `freecode serve` keeps servers running.\n", srv.Name)
				return nil
			}
			if err := ready(); err != nil {
				return err
			}
			// A session that ended between the start and the subscription
			// sent its phase change to nobody: the status says so.
			if err := stillReady(ctx, eng, srv.Name); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Watching %q; Ctrl-C or `freecode mcp stop %s` ends it.\n", srv.Name, srv.Name)
			close(watching)
			return a.watchServer(ctx, eng, events, v)
		},
	}
	c.Flags().BoolVar(&watch, "watch", false, "stay connected and print changes of tools, resources and prompts")
	return c
}

// startView is what `mcp start` shows of a ready server, read from its
// engine, and what --watch compares a change with.
type startView struct {
	// tools are the server's registered tools, with the number its tools
	// filter hides (Hidden) and the warnings about its list.
	tools     wire.ServerTools
	resources wire.ServerResources
	prompts   wire.ServerPrompts
}

// readStartView reads the view of server name from eng.
func readStartView(ctx context.Context, eng api.Engine, name string) (v startView, err error) {
	if v.tools, err = eng.AllServerTools(ctx, name); err != nil {
		return v, err
	}
	res, err := eng.Resources(ctx, name)
	if err != nil {
		return v, err
	}
	prompts, err := eng.Prompts(ctx, name)
	if err != nil {
		return v, err
	}
	// One server asked for: one entry each.
	if len(res.Servers) > 0 {
		v.resources = res.Servers[0]
	}
	if len(prompts.Servers) > 0 {
		v.prompts = prompts.Servers[0]
	}
	return v, nil
}

// featureCounts is what the server lists beside tools, for `mcp start`'s
// summary: ", 3 resources, 1 resource template and 2 prompts", or "" for a
// server that lists none.
func (v startView) featureCounts() string {
	var parts []string
	for _, c := range []struct {
		n    int
		what string
	}{{len(v.resources.Resources), "resource"}, {len(v.resources.Templates), "resource template"}, {len(v.prompts.Prompts), "prompt"}} {
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

// featureKeys names what the server lists beside tools, for watching it
// change: resource URIs, "template <uri template>" and "prompt <name>".
func (v startView) featureKeys() map[string]bool {
	keys := map[string]bool{}
	for _, r := range v.resources.Resources {
		keys[r.URI] = true
	}
	for _, t := range v.resources.Templates {
		keys["template "+t.URITemplate] = true
	}
	for _, p := range v.prompts.Prompts {
		keys["prompt "+p.Name] = true
	}
	return keys
}

// printToolWarnings prints, as warnings, why tools of the server's list
// were left out and the references of kept tools' schemas not followed
// (wire.ServerTools.Warnings).
func (a *app) printToolWarnings(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", termtext.Neutralize(w))
	}
}

// watchServer prints the changes of the tool set, the resources and the
// prompts of the server of v, as eng's events announce them (read
// through events, subscribed to before v was read), until ctx ends — then
// it says so and returns nil — or the server's session does, which is
// the error: a one-shot engine does not restart it.
func (a *app) watchServer(ctx context.Context, eng api.Engine, events api.Stream, v startView) error {
	name := v.tools.Server
	for {
		ev, err := events.Next()
		if ctx.Err() != nil {
			fmt.Fprintf(a.stdout, "Stopped %q.\n", name)
			return nil
		}
		if err != nil {
			return fmt.Errorf("watching %q: %w", name, err)
		}
		// Missed events (a slow terminal) are recovered by reading it all
		// again; each part is printed only when it did change.
		missed := ev.Kind == wire.KindMissed
		var about struct{ Source, Server string }
		if !missed {
			_ = ev.Decode(&about) // an event of another shape is not ours
		}
		if !missed && about.Source != name && about.Server != name {
			continue // another source's: the built-ins'
		}
		if missed || ev.Kind == wire.KindPhaseChanged {
			if err := stillReady(ctx, eng, name); err != nil {
				if ctx.Err() != nil {
					continue // stopped by the user: said at the top
				}
				return err
			}
			if !missed {
				continue
			}
		}
		cur, err := readStartView(ctx, eng, name)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return err
		}
		a.printViewChange(v, cur)
		v = cur
	}
}

// stillReady is nil while server name is ready in eng, else why it
// stopped (its last error): a one-shot engine does not start it again.
func stillReady(ctx context.Context, eng api.Engine, name string) error {
	st, err := eng.Status(ctx)
	if err != nil {
		return err
	}
	why := "the session ended"
	if i := slices.IndexFunc(st.Servers, func(s wire.ServerStatus) bool { return s.Name == name }); i >= 0 {
		if st.Servers[i].Phase == wire.PhaseReady {
			return nil
		}
		why = cmp.Or(st.Servers[i].LastError, why)
	}
	return fmt.Errorf("server %q stopped: %s", name, why)
}

// printViewChange prints what differs from prev in cur: the tool set (and
// the warnings about it), and what the server lists beside tools.
func (a *app) printViewChange(prev, cur startView) {
	if !sameJSON(prev.tools, cur.tools) {
		ids := func(tools []wire.Tool) map[string]wire.Tool {
			m := make(map[string]wire.Tool, len(tools))
			for _, t := range tools {
				m[t.ID] = t
			}
			return m
		}
		was, now := ids(prev.tools.Tools), ids(cur.tools.Tools)
		fmt.Fprintf(a.stdout, "Tools changed: now %d tool%s\n", len(now), plural(len(now)))
		for _, id := range sortedKeys(now) {
			if _, ok := was[id]; !ok {
				fmt.Fprintln(a.stdout, "  + "+toolLine(now[id]))
			}
		}
		for _, id := range sortedKeys(was) {
			if _, ok := now[id]; !ok {
				fmt.Fprintln(a.stdout, "  - "+termtext.Neutralize(id))
			}
		}
		a.printToolWarnings(cur.tools.Warnings)
	}
	if !sameJSON(prev.resources, cur.resources) || !sameJSON(prev.prompts, cur.prompts) {
		fmt.Fprintf(a.stdout, "Resources and prompts changed: now %s, %s and %s\n", countOf(len(cur.resources.Resources), "resource"),
			countOf(len(cur.resources.Templates), "resource template"), countOf(len(cur.prompts.Prompts), "prompt"))
		printAddedRemoved(a.stdout, prev.featureKeys(), cur.featureKeys())
	}
}

// sameJSON reports whether a and b have the same JSON: what a server
// lists is compared as the API shows it.
func sameJSON(a, b any) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
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
