package gateway

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/serve"
)

// BenchmarkGatewayCall measures one echo through the gateway's call path
// in process (lookup, the Engine's call, the orchestrator, the session),
// without the host's stdio: FreeCode's own work per gateway call.
func BenchmarkGatewayCall(b *testing.B) {
	home := servetest.ShortHome(b)
	writeConfig(b, home, servetest.Config(testServer("t")))
	core, err := serve.NewCore(serve.Options{Home: home, Root: home, Logger: logr.Discard(),
		Sources: schema.Sources{User: filepath.Join(home, "config.json"), Trust: schema.TrustPath(home)}})
	require.NoError(b, err)
	defer core.Close()
	ctx, cancel := context.WithCancel(b.Context())
	g := newGateway(core, func() bool { return true }, Options{Logger: logr.Discard()})
	done := make(chan error, 1)
	go func() {
		done <- core.Run(ctx, serve.Part{Name: "watch", Run: func(ctx context.Context) error { return g.watch(ctx, func() { g.relist(ctx) }) }})
	}()
	defer func() { cancel(); <-done }()
	require.True(b, core.Settled(ctx))
	g.relist(ctx)
	call := mcp.GatewayCall{Name: "t__echo", Args: json.RawMessage(`{"text":"hi"}`)}
	res, err := g.call(ctx, call)
	require.NoError(b, err)
	require.False(b, res.IsError, "%v", res)
	b.ResetTimer()
	for b.Loop() {
		if _, err := g.call(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
}
