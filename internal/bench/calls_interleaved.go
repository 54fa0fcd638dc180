package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/controller"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/orchestrator"
)

// InterleavedOptions configure CallsInterleaved.
type InterleavedOptions struct {
	// Blocks of Calls calls each; the two paths take turns block by block,
	// so load that comes and goes on a shared machine hits both alike.
	Blocks, Calls int
}

// rawSession starts the test server and returns an initialized plain
// mcp-go client and a function that stops it.
func rawSession(ctx context.Context, argv []string) (*client.Client, func(), error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return stdioClient(ctx, cmd, 0, nil)
}

// stdioClient starts cmd (in a process group of its own) and returns an
// initialized plain mcp-go client over its stdio, with onNotification
// (nil: none) getting the notifications, and a function that stops it:
// the client closes (stdin), then, after grace (0: at once), the group
// is killed; it returns once cmd was reaped.
func stdioClient(ctx context.Context, cmd *exec.Cmd, grace time.Duration, onNotification func(mcpgo.JSONRPCNotification)) (*client.Client, func(), error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	c := client.NewClient(transport.NewIO(stdout, stdin, nil), client.WithProtocolVersion(mcp.ProtocolVersion))
	stop := func() {
		_ = c.Close()
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-exited:
		case <-t.C:
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	if onNotification != nil {
		c.OnNotification(onNotification)
	}
	if err := c.Start(ctx); err != nil {
		stop()
		return nil, nil, err
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion
	req.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		stop()
		return nil, nil, fmt.Errorf("initialize %s: %w", cmd.Path, err)
	}
	return c, stop, nil
}

// CallsInterleaved compares the same echo call through the orchestrator
// (orchestrator.Orchestrator → bridge → mcp.Session) and through a plain mcp-go
// client, each on its own test server started with the same flags, taking
// turns in blocks.
func CallsInterleaved(ctx context.Context, cfg Config, opts InterleavedOptions) ([]Row, error) {
	argv := []string{cfg.TestServer}
	raw, stop, err := rawSession(ctx, argv)
	if err != nil {
		return nil, err
	}
	defer stop()
	sess, err := mcp.Connect(ctx, controller.MCPSpec(localServer("ts", argv)), mcp.Options{Logger: logr.Discard()})
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	reg := registry.NewRegistry(nil)
	if _, err := reg.ReplaceSource("ts", bridge.Tools(sess, sess.Tools())); err != nil {
		return nil, err
	}
	orch := orchestrator.New(orchestrator.Options{Registry: reg, MaxParallel: 8,
		Rules: func() orchestrator.Rules { return orchestrator.Rules{Allow: []string{"mcp__ts"}} }})

	args := json.RawMessage(`{"text":"hello"}`)
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "echo", args
	rawOne := func() error {
		res, err := raw.CallTool(ctx, req)
		if err == nil && res.IsError {
			err = errors.New("echo returned isError")
		}
		return err
	}
	id := mcp.ToolID("ts", "echo")
	one := []orchestrator.Call{{ID: "1", Tool: id, Args: args}}
	eight := make([]orchestrator.Call, 8)
	for i := range eight {
		eight[i] = orchestrator.Call{ID: strconv.Itoa(i), Tool: id, Args: args}
	}
	orchRun := func(calls []orchestrator.Call) func() error {
		return func() error {
			for _, oc := range orch.Run(ctx, calls) {
				if oc.Err != nil || oc.Result.IsError {
					return fmt.Errorf("echo: %v %s", oc.Err, oc.Result.Text())
				}
			}
			return nil
		}
	}
	rawEight := func() error {
		errs := make([]error, 8)
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { errs[i] = rawOne() })
		}
		wg.Wait()
		return errors.Join(errs...)
	}
	block := func(f func() error) (time.Duration, error) {
		start := time.Now()
		for range opts.Calls {
			if err := f(); err != nil {
				return 0, err
			}
		}
		return time.Since(start) / time.Duration(opts.Calls), nil
	}

	const group = "3. call overhead (bridge BenchmarkCallOverhead: echo over stdio)"
	var rows []Row
	for _, c := range []struct {
		name      string
		ours, raw func() error
	}{
		{"sequential, interleaved in blocks: one call", orchRun(one), rawOne},
		{"8 concurrent, interleaved in blocks: one batch", orchRun(eight), rawEight},
	} {
		// One block each to warm up.
		if _, err := block(c.ours); err != nil {
			return nil, err
		}
		if _, err := block(c.raw); err != nil {
			return nil, err
		}
		var o, b []time.Duration
		for range opts.Blocks {
			d, err := block(c.raw)
			if err != nil {
				return nil, err
			}
			b = append(b, d)
			if d, err = block(c.ours); err != nil {
				return nil, err
			}
			o = append(o, d)
		}
		mo, mb := median(o), median(b)
		over := float64(mo-mb) / float64(mb)
		rows = append(rows, Row{
			Group: group, Name: c.name + fmt.Sprintf(" (in the runner, %d calls per block)", opts.Calls),
			Value: us(mo), Baseline: us(mb), Delta: fmt.Sprintf("%s (%+.1f%%)", us(mo-mb), 100*over), Ratio: ratio(mo, mb),
			Target: "overhead < 10%", Verdict: verdict(over < 0.10), Runs: len(o),
		})
	}
	return rows, nil
}
