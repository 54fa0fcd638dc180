package defs_test

// Benchmarks of rebuilding provider definitions at the scale of many
// servers. The tools are the test server's 100 generated tools
// (benchtools.Tools).

import (
	"fmt"
	"testing"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/defs"
	"github.com/freecode/freecode/registry/internal/benchtools"
)

// BenchmarkDefsRebuild builds the provider definitions of 10 servers × 100
// tools (every schema distinct) from a cold cache, per dialect.
func BenchmarkDefsRebuild(b *testing.B) {
	reg := registry.NewRegistry(nil)
	for i := range 10 {
		server := fmt.Sprintf("srv%02d", i)
		if _, err := reg.ReplaceSource(server, benchtools.Tools(b, server, true)); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []defs.Dialect{defs.DialectJSONSchema, defs.DialectOpenAI, defs.DialectGemini} {
		b.Run(string(d), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if defs := defs.NewDefsCache(reg, defs.Options{}).Defs(d); len(defs.Tools) != 1000 {
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
		if _, err := reg.ReplaceSource(server, benchtools.Tools(b, server, true)); err != nil {
			b.Fatal(err)
		}
	}
	versions := [2][]registry.Tool{benchtools.Tools(b, "srv00", false), benchtools.Tools(b, "srv00", true)}
	for _, d := range []defs.Dialect{defs.DialectJSONSchema, defs.DialectOpenAI, defs.DialectGemini} {
		b.Run(string(d), func(b *testing.B) {
			if _, err := reg.ReplaceSource("srv00", versions[1]); err != nil {
				b.Fatal(err)
			}
			cache := defs.NewDefsCache(reg, defs.Options{})
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
