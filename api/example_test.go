package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/registry/orchestrator"
	"github.com/freecode/freecode/wire"
)

// exampleEngine is the daemon behind the API for the examples: one
// server, "notes", that is ready with one tool, the built-in tools, and
// its events. The Engine methods the examples do not use are left to the
// nil api.Engine it embeds (they would panic).
type exampleEngine struct {
	api.Engine
	bus  *event.Bus
	orch *orchestrator.Orchestrator
}

func (exampleEngine) Status(context.Context) (wire.Status, error) {
	return wire.Status{Servers: []wire.ServerStatus{{
		Name: "notes", Source: "user", Phase: wire.PhaseReady, Tools: 1,
		Desired: wire.Desired{Enabled: true, Type: "local", Target: "mcp-testserver --name notes"},
	}}}, nil
}

func (e exampleEngine) CallWith(ctx context.Context, toolID string, args json.RawMessage, opts api.CallOptions) (api.CallResponse, error) {
	if opts.ID == "" {
		opts.ID = "example"
	}
	return api.RunCall(ctx, e.orch, e.bus, toolID, args, opts)
}

func (e exampleEngine) Events(ctx context.Context) (api.Stream, error) {
	return api.NewEventStream(ctx, e.bus), nil
}

// startExampleServe runs the API on a unix socket under a throwaway home,
// as `freecode serve` does, with the built-in tools working in a directory
// that holds notes.txt. It returns the home and a function that stops it.
func startExampleServe() (home string, reg *registry.Registry, stop func()) {
	home, err := os.MkdirTemp("", "fcexample")
	if err != nil {
		panic(err)
	}
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(filepath.Join(home, "run"), 0o700); err != nil {
		panic(err)
	}
	if err := os.MkdirAll(work, 0o700); err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("buy milk\ncall Ada\n"), 0o600); err != nil {
		panic(err)
	}
	bus := event.NewBus()
	reg = registry.NewRegistry(bus)
	if err := registry.RegisterBuiltins(reg, registry.BuiltinOptions{Root: work}); err != nil {
		panic(err)
	}
	approvals := api.NewApprovals(bus, 0)
	srv := api.NewServer(exampleEngine{bus: bus, orch: orchestrator.New(orchestrator.Options{Registry: reg, Approver: approvals})}, api.ServerOptions{})
	ln, err := net.Listen("unix", api.SocketPath(home))
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	return home, reg, func() {
		cancel()
		<-done
		os.RemoveAll(home)
	}
}

// Dial the serve of a FreeCode home and read the status of every server.
func ExampleClient_Status() {
	home, _, stop := startExampleServe()
	defer stop()

	c, err := api.Dial(api.SocketPath(home))
	if errors.Is(err, api.ErrNotRunning) {
		fmt.Println("start it with `freecode serve`")
		return
	}
	if err != nil {
		panic(err)
	}
	defer c.Close()
	st, err := c.Status(context.Background())
	if err != nil {
		panic(err)
	}
	for _, s := range st.Servers {
		fmt.Printf("%s %s, %d tool(s): %s\n", s.Name, s.Phase, s.Tools, s.Desired.Target)
	}
	// Output:
	// notes ready, 1 tool(s): mcp-testserver --name notes
}

// Call a tool through the permission rules and the orchestrator, as a model's
// call goes. A failure that is not the tool's own comes back as an *api.Error
// that carries the call's answer, whose Kind names the failure.
func ExampleClient_Call() {
	home, _, stop := startExampleServe()
	defer stop()
	c, err := api.Dial(api.SocketPath(home))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx := context.Background()

	res, err := c.Call(ctx, "read", json.RawMessage(`{"path": "notes.txt", "limit": 1}`))
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Result.Text())

	_, err = c.Call(ctx, "mcp__nope__x", nil)
	var apiErr *api.Error
	if errors.As(err, &apiErr) && apiErr.Call != nil {
		fmt.Println(apiErr.Status, apiErr.Call.Kind+":", apiErr.Message)
	}
	// Output:
	// buy milk
	// (output truncated after line 1; continue with offset 2)
	// 404 unknown_tool: tool "mcp__nope__x" is not available
}

// Follow events: once Events returns, no event is missed (or it is counted
// in a "missed" event). Events are hints to read the state again, not the
// state itself.
func ExampleClient_Events() {
	home, reg, stop := startExampleServe()
	defer stop()
	c, err := api.Dial(api.SocketPath(home))
	if err != nil {
		panic(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	events, err := c.Events(ctx)
	if err != nil {
		panic(err)
	}
	defer events.Close()

	// A tool set changes (here: the built-ins go away).
	reg.RemoveSource(registry.SourceBuiltin)
	ev, err := events.Next()
	if err != nil {
		panic(err)
	}
	var changed struct {
		Source string `json:"source"`
	}
	if err := ev.Decode(&changed); err != nil {
		panic(err)
	}
	fmt.Println(ev.Kind, changed.Source)
	// Output:
	// tools_changed builtin
}
