package mcp_test

// Benchmarks of tool conversion (jsonschema.Prepare: resolve, encode, compile)
// on the exact tools/list elements the test server sends, in both of its
// schema styles.

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/mcp"
)

// listedTools returns the raw "tools" elements of the test server's
// tools/list answer for cfg, byte for byte as it would send them.
func listedTools(tb testing.TB, cfg testserver.Config) []json.RawMessage {
	tb.Helper()
	s, err := testserver.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	tools, err := s.ListTools(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return tools
}

// generated returns the raw element of generated tool tool_000 (simple) or
// tool_001 (ref) from a server with --schemas mixed.
func generated(tb testing.TB, name string) json.RawMessage {
	for _, raw := range listedTools(tb, testserver.Config{Tools: 2, Schemas: testserver.SchemasMixed}) {
		var t struct{ Name string }
		if err := json.Unmarshal(raw, &t); err != nil {
			tb.Fatal(err)
		}
		if t.Name == name {
			return raw
		}
	}
	tb.Fatalf("no tool %s", name)
	return nil
}

func BenchmarkConvertTestServerTool(b *testing.B) {
	for _, c := range []struct{ name, tool string }{{"simple", "tool_000"}, {"ref", "tool_001"}} {
		raw := generated(b, c.tool)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := mcp.ConvertTool("srv", raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConvertTestServerTools100 converts one server's 100 tools, half of
// them with $ref schemas, as a session does after tools/list.
func BenchmarkConvertTestServerTools100(b *testing.B) {
	raws := listedTools(b, testserver.Config{Tools: 100, Schemas: testserver.SchemasMixed})
	b.ReportAllocs()
	for b.Loop() {
		if _, errs := mcp.ConvertTools("srv", raws); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
}
