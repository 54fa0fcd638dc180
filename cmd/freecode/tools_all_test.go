package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/wire"
)

// A row's JSON is the tool's (the server's object under FreeCode's
// fields) with the row's own fields, each key once: the server's keys
// that are the row's, in any case, give way.
func TestToolRowJSON(t *testing.T) {
	row := toolRow{Tool: wire.Tool{ID: "mcp__s__t", Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`),
		Raw: json.RawMessage(`{"name":"t","permission":"allow","Server":"other","deferred":true,"icons":[{"src":"https://x/i.png"}]}`)},
		Server: "s", Permission: "ask"}
	got, err := json.Marshal(row)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"mcp__s__t","name":"t","readOnly":false,"inputSchema":{"type":"object"},
		"server":"s","permission":"ask","deferred":false,"icons":[{"src":"https://x/i.png"}]}`, string(got))
	require.Equal(t, 1, strings.Count(string(got), `"permission"`))
	require.NotContains(t, string(got), `"Server"`)
}
