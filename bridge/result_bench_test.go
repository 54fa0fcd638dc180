package bridge_test

import (
	"encoding/json"
	"testing"

	"github.com/freecode/freecode/bridge"
	"github.com/freecode/freecode/mcp"
)

// BenchmarkResult converts the answer of the test server's echo tool (one
// text block, as the session returns it), the per-call work the bridge adds
// on top of the session.
func BenchmarkResult(b *testing.B) {
	res := &mcp.CallResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"hello"}`)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := bridge.Result(res); err != nil {
			b.Fatal(err)
		}
	}
}
