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
	"github.com/freecode/freecode/wire"
)

type fakeCaller struct {
	name string
	args json.RawMessage
	res  *wire.CallResult
	err  error
}

func (f *fakeCaller) CallTool(_ context.Context, name string, args json.RawMessage, _ func(wire.Progress)) (*wire.CallResult, error) {
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
	fc := &fakeCaller{res: &wire.CallResult{Content: []wire.Content{{Type: wire.ContentText, Text: "done"}}}}
	tools := Tools(fc, []mcp.Tool{tool})
	res, err := tools[0].Call(context.Background(), json.RawMessage(`{"a":1}`), nil)
	require.NoError(t, err)
	require.Equal(t, "do.it", fc.name)
	require.JSONEq(t, `{"a":1}`, string(fc.args))
	require.Equal(t, "done", res.Text())
	require.False(t, res.IsError)
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
			_, err := tools[0].Call(context.Background(), nil, nil)
			require.ErrorIs(t, err, tc.err)
			require.Equal(t, tc.wantTransport, errors.Is(err, registry.ErrTransport))
		})
	}
}

func TestNilResult(t *testing.T) {
	tool := convert(t, "srv", `{"name":"t","inputSchema":{"type":"object"}}`)
	tools := Tools(&fakeCaller{}, []mcp.Tool{tool})
	_, err := tools[0].Call(context.Background(), nil, nil)
	require.Error(t, err)
}
