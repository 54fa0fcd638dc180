package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/registry"
)

type fakeCaller struct {
	name string
	args json.RawMessage
	res  *mcp.CallResult
	err  error
}

func (f *fakeCaller) CallTool(_ context.Context, name string, args json.RawMessage) (*mcp.CallResult, error) {
	f.name, f.args = name, args
	return f.res, f.err
}

func convert(t *testing.T, server, raw string) mcp.Tool {
	t.Helper()
	tool, err := mcp.ConvertTool(server, json.RawMessage(raw))
	require.NoError(t, err)
	return tool
}

func TestToolsFields(t *testing.T) {
	echo := convert(t, "srv", `{"name":"echo","title":"Echo","description":"says it back",
		"inputSchema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]},
		"annotations":{"readOnlyHint":true}}`)
	note := convert(t, "srv", `{"name":"note","inputSchema":{"type":"object"}}`)
	tools := Tools(&fakeCaller{}, []mcp.Tool{echo, note})
	require.Len(t, tools, 2)

	got := tools[0]
	require.Equal(t, echo.ID, got.ID)
	require.Equal(t, "srv", got.Source)
	require.Equal(t, "Echo", got.Title)
	require.Equal(t, "says it back", got.Description)
	require.JSONEq(t, string(echo.InputSchema), string(got.InputSchema))
	require.JSONEq(t, `{"readOnlyHint":true}`, string(got.Annotations))
	require.True(t, got.ReadOnly)
	require.False(t, tools[1].ReadOnly)

	require.NoError(t, got.Validate(t.Context(), json.RawMessage(`{"text":"hi"}`)))
	err := got.Validate(t.Context(), json.RawMessage(`{}`))
	require.Error(t, err)
	require.Contains(t, err.Error(), "text")

	// The registry accepts the converted set as the server's source.
	reg := registry.NewRegistry(nil)
	changed, err := reg.ReplaceSource("srv", tools)
	require.NoError(t, err)
	require.True(t, changed)
}

func TestCallUsesServerToolName(t *testing.T) {
	tool := convert(t, "my server", `{"name":"do.it","inputSchema":{"type":"object"}}`)
	require.NotEqual(t, "do.it", tool.ID)
	fc := &fakeCaller{res: &mcp.CallResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"done"}`)}}}
	tools := Tools(fc, []mcp.Tool{tool})
	res, err := tools[0].Call(context.Background(), json.RawMessage(`{"a":1}`))
	require.NoError(t, err)
	require.Equal(t, "do.it", fc.name)
	require.JSONEq(t, `{"a":1}`, string(fc.args))
	require.Equal(t, "done", res.Text())
	require.False(t, res.IsError)
}

func TestResultContent(t *testing.T) {
	wire := `{"content":[
		{"type":"text","text":"hello","annotations":{"priority":0.5}},
		{"type":"image","data":"aW1n","mimeType":"image/png"},
		{"type":"audio","data":"YXVk","mimeType":"audio/wav"},
		{"type":"resource","resource":{"uri":"file:///a.txt","mimeType":"text/plain","text":"body"}},
		{"type":"resource","resource":{"uri":"file:///b.bin","blob":"YmluYXJ5"}},
		{"type":"resource_link","uri":"file:///c","name":"c","mimeType":"text/x"}
	],"isError":true,"structuredContent":{"n":9223372036854775807}}`
	var res mcp.CallResult
	require.NoError(t, json.Unmarshal([]byte(wire), &res))

	got, err := Result(&res)
	require.NoError(t, err)
	require.True(t, got.IsError)
	require.Equal(t, `{"n":9223372036854775807}`, string(got.Structured))
	require.Len(t, got.Content, 6)

	strip := func(c registry.Content) registry.Content { c.Raw = nil; return c }
	require.Equal(t, registry.Content{Type: "text", Text: "hello"}, strip(got.Content[0]))
	require.Contains(t, string(got.Content[0].Raw), `"priority":0.5`)
	require.Equal(t, registry.Content{Type: "image", Data: "aW1n", MimeType: "image/png"}, strip(got.Content[1]))
	require.Equal(t, registry.Content{Type: "audio", Data: "YXVk", MimeType: "audio/wav"}, strip(got.Content[2]))
	require.Equal(t, registry.Content{Type: "resource", URI: "file:///a.txt", MimeType: "text/plain", Text: "body"}, strip(got.Content[3]))
	require.Equal(t, registry.Content{Type: "resource", URI: "file:///b.bin", Data: "YmluYXJ5"}, strip(got.Content[4]))
	require.Equal(t, registry.Content{Type: "resource_link", URI: "file:///c", MimeType: "text/x"}, strip(got.Content[5]))
}

// Every block the content fields do not carry whole keeps the server's
// bytes: unknown types, known ones with fields of their own.
func TestResultKeepsBlocksVerbatim(t *testing.T) {
	blocks := []string{
		`{"type":"hologram","data":"aG9sbw==","depth":1.50,"_meta":{"example.com/frame":7}}`,
		`{"type":"text","text":"t","_meta":{"k":1}}`,
		`{"type":"image","data":"aW1n","mimeType":"image/png","annotations":{"audience":["user"]}}`,
		`{"type":"resource_link","uri":"file:///c","name":"c","title":"C"}`,
		`{"text":"no type"}`,
	}
	res := &mcp.CallResult{}
	for _, b := range blocks {
		res.Content = append(res.Content, json.RawMessage(b))
	}
	got, err := Result(res)
	require.NoError(t, err)
	require.Len(t, got.Content, len(blocks))
	for i, b := range blocks {
		require.Equal(t, b, string(got.Content[i].Raw), "block %d", i)
	}
	require.Equal(t, "hologram", got.Content[0].Type)
	require.Equal(t, "t", got.Content[1].Text)
	require.Equal(t, "aW1n", got.Content[2].Data)
	require.Equal(t, "file:///c", got.Content[3].URI)
	require.Empty(t, got.Content[4].Type)

	// Blocks the fields carry whole keep no copy.
	got, err = Result(&mcp.CallResult{Content: []json.RawMessage{
		json.RawMessage(`{"type":"text","text":"plain"}`),
		json.RawMessage(`{"type":"audio","data":"YXVk","mimeType":"audio/wav"}`),
	}})
	require.NoError(t, err)
	require.Equal(t, []registry.Content{{Type: "text", Text: "plain"}, {Type: "audio", Data: "YXVk", MimeType: "audio/wav"}}, got.Content)
}

func TestResultMalformedBlock(t *testing.T) {
	for _, b := range []string{`"text"`, `{"type":5}`, `{"type":"text","text":5}`, `{"type":"resource","resource":"x"}`} {
		_, err := Result(&mcp.CallResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"ok"}`), json.RawMessage(b)}})
		require.ErrorContains(t, err, "tool result content #1", b)
	}
}

func TestResultStructured(t *testing.T) {
	res := &mcp.CallResult{Content: []json.RawMessage{json.RawMessage(`{"type":"text","text":"x"}`)}, Structured: json.RawMessage(`{"a": 1}`)}
	got, err := Result(res)
	require.NoError(t, err)
	require.JSONEq(t, `{"a":1}`, string(got.Structured))
	require.Equal(t, "x", got.Text())
}

func TestCallErrors(t *testing.T) {
	tool := convert(t, "srv", `{"name":"t","inputSchema":{"type":"object"}}`)
	cases := []struct {
		name          string
		err           error
		wantTransport bool
	}{
		{"transport failure", fmt.Errorf("server %q: tools/call: %w", "srv", mcp.ErrTransport), true},
		{"exit of the local process", &mcp.ExitError{Server: "srv"}, true},
		{"already marked", fmt.Errorf("x: %w", registry.ErrTransport), true},
		{"server error", errors.New("invalid params"), false},
		{"cancelled", context.Canceled, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tools := Tools(&fakeCaller{err: tc.err}, []mcp.Tool{tool})
			_, err := tools[0].Call(context.Background(), nil)
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, tc.wantTransport, errors.Is(err, registry.ErrTransport))
		})
	}
}

func TestNilResult(t *testing.T) {
	tool := convert(t, "srv", `{"name":"t","inputSchema":{"type":"object"}}`)
	tools := Tools(&fakeCaller{}, []mcp.Tool{tool})
	_, err := tools[0].Call(context.Background(), nil)
	require.Error(t, err)
}
