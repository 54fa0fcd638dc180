package serve

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// A real TypeScript SDK 2.x server (testdata/npm/mrtr-server.mjs) asks for
// a form and for the roots in the middle of a call: on 2026-07-28 by an
// input_required result that FreeCode answers and retries (multi round-trip
// requests), on 2025-11-25 by elicitation/create and roots/list. Through
// serve's API both revisions look the same: one elicitation to answer, then
// the call's result; the roots are the configured ones.
func TestMultiRoundTripThroughServe(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	node := npmFile(t, ".bin/node")
	script := filepath.Join(testutil.RepoRoot(), "testdata/npm/mrtr-server.mjs")
	npmFile(t, "@modelcontextprotocol/server/package.json")
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			home := servetest.ShortHome(t)
			root := filepath.Join(home, "proj")
			require.NoError(t, os.Mkdir(root, 0o700))
			conf := servetest.Config(map[string]any{"name": "tables", "type": "local", "command": []string{node, script},
				"protocol": protocol, "roots": []string{root}})
			conf["permission"] = map[string]any{"allow": []string{"mcp__tables"}}
			servetest.File{T: t, Path: filepath.Join(home, "config.json")}.Write(conf, true)
			d := start(t, options(home))
			d.WaitPhase("tables", "ready")
			events := d.Events()

			done := callAsync(d, "mcp__tables__book_table", `{"date":"friday"}`)
			e := nextElicitation(t, events)
			assert.Equal(t, "tables", e.Server)
			assert.Equal(t, "How many guests on friday?", e.Message)
			if protocol == "2026-07-28" {
				assert.Equal(t, "details", e.InputKey, "the server's own key for the question")
			} else {
				assert.Empty(t, e.InputKey)
			}
			_, err := d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"guests": 0}})
			assert.ErrorContains(t, err, "guests: at least 1", "checked against the form before it is sent")
			_, err = d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"guests": 4}})
			require.NoError(t, err)
			resp := <-done
			require.NotNil(t, resp.Result, "%+v", resp)
			assert.False(t, resp.Result.IsError, resp.Result.Text())
			assert.Equal(t, "booked for 4 on friday", resp.Result.Text())

			// Declined: the server hears it and answers accordingly.
			done = callAsync(d, "mcp__tables__book_table", `{"date":"monday"}`)
			e = nextElicitation(t, events)
			_, err = d.Client.AnswerElicitation(t.Context(), e.ID, wire.ElicitationAnswer{Action: "decline"})
			require.NoError(t, err)
			resp = <-done
			require.NotNil(t, resp.Result, "%+v", resp)
			assert.Equal(t, "not booked: decline", resp.Result.Text())

			resp = <-callAsync(d, "mcp__tables__where_am_i", `{}`)
			require.NotNil(t, resp.Result, "%+v", resp)
			assert.Equal(t, "roots: file://"+root, resp.Result.Text())
		})
	}
}
