package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/testserver"
)

// callErr makes a call through serve's API that must fail and returns the
// API's answer.
func callErr(t *testing.T, p *serveProc, tool, args string) *api.Error {
	t.Helper()
	_, err := p.client.Call(t.Context(), tool, json.RawMessage(args))
	var apiErr *api.Error
	require.ErrorAs(t, err, &apiErr)
	require.NotNil(t, apiErr.Call, "%v", err)
	return apiErr
}

func TestServeCallLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)

	// A call that runs past its server's callTimeout (or mcp.callTimeout)
	// is answered 504 "timeout", and the server is told to stop it.
	t.Run("call timeout", func(t *testing.T) {
		home := shortHome(t)
		sLog, gLog := filepath.Join(home, "s.calls"), filepath.Join(home, "g.calls")
		s := local("s", ts, "--call-log", sLog)
		s["callTimeout"] = 300
		conf := cfg(s, local("g", ts, "--call-log", gLog))
		conf["mcp"].(map[string]any)["callTimeout"] = 400
		config{t, filepath.Join(home, "config.json")}.write(conf, true)
		p := startServe(t, home)
		p.waitPhase("s", "ready")
		p.waitPhase("g", "ready")

		for _, tc := range []struct{ tool, log, within string }{
			{"mcp__s__sleep", sLog, "300ms"},
			{"mcp__g__sleep", gLog, "400ms"},
		} {
			apiErr := callErr(t, p, tc.tool, `{"ms":60000}`)
			assert.Equal(t, 504, apiErr.Status, tc.tool)
			assert.Equal(t, api.KindTimeout, apiErr.Call.Kind, tc.tool)
			assert.Equal(t, "tool "+tc.tool+" did not finish within "+tc.within, apiErr.Call.Result.Text())
			// notifications/cancelled ended the sleep early on the server.
			var end *testserver.CallRecord
			require.Eventually(t, func() bool {
				recs, err := testserver.ReadCallLog(tc.log)
				require.NoError(t, err)
				for _, r := range recs {
					if r.Phase == "end" && r.Tool == "sleep" {
						end = &r
						return true
					}
				}
				return false
			}, waitFor, 10*time.Millisecond, "the server never ended the sleep of %s", tc.tool)
			require.NotNil(t, end.IsError)
			assert.True(t, *end.IsError, "the sleep was cancelled, not completed")
			assert.Less(t, end.End.Sub(end.Start), 30*time.Second)
		}
		// Both servers are still there.
		resp, err := p.client.Call(t.Context(), "mcp__s__echo", json.RawMessage(`{"text":"still here"}`))
		require.NoError(t, err)
		assert.Equal(t, "still here", resp.Result.Text())
	})

	t.Run("argument size", func(t *testing.T) {
		home := shortHome(t)
		conf := cfg(local("a", ts))
		conf["mcp"].(map[string]any)["maxArgumentBytes"] = 1024
		config{t, filepath.Join(home, "config.json")}.write(conf, true)
		p := startServe(t, home)
		p.waitPhase("a", "ready")
		apiErr := callErr(t, p, "mcp__a__echo", `{"text":"`+strings.Repeat("x", 2000)+`"}`)
		assert.Equal(t, 400, apiErr.Status)
		assert.Equal(t, api.KindInvalidArgs, apiErr.Call.Kind)
		assert.Equal(t, "invalid arguments for mcp__a__echo: arguments of 2 KiB exceed the limit of 1 KiB (mcp.maxArgumentBytes); send less per call", apiErr.Call.Result.Text())
	})

	// serve started in a directory that contains its home (as in ~): the
	// built-in read of the home's files asks, even with an allow rule, and a
	// refusal reads nothing; other files are read as before.
	t.Run("home inside the workspace", func(t *testing.T) {
		ws := shortHome(t)
		home := filepath.Join(ws, ".freecode")
		require.NoError(t, os.Mkdir(home, 0o700))
		conf := cfg()
		conf["permission"] = map[string]any{"allow": []string{"read"}}
		config{t, filepath.Join(home, "config.json")}.write(conf, true)
		require.NoError(t, os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("plain\n"), 0o644))
		require.NoError(t, os.Symlink(".freecode/config.json", filepath.Join(ws, "innocent.txt")))
		p := startServeIn(t, home, ws)
		events := p.events()

		resp, err := p.client.Call(t.Context(), "read", json.RawMessage(`{"path":"notes.txt"}`))
		require.NoError(t, err)
		assert.Equal(t, "plain\n", resp.Result.Text())

		for _, path := range []string{".freecode/config.json", "innocent.txt"} {
			done := make(chan error, 1)
			go func() {
				_, err := p.client.Call(context.Background(), "read", json.RawMessage(`{"path":"`+path+`"}`))
				done <- err
			}()
			got := until(t, events, "approval_requested", func(ev api.Event) bool { return ev.Kind == "approval_requested" })
			var req api.Approval
			require.NoError(t, got[len(got)-1].Decode(&req))
			assert.Equal(t, "read", req.Tool)
			assert.Equal(t, path+" is inside FreeCode's home "+home+" (its config holds provider keys); it is read or written only with your approval", req.Reason)
			require.NoError(t, p.client.Answer(t.Context(), req.ID, false))
			err := <-done
			var apiErr *api.Error
			require.ErrorAs(t, err, &apiErr)
			assert.Equal(t, api.KindNotApproved, apiErr.Call.Kind, path)
			assert.NotContains(t, apiErr.Call.Result.Text(), "sk-test")
		}
	})
}
