package mcp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/wire"
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
			res, err := s.CallTool(t.Context(), "hologram", nil, nil)
			require.NoError(t, err)
			require.False(t, res.IsError)
			require.Len(t, res.Content, 2)
			require.Equal(t, "a hologram follows", textOf(t, res))
			require.Equal(t, testserver.UnknownBlock, string(res.Content[1].Raw))
		})
	}
}

func TestDecodeCallResult(t *testing.T) {
	res, err := decodeCallResult(json.RawMessage(`{"content":[{"type":"text","text":"a"}, {"type":"x","n":1.0}],` +
		`"isError":true,"structuredContent":{"n":9223372036854775807},"_meta":{"k":"v"},"extra":1}`))
	require.NoError(t, err)
	require.Equal(t, &wire.CallResult{
		Content:    []wire.Content{{Type: "text", Text: "a"}, {Type: "x", Raw: json.RawMessage(`{"type":"x","n":1.0}`)}},
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

func TestDecodeCallResultContent(t *testing.T) {
	raw := `{"content":[
		{"type":"text","text":"hello","annotations":{"priority":0.5}},
		{"type":"image","data":"aW1n","mimeType":"image/png"},
		{"type":"audio","data":"YXVk","mimeType":"audio/wav"},
		{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"body"}},
		{"type":"resource","resource":{"uri":"file:///b.bin","blob":"YmluYXJ5"}},
		{"type":"resource_link","uri":"file:///c","name":"c","mimeType":"text/x"}
	],"isError":true,"structuredContent":{"n":9223372036854775807}}`
	got, err := decodeCallResult(json.RawMessage(raw))
	require.NoError(t, err)
	require.True(t, got.IsError)
	require.Equal(t, `{"n":9223372036854775807}`, string(got.Structured))
	require.Len(t, got.Content, 6)

	strip := func(c wire.Content) wire.Content { c.Raw = nil; return c }
	require.Equal(t, wire.Content{Type: "text", Text: "hello"}, strip(got.Content[0]))
	require.Contains(t, string(got.Content[0].Raw), `"priority":0.5`)
	require.Equal(t, wire.Content{Type: "image", Data: "aW1n", MimeType: "image/png"}, strip(got.Content[1]))
	require.Equal(t, wire.Content{Type: "audio", Data: "YXVk", MimeType: "audio/wav"}, strip(got.Content[2]))
	require.Equal(t, wire.Content{Type: "resource", URI: "file:///a.txt", MimeType: "text/plain", Text: "body"}, strip(got.Content[3]))
	require.Equal(t, wire.Content{Type: "resource", URI: "file:///b.bin", Data: "YmluYXJ5"}, strip(got.Content[4]))
	require.Equal(t, wire.Content{Type: "resource_link", URI: "file:///c", MimeType: "text/x"}, strip(got.Content[5]))
}

// Every block the content fields do not carry whole keeps the server's
// bytes: unknown types, known ones with fields of their own.
func TestDecodeCallResultKeepsBlocksVerbatim(t *testing.T) {
	blocks := []string{
		`{"type":"hologram","data":"aG9sbw==","depth":1.50,"_meta":{"example.com/frame":7}}`,
		`{"type":"text","text":"t","_meta":{"k":1}}`,
		`{"type":"image","data":"aW1n","mimeType":"image/png","annotations":{"audience":["user"]}}`,
		`{"type":"resource_link","uri":"file:///c","name":"c","title":"C"}`,
		`{"text":"no type"}`,
	}
	got, err := decodeCallResult(json.RawMessage(`{"content":[` + strings.Join(blocks, ",") + `]}`))
	require.NoError(t, err)
	require.Len(t, got.Content, len(blocks))
	for i, b := range blocks {
		require.Equal(t, b, string(got.Content[i].Raw), "block %d", i)
		block, err := got.Content[i].Block()
		require.NoError(t, err)
		require.Equal(t, b, string(block), "block %d is passed on as it came", i)
	}
	require.Equal(t, "hologram", got.Content[0].Type)
	require.Equal(t, "t", got.Content[1].Text)
	require.Equal(t, "aW1n", got.Content[2].Data)
	require.Equal(t, "file:///c", got.Content[3].URI)
	require.Empty(t, got.Content[4].Type)

	// Blocks the fields carry whole keep no copy.
	got, err = decodeCallResult(json.RawMessage(`{"content":[{"type":"text","text":"plain"},` +
		`{"type":"audio","data":"YXVk","mimeType":"audio/wav"}]}`))
	require.NoError(t, err)
	require.Equal(t, []wire.Content{{Type: "text", Text: "plain"}, {Type: "audio", Data: "YXVk", MimeType: "audio/wav"}}, got.Content)
}

func TestDecodeCallResultMalformedBlock(t *testing.T) {
	for _, b := range []string{`"text"`, `{"type":5}`, `{"type":"text","text":5}`, `{"type":"resource","resource":"x"}`} {
		_, err := decodeCallResult(json.RawMessage(`{"content":[{"type":"text","text":"ok"},` + b + `]}`))
		require.ErrorContains(t, err, "content #1", b)
	}
}

func TestDecodeCallResultStructured(t *testing.T) {
	got, err := decodeCallResult(json.RawMessage(`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a": 1}}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(got.Structured))
	require.Equal(t, "x", got.Text())
}
