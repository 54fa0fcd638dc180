package mcp

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A server's instructions are kept per session on both revisions: from
// the initialize result, and from server/discover's.
func TestInstructionsBothRevisions(t *testing.T) {
	for _, protocol := range []string{ProtocolVersion, ModernProtocolVersion} {
		t.Run(protocol, func(t *testing.T) {
			flags := []string{"--instructions", "Use echo.\n\tThen stop."}
			if protocol == ModernProtocolVersion {
				flags = append(flags, "--modern")
			}
			srv := localServer("guide", flags...)
			srv.Protocol = protocol
			s := connect(t, srv)
			require.Equal(t, protocol, s.Protocol())
			require.Equal(t, "Use echo.\n\tThen stop.", s.Instructions().Text)
		})
	}
	t.Run("none", func(t *testing.T) {
		require.Empty(t, connect(t, localServer("plain")).Instructions().Text)
	})
}
