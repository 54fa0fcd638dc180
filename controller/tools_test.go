package controller

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// Tools is one server's registered tools with their own names, flags and
// resolved schemas; an unknown server is ErrUnknownServer.
func TestServerTools(t *testing.T) {
	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("s", "--tools", "1")}, time.Hour)
	h.waitPhase("s", wire.PhaseReady)
	st, err := h.c.Snapshot().Tools("s")
	require.NoError(t, err)
	require.Equal(t, "s", st.Server)
	require.Equal(t, wire.PhaseReady, st.Phase)
	byID := map[string]int{}
	for i, tool := range st.Tools {
		byID[tool.ID] = i
	}
	require.Contains(t, byID, "mcp__s__echo")
	echo := st.Tools[byID["mcp__s__echo"]]
	require.Equal(t, "echo", echo.Name)
	require.True(t, echo.ReadOnly)
	require.JSONEq(t, `{"readOnlyHint":true}`, string(echo.Annotations))
	require.Contains(t, string(echo.InputSchema), `"text"`)
	require.False(t, st.Tools[byID["mcp__s__note"]].ReadOnly)
	require.Len(t, st.Tools, 8)

	_, err = h.c.Snapshot().Tools("nope")
	require.ErrorIs(t, err, ErrUnknownServer)
}
