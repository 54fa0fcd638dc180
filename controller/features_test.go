package controller

import (
	"context"
	"encoding/json"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/mcp"
	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// featureEvents counts the ResourcesChanged and PromptsChanged events for
// source seen so far.
func (h *harness) featureEvents(source string) (resources, prompts int) {
	h.drain()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.log {
		switch ev := e.(type) {
		case wire.ResourcesChanged:
			if ev.Source == source {
				resources++
			}
		case wire.PromptsChanged:
			if ev.Source == source {
				prompts++
			}
		}
	}
	return resources, prompts
}

// call calls tool of server through the registry and fails the test on
// an error.
func (h *harness) call(server, tool, args string) {
	h.t.Helper()
	t, ok := h.reg.Get(mcp.ToolID(server, tool))
	require.True(h.t, ok, "tool %s of %s", tool, server)
	res, err := t.Call(context.Background(), []byte(args), nil)
	require.NoError(h.t, err)
	require.False(h.t, res.IsError, "%s: %s", tool, res.Text())
}

func resourceURIs(sr wire.ServerResources) []string {
	var out []string
	for _, r := range sr.Resources {
		out = append(out, r.URI)
	}
	return out
}

// Resources and prompts are registered per server like tools: counted in
// status, announced once, unchanged (no event) across restarts and a crash
// that bring the same lists back, announced again on a real change only,
// and removed with the server.
func TestFeaturesFollowTheServer(t *testing.T) {
	h := newHarness(t)
	h.c.SetDesired([]schema.Server{testServer("f", "--resources", "2", "--prompts"), testServer("plain")}, time.Hour)
	s1 := h.waitPhase("f", wire.PhaseReady)
	h.waitPhase("plain", wire.PhaseReady)
	require.Equal(t, 3, s1.Resources, "two text resources and the binary one")
	require.Equal(t, 1, s1.ResourceTemplates)
	require.Equal(t, 2, s1.Prompts)
	require.Zero(t, h.server("plain").Resources)
	res, prompts := h.featureEvents("f")
	require.Equal(t, 1, res)
	require.Equal(t, 1, prompts)
	res, prompts = h.featureEvents("plain")
	require.Zero(t, res+prompts, "a server without resources or prompts announces none")

	all := h.c.Snapshot().AllResources()
	require.Len(t, all.Servers, 1, "only servers that have resources")
	require.Equal(t, "f", all.Servers[0].Server)
	require.Equal(t, []string{testserver.BinaryURI, testserver.TextURI(0), testserver.TextURI(1)}, resourceURIs(all.Servers[0]))
	require.Equal(t, testserver.ItemTemplate, all.Servers[0].Templates[0].URITemplate)
	ap := h.c.Snapshot().AllPrompts()
	require.Len(t, ap.Servers, 1)
	require.Equal(t, "greet", ap.Servers[0].Prompts[0].Name)
	args, err := json.Marshal(ap.Servers[0].Prompts[0].Arguments)
	require.NoError(t, err)
	require.JSONEq(t, `[{"name":"name","description":"Who to greet","required":true},
		{"name":"greeting","description":"The word to greet with (default Hello)"}]`, string(args))

	read, err := h.c.ReadResource(t.Context(), "f", testserver.BinaryURI)
	require.NoError(t, err)
	require.Len(t, read.Contents, 1)
	require.True(t, read.Contents[0].Binary())
	require.Equal(t, testserver.BinaryContents(), read.Contents[0].Blob)
	read, err = h.c.ReadResource(t.Context(), "f", testserver.TextURI(1))
	require.NoError(t, err)
	require.Equal(t, testserver.TextContents(1), *read.Contents[0].Text)
	pr, err := h.c.GetPrompt(t.Context(), "f", "greet", map[string]string{"name": "Ada"})
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"text","text":"Hello, Ada!"}`, string(pr.Messages[0].Content))
	_, err = h.c.GetPrompt(t.Context(), "f", "greet", nil)
	require.ErrorIs(t, err, mcp.ErrPromptArguments)
	require.ErrorContains(t, err, `prompt "greet" needs the argument "name"`)
	_, err = h.c.ReadResource(t.Context(), "plain", "test://x")
	require.ErrorIs(t, err, mcp.ErrNotOffered)
	_, err = h.c.GetPrompt(t.Context(), "nobody", "greet", nil)
	require.ErrorIs(t, err, ErrUnknownServer)

	// Restarts and a crash bring the same lists back: nothing announced.
	for i := range 2 {
		require.NoError(t, h.c.Restart("f"))
		require.Eventually(t, func() bool {
			s := h.server("f")
			return s.Phase == wire.PhaseReady && s.Generation == s1.Generation+int64(i)+1
		}, 30*time.Second, 5*time.Millisecond)
	}
	s2 := h.server("f")
	require.NoError(t, syscall.Kill(s2.PID, syscall.SIGKILL))
	require.Eventually(t, func() bool {
		s := h.server("f")
		return s.Phase == wire.PhaseReady && s.PID != s2.PID
	}, 30*time.Second, 5*time.Millisecond)
	res, prompts = h.featureEvents("f")
	require.Equal(t, 1, res, "restarts of an identical server publish nothing")
	require.Equal(t, 1, prompts)
	require.Equal(t, 3, h.server("f").Resources)

	// A list_changed that changes nothing announces nothing; a real change
	// announces the list that changed, once.
	h.call("f", "relist", `{}`)
	h.call("f", "set_resource", `{"uri": "test://new", "text": "fresh"}`)
	require.Eventually(t, func() bool { return h.server("f").Resources == 4 }, 30*time.Second, 5*time.Millisecond)
	res, prompts = h.featureEvents("f")
	require.Equal(t, 2, res)
	require.Equal(t, 1, prompts, "the prompts did not change")
	h.call("f", "add_prompt", `{"name": "later"}`)
	require.Eventually(t, func() bool { return h.server("f").Prompts == 3 }, 30*time.Second, 5*time.Millisecond)
	res, prompts = h.featureEvents("f")
	require.Equal(t, 2, res)
	require.Equal(t, 2, prompts)
	sp, err := h.c.Snapshot().Prompts("f")
	require.NoError(t, err)
	require.Len(t, sp.Prompts, 3)

	// Removing the server removes them at once, announced.
	h.c.SetDesired([]schema.Server{testServer("plain")}, time.Hour)
	require.Eventually(t, func() bool { return !h.listed("f") }, 30*time.Second, 5*time.Millisecond)
	_, ok := h.reg.SourceFeatures("f")
	require.False(t, ok, "resources and prompts left in the registry")
	res, prompts = h.featureEvents("f")
	require.Equal(t, 3, res)
	require.Equal(t, 3, prompts)
	_, err = h.c.Snapshot().Resources("f")
	require.ErrorIs(t, err, ErrUnknownServer)
	require.Empty(t, h.c.Snapshot().AllResources().Servers)
}

// The resources and prompts of a server that does not come back are
// removed with its tools.
func TestFeaturesOfAServerThatStopsAreRemoved(t *testing.T) {
	h := newHarness(t)
	srv := testServer("d", "--resources", "1", "--prompts")
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	h.waitPhase("d", wire.PhaseReady)
	srv.Enabled = false
	h.c.SetDesired([]schema.Server{srv}, time.Hour)
	h.waitPhase("d", wire.PhaseDisabled)
	_, ok := h.reg.SourceFeatures("d")
	require.False(t, ok)
	res, prompts := h.featureEvents("d")
	require.Equal(t, 2, res)
	require.Equal(t, 2, prompts)
	st := h.server("d")
	require.Zero(t, st.Resources+st.ResourceTemplates+st.Prompts)
	_, err := h.c.ReadResource(t.Context(), "d", testserver.TextURI(0))
	require.ErrorIs(t, err, ErrNotReady)
}
