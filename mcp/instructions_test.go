package mcp

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A server's instructions are kept per session on both revisions, made
// safe to show and cut to MaxInstructionsBytes.
func TestInstructions(t *testing.T) {
	for _, protocol := range []string{ProtocolVersion, ModernProtocolVersion} {
		t.Run(protocol, func(t *testing.T) {
			flags := []string{"--instructions", "Use echo.\n\tThen \x1b[2Jstop.\u202e"}
			if protocol == ModernProtocolVersion {
				flags = append(flags, "--modern")
			}
			srv := localServer("guide", flags...)
			srv.Protocol = protocol
			s := connect(t, srv)
			require.Equal(t, protocol, s.Protocol())
			require.Equal(t, `Use echo.`+"\n\t"+`Then \x1b[2Jstop.\u202e`, s.Instructions())
		})
	}
	t.Run("none", func(t *testing.T) {
		require.Empty(t, connect(t, localServer("plain")).Instructions())
	})
	t.Run("long", func(t *testing.T) {
		// A multi-byte character across the cut is not split.
		long := strings.Repeat("a", MaxInstructionsBytes-1) + "é" + strings.Repeat("b", 10000)
		got := connect(t, localServer("long", "--instructions", long)).Instructions()
		require.Equal(t, strings.Repeat("a", MaxInstructionsBytes-1)+"…", got)
	})
}
