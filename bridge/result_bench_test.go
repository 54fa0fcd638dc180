package bridge_test

import (
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/freecode/freecode/bridge"
)

// BenchmarkResult converts the answer of the test server's echo tool (one
// text block), the per-call work the bridge adds on top of mcp-go.
func BenchmarkResult(b *testing.B) {
	res := &mcpgo.CallToolResult{Content: []mcpgo.Content{mcpgo.NewTextContent("hello")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bridge.Result(res); err != nil {
			b.Fatal(err)
		}
	}
}
