package mcp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testserver"
)

// A content block of a type mcp-go does not model used to fail the whole
// call ("unknown content type"): every block reaches the caller as the
// server sent it, over each transport.
func TestCallKeepsUnknownContent(t *testing.T) {
	streamable, _ := startTestServerHTTP(t, "--unknown-content")
	sse, _ := startTestServerHTTP(t, "--unknown-content", "--sse")
	for name, srv := range map[string]Spec{
		"stdio":           localServer("holo", "--unknown-content"),
		"streamable-http": remoteServer("holo", streamable, TransportStreamableHTTP),
		"sse":             remoteServer("holo", sse, TransportSSE),
	} {
		t.Run(name, func(t *testing.T) {
			s := connect(t, srv)
			res, err := s.CallTool(t.Context(), "hologram", nil)
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Len(t, res.Content, 2)
			require.Equal(t, "a hologram follows", textOf(t, res))
			require.Equal(t, testserver.UnknownBlock, string(res.Content[1]))
		})
	}
}

func TestDecodeCallResult(t *testing.T) {
	res, err := decodeCallResult(json.RawMessage(`{"content":[{"type":"text","text":"a"}, {"type":"x","n":1.0}],` +
		`"isError":true,"structuredContent":{"n":9223372036854775807},"_meta":{"k":"v"},"extra":1}`))
	require.NoError(t, err)
	require.Equal(t, &CallResult{
		Content:    []json.RawMessage{json.RawMessage(`{"type":"text","text":"a"}`), json.RawMessage(`{"type":"x","n":1.0}`)},
		IsError:    true,
		Structured: json.RawMessage(`{"n":9223372036854775807}`),
		Meta:       json.RawMessage(`{"k":"v"}`),
	}, res)

	res, err = decodeCallResult(json.RawMessage(`{"content":null}`))
	require.NoError(t, err, "content null holds no blocks")
	require.Empty(t, res.Content)
	require.Nil(t, res.Structured)

	_, err = decodeCallResult(json.RawMessage(`{"isError":true}`))
	require.ErrorContains(t, err, "content is missing")
	_, err = decodeCallResult(json.RawMessage(`{"content":{}}`))
	require.ErrorContains(t, err, "decode tools/call result")
}
