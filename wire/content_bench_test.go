package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/freecode/freecode/wire"
)

// BenchmarkDecodeContent decodes the answer of the test server's echo tool
// (one text block), the per-block work of decoding a tools/call result.
func BenchmarkDecodeContent(b *testing.B) {
	block := json.RawMessage(`{"type":"text","text":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.DecodeContent(block); err != nil {
			b.Fatal(err)
		}
	}
}
