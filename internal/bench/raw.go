package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/mcp"
)

// rawConnect is the baseline of a server start: spawn argv, connect a plain
// mcp-go client over stdio (pinned to mcp.ProtocolVersion, as mcp.Session
// is), initialize and list tools. It returns the time from just before the
// spawn until the list is in hand, then closes the client and reaps the
// process (not timed).
func rawConnect(ctx context.Context, argv []string) (time.Duration, error) {
	return rawConnectEnv(ctx, argv, nil)
}

// rawConnectEnv is rawConnect with env added to the process's environment
// (nil: the process's own, as exec.Cmd gives it).
func rawConnectEnv(ctx context.Context, argv []string, env map[string]string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	cmd := exec.Command(argv[0], argv[1:]...)
	if env != nil {
		cmd.Env = os.Environ()
		for k, v := range env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	c := client.NewClient(transport.NewIO(stdout, stdin, nil), client.WithProtocolVersion(mcp.ProtocolVersion))
	defer func() {
		_ = c.Close() // closes stdin: the server exits
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}()
	if err := c.Start(ctx); err != nil {
		return 0, fmt.Errorf("raw client start: %w", err)
	}
	req := mcpgo.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.ProtocolVersion
	req.Params.ClientInfo = mcpgo.Implementation{Name: "bench", Version: "0"}
	if _, err := c.Initialize(ctx, req); err != nil {
		return 0, fmt.Errorf("raw initialize: %w", err)
	}
	if _, err := c.ListTools(ctx, mcpgo.ListToolsRequest{}); err != nil {
		return 0, fmt.Errorf("raw tools/list: %w", err)
	}
	return time.Since(start), nil
}
