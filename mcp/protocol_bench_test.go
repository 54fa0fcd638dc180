package mcp

import (
	"context"
	"testing"
)

// BenchmarkConnectNpm measures connect (start, handshake, tools/list) of
// each real npm server with the revision pinned (Spec.Protocol "", the
// default) and negotiated (ProtocolAuto: a server/discover probe first).
// The difference is what the probe costs a 2025-11-25 server.
func BenchmarkConnectNpm(b *testing.B) {
	servers := []struct {
		name string
		cmd  func() []string
	}{
		{"everything", func() []string { return npmServer(b, everythingScript, "stdio") }},
		{"memory", func() []string { return npmServer(b, "@modelcontextprotocol/server-memory/dist/index.js") }},
		{"filesystem", func() []string {
			return npmServer(b, "@modelcontextprotocol/server-filesystem/dist/index.js", b.TempDir())
		}},
	}
	for _, sv := range servers {
		for _, mode := range []struct{ name, protocol string }{{"pinned", ""}, {"negotiated", ProtocolAuto}} {
			b.Run(sv.name+"/"+mode.name, func(b *testing.B) {
				srv := npmLocal(sv.name, sv.cmd())
				srv.Protocol = mode.protocol
				for b.Loop() {
					s, err := Connect(context.Background(), srv, Options{})
					if err != nil {
						b.Fatal(err)
					}
					if err := s.Close(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
