package registry_test

// Benchmarks of registering a server's tools at the scale of many servers:
// canonical JSON of every schema and change detection. The tools are the
// test server's 100 generated tools (benchtools.Tools).

import (
	"testing"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/internal/benchtools"
)

func BenchmarkReplaceSource(b *testing.B) {
	for _, distinct := range []bool{false, true} {
		tools := benchtools.Tools(b, "srv", distinct)
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
