package registry_test

// Benchmarks of the registry's hot paths at the scale of many servers:
// registering a server's tools (canonical JSON of every schema, change
// detection) and rebuilding provider definitions. The tools are the test
// server's 100 generated tools (--schemas mixed: half with $ref), converted
// by mcp.ConvertTools exactly as a session would.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
)

// benchTools returns server's 100 generated test-server tools as registry
// tools. With distinct set, each input schema gets a "$comment" naming the
// server and tool, so that no two tools share schema bytes.
func benchTools(tb testing.TB, server string, distinct bool) []registry.Tool {
	tb.Helper()
	s, err := testserver.New(testserver.Config{Tools: 100, Schemas: testserver.SchemasMixed})
	if err != nil {
		tb.Fatal(err)
	}
	defer s.Close()
	listed, err := s.ListTools(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	var raws []json.RawMessage
	for _, raw := range listed {
		var t map[string]json.RawMessage
		if err := json.Unmarshal(raw, &t); err != nil {
			tb.Fatal(err)
		}
		if !strings.HasPrefix(string(t["name"]), `"tool_`) {
			continue
		}
		if distinct {
			c, _ := json.Marshal(server + " " + string(t["name"]))
			t["inputSchema"] = json.RawMessage(`{"$comment":` + string(c) + `,` + strings.TrimPrefix(string(t["inputSchema"]), "{"))
		}
		if raw, err = json.Marshal(t); err != nil {
			tb.Fatal(err)
		}
		raws = append(raws, raw)
	}
	converted, errs := mcp.ConvertTools(server, raws)
	if len(errs) > 0 {
		tb.Fatal(errors.Join(errs...))
	}
	call := func(context.Context, json.RawMessage) (registry.Result, error) { return registry.Result{}, nil }
	out := make([]registry.Tool, len(converted))
	for i, t := range converted {
		out[i] = registry.Tool{ID: t.ID, Source: server, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, Annotations: t.Annotations, ReadOnly: t.ReadOnly, Call: call}
	}
	return out
}

func BenchmarkReplaceSource(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		tools := benchTools(b, "srv", distinct)
		name := map[bool]string{false: "listed", true: "distinct"}[distinct]
		b.Run("new-100-"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := registry.NewRegistry(nil).ReplaceSource("srv", tools); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("identical-100-"+name, func(b *testing.B) {
			reg := registry.NewRegistry(nil)
			if _, err := reg.ReplaceSource("srv", tools); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if changed, err := reg.ReplaceSource("srv", tools); err != nil || changed {
					b.Fatal(changed, err)
				}
			}
		})
	}
}

// BenchmarkDefsRebuild builds the provider definitions of 10 servers × 100
// tools (every schema distinct) from a cold cache, per dialect.
func BenchmarkDefsRebuild(b *testing.B) {
	reg := registry.NewRegistry(nil)
	for i := range 10 {
		server := fmt.Sprintf("srv%02d", i)
		if _, err := reg.ReplaceSource(server, benchTools(b, server, true)); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []registry.Dialect{registry.DialectJSONSchema, registry.DialectOpenAI, registry.DialectGemini} {
		b.Run(string(d), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if defs := registry.NewDefsCache(reg).Defs(d); len(defs.Tools) != 1000 {
					b.Fatalf("%d tools, problems %v", len(defs.Tools), defs.Problems)
				}
			}
		})
	}
}

// BenchmarkDefsAfterChange rebuilds the definitions of 10 servers × 100
// tools after one server's tools changed (its schemas alternate between two
// versions), the common case after a server restart or re-list.
func BenchmarkDefsAfterChange(b *testing.B) {
	reg := registry.NewRegistry(nil)
	for i := range 10 {
		server := fmt.Sprintf("srv%02d", i)
		if _, err := reg.ReplaceSource(server, benchTools(b, server, true)); err != nil {
			b.Fatal(err)
		}
	}
	versions := [2][]registry.Tool{benchTools(b, "srv00", false), benchTools(b, "srv00", true)}
	for _, d := range []registry.Dialect{registry.DialectJSONSchema, registry.DialectOpenAI, registry.DialectGemini} {
		b.Run(string(d), func(b *testing.B) {
			if _, err := reg.ReplaceSource("srv00", versions[1]); err != nil {
				b.Fatal(err)
			}
			cache := registry.NewDefsCache(reg)
			cache.Defs(d)
			i := 1
			b.ReportAllocs()
			for b.Loop() {
				i++
				if changed, err := reg.ReplaceSource("srv00", versions[i%2]); err != nil || !changed {
					b.Fatal(changed, err)
				}
				if defs := cache.Defs(d); len(defs.Tools) != 1000 {
					b.Fatalf("%d tools, problems %v", len(defs.Tools), defs.Problems)
				}
			}
		})
	}
}
