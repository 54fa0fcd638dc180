package serve

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/wire"
)

// A server whose tool schemas hold references FreeCode does not follow:
// serve registers the tools, logs each warning once for the session (also
// across a re-list), lists the warnings in the status, and the tools are
// callable with anything in those parts and checked in the rest.
func TestRunToolWithRefsNotFollowed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	home := servetest.ShortHome(t)
	conf := servetest.Config(servetest.Local("ext", testServerBin, "--tools", "1", "--schemas", "external"))
	conf["permission"] = map[string]any{"allow": []string{"mcp__ext"}}
	servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
	d := start(t, options(home))
	ready := d.WaitPhase("ext", "ready")

	want := []string{
		`server "ext": tool "tool_000": inputSchema: $ref "https://schemas.example.com/config.json" at #/properties/config is not fetched; that value accepts anything`,
		`server "ext": tool "tool_000": inputSchema: $ref "other.json#/definitions/extra" at #/properties/extra is not fetched; that value accepts anything`,
		`server "ext": tool "tool_000": inputSchema: $ref "#/$defs/missing" at #/properties/local: no "$defs" at "#": reference target not found; that value accepts anything`,
	}
	assert.Equal(t, want, ready.Warnings)
	assert.Zero(t, ready.MoreWarnings)
	tools, err := d.Client.Tools(t.Context(), "")
	require.NoError(t, err)
	require.True(t, servetest.HasTool(tools, "mcp__ext__tool_000"))

	resp, err := d.Client.Call(t.Context(), "mcp__ext__tool_000", json.RawMessage(`{"name":"a","config":{"deep":[1,{"x":null}]}}`))
	require.NoError(t, err)
	assert.Contains(t, resp.Result.Text(), "tool_000 ok:")
	apiErr := callErr(t, d, "mcp__ext__tool_000", `{"config":{}}`)
	assert.Equal(t, api.KindInvalidArgs, apiErr.Call.Kind)
	assert.Contains(t, apiErr.Call.Result.Text(), `missing property "name"`)

	// A re-list after tools/list_changed brings the same warnings back.
	events := d.Events()
	_, err = d.Client.Call(t.Context(), "mcp__ext__add_tool", json.RawMessage(`{"name":"more"}`))
	require.NoError(t, err)
	servetest.Until(t, events, "tools changed", func(ev api.Event) bool { return ev.Kind == wire.KindToolsChanged })
	tools, err = d.Client.Tools(t.Context(), "")
	require.NoError(t, err)
	require.True(t, servetest.HasTool(tools, "mcp__ext__more"))

	log := d.log.String()
	for _, w := range want {
		quoted, err := json.Marshal(w)
		require.NoError(t, err)
		// slog's text handler quotes the value as Go does, like JSON here.
		assert.Equal(t, 1, strings.Count(log, "warning="+string(quoted)), "logged once: %s", w)
	}
	assert.Contains(t, log, `level=INFO msg="tool kept with an input schema reference not followed"`)
}
