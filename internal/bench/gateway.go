package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/controller"
)

// GatewayOptions configure Gateway.
type GatewayOptions struct {
	// Blocks of Calls echo calls each, through the gateway and straight to
	// the server, taking turns block by block.
	Blocks, Calls int
	// Edits is how many config edits (a server added, then removed again)
	// are timed to the host's list_changed.
	Edits int
}

// gatewayHost starts `freecode mcp serve --no-attach` for a home of its
// own (config: one test server "t", and u too when withU) and connects a
// plain mcp-go client to it, as a host does; notices gets the gateway's
// notifications/tools/list_changed. stop closes the client, which ends
// the gateway, and waits for it.
func gatewayHost(ctx context.Context, cfg Config, home string, notices chan<- struct{}) (*client.Client, func(), error) {
	cmd := exec.Command(cfg.Freecode, "mcp", "serve", "--no-attach")
	cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
	cmd.Dir = home
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Closing stdin ends the gateway, which stops its servers first.
	return stdioClient(ctx, cmd, 30*time.Second, func(n mcpgo.JSONRPCNotification) {
		if n.Method == string(mcpgo.MethodNotificationToolsListChanged) {
			select {
			case notices <- struct{}{}:
			default:
			}
		}
	})
}

// writeGatewayConfig writes home's config.json with the test servers
// names (atomically, as an editor does).
func writeGatewayConfig(home, testServer string, names ...string) error {
	servers := []map[string]any{}
	for _, n := range names {
		servers = append(servers, map[string]any{"name": n, "type": "local", "command": []string{testServer}})
	}
	b, err := json.Marshal(map[string]any{"mcp": map[string]any{"servers": servers}})
	if err != nil {
		return err
	}
	tmp := filepath.Join(home, "config.json.tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(home, "config.json"))
}

// Gateway measures `freecode mcp serve` as a host sees it: an echo call
// through the gateway (host → gateway → orchestrator → server) against
// the same call straight to a test server started with the same flags,
// and through a bare relay (Relay: the floor of any gateway, one more
// process hop), interleaved in blocks; and the time from a config edit (a server added,
// or removed) to the host's notifications/tools/list_changed, which
// includes the watcher's debounce (controller.DefaultDebounce) and, for
// an added server, its start.
func Gateway(ctx context.Context, cfg Config, opts GatewayOptions) ([]Row, error) {
	home, err := os.MkdirTemp("", "fcgw")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	if err := writeGatewayConfig(home, cfg.TestServer, "t"); err != nil {
		return nil, err
	}
	notices := make(chan struct{}, 1)
	gw, stopGW, err := gatewayHost(ctx, cfg, home, notices)
	if err != nil {
		return nil, err
	}
	defer stopGW()
	raw, stopRaw, err := rawSession(ctx, []string{cfg.TestServer})
	if err != nil {
		return nil, err
	}
	defer stopRaw()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	relay, stopRelay, err := rawSession(ctx, []string{self, RelayArg, cfg.TestServer})
	if err != nil {
		return nil, fmt.Errorf("start the relay: %w", err)
	}
	defer stopRelay()

	call := func(c *client.Client, name string) func() error {
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = name, map[string]any{"text": "hello"}
		return func() error {
			res, err := c.CallTool(ctx, req)
			if err == nil && res.IsError {
				err = errors.New(name + " returned isError")
			}
			return err
		}
	}
	ours, base, floor := call(gw, "t__echo"), call(raw, "echo"), call(relay, "echo")
	block := func(f func() error) (time.Duration, error) {
		start := time.Now()
		for range opts.Calls {
			if err := f(); err != nil {
				return 0, err
			}
		}
		return time.Since(start) / time.Duration(opts.Calls), nil
	}
	if _, err := block(ours); err != nil {
		return nil, fmt.Errorf("through the gateway: %w", err)
	}
	if _, err := block(base); err != nil {
		return nil, err
	}
	if _, err := block(floor); err != nil {
		return nil, fmt.Errorf("through the relay: %w", err)
	}
	var o, b, f []time.Duration
	for range opts.Blocks {
		d, err := block(base)
		if err != nil {
			return nil, err
		}
		b = append(b, d)
		if d, err = block(ours); err != nil {
			return nil, err
		}
		o = append(o, d)
		if d, err = block(floor); err != nil {
			return nil, err
		}
		f = append(f, d)
	}
	const group = "11. gateway (freecode mcp serve, stdio, a plain mcp-go client as the host)"
	mo, mb := median(o), median(b)
	r := float64(mo) / float64(mb)
	rows := []Row{{
		Group: group, Name: fmt.Sprintf("echo through the gateway vs straight to the server (%d calls per block)", opts.Calls),
		Value: us(mo), Baseline: us(mb), Delta: us(mo - mb), Ratio: ratio(mo, mb),
		Target: "≤ 1.3×", Verdict: verdict(r <= 1.3), Runs: len(o),
	}}
	mf := median(f)
	rows = append(rows,
		Row{Group: group, Name: "for reference: a bare mcp-go relay (one more stdio hop, nothing else) vs straight to the server",
			Value: us(mf), Baseline: us(mb), Delta: us(mf - mb), Ratio: ratio(mf, mb), Runs: len(f)},
		Row{Group: group, Name: "echo through the gateway vs through the bare relay (FreeCode's own work: rules, validation, registry)",
			Value: us(mo), Baseline: us(mf), Delta: us(mo - mf), Ratio: ratio(mo, mf), Runs: len(o)})

	var added, removed []time.Duration
	for range opts.Edits {
		for _, step := range []struct {
			names []string
			into  *[]time.Duration
		}{{[]string{"t", "u"}, &added}, {[]string{"t"}, &removed}} {
			select {
			case <-notices: // one left over
			default:
			}
			start := time.Now()
			if err := writeGatewayConfig(home, cfg.TestServer, step.names...); err != nil {
				return nil, err
			}
			select {
			case <-notices:
				*step.into = append(*step.into, time.Since(start))
			case <-time.After(30 * time.Second):
				return nil, fmt.Errorf("no list_changed 30 s after a config edit to %v", step.names)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	deb := controller.DefaultDebounce.String()
	rows = append(rows,
		Row{Group: group, Name: "config edit adding a server → the host's list_changed (debounce " + deb + " and the server's start included)",
			Value: ms(median(added)), Runs: len(added)},
		Row{Group: group, Name: "config edit removing a server → the host's list_changed (debounce " + deb + " included)",
			Value: ms(median(removed)), Runs: len(removed)})
	return rows, nil
}
