package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/freecode/freecode/wire"
	"github.com/stretchr/testify/require"
)

// A server that asks for sampling all the same (the session declares no
// sampling capability) gets a clear error at once, over stdio and
// streamable HTTP, and the session goes on.
func TestSamplingRefusedOverEveryTransport(t *testing.T) {
	for _, mode := range []string{"stdio", "streamable-http"} {
		t.Run(mode, func(t *testing.T) {
			var srv Spec
			if mode == "stdio" {
				srv = localServer("asker", "--client-requests")
			} else {
				u, _ := startTestServerHTTP(t, "--client-requests")
				srv = remoteServer("asker", u, TransportAuto)
			}
			s := connect(t, srv)
			res, err := s.CallTool(context.Background(), "sample", json.RawMessage(`{}`), nil)
			require.NoError(t, err)
			require.True(t, res.IsError)
			require.Contains(t, textOf(t, res), samplingRefusal)
			require.Equal(t, "still here", textOf(t, callEcho(t, s, "still here")))
		})
	}
}

func callEcho(t *testing.T, s *Session, text string) *wire.CallResult {
	t.Helper()
	b, err := json.Marshal(map[string]string{"text": text})
	require.NoError(t, err)
	res, err := s.CallTool(context.Background(), "echo", b, nil)
	require.NoError(t, err)
	return res
}
