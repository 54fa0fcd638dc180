package mcp

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The caching hints of a list page, bounded: hostile values are stale at
// once or cut to maxListTTL.
func TestListTTL(t *testing.T) {
	tests := []struct {
		page string
		want time.Duration
	}{
		{`{"ttlMs": 60000, "cacheScope": "public"}`, time.Minute},
		{`{"ttlMs": 1500, "cacheScope": "private"}`, 1500 * time.Millisecond},
		{`{"ttlMs": 60000}`, 0},
		{`{"ttlMs": 60000, "cacheScope": "shared"}`, 0},
		{`{"ttlMs": -5, "cacheScope": "public"}`, 0},
		{`{"ttlMs": 0, "cacheScope": "public"}`, 0},
		{`{"ttlMs": "60000", "cacheScope": "public"}`, 0},
		{`{"ttlMs": 1e300, "cacheScope": "public"}`, maxListTTL},
		{`{"ttlMs": 9223372036854775807, "cacheScope": "public"}`, maxListTTL},
		{`{"cacheScope": "public"}`, 0},
		{`{}`, 0},
	}
	for _, tt := range tests {
		var page map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(tt.page), &page))
		require.Equal(t, tt.want, listTTL(page), tt.page)
	}
}

// On 2026-07-28 the tool list is not listed again while its ttlMs says it
// is fresh, when the listen stream's acknowledgement comes; a
// tools/list_changed still lists it again at once.
func TestFreshListNotRefetched(t *testing.T) {
	log := filepath.Join(t.TempDir(), "requests")
	s := connect(t, localServer("cached", "--modern", "--ttl-ms", "600000", "--cache-scope", "public", "--request-log", log))
	require.Equal(t, ModernProtocolVersion, s.Protocol())
	// The listen stream is open (and acknowledged) before add_tool: its
	// notice is not lost.
	require.Eventually(t, func() bool { return countOf(requestLog(t, log), "subscriptions/listen") > 0 }, 10*time.Second, 5*time.Millisecond)
	_, err := s.CallTool(context.Background(), "add_tool", json.RawMessage(`{"name":"extra"}`), nil)
	require.NoError(t, err)
	select {
	case <-s.ToolsChanged():
	case <-time.After(10 * time.Second):
		t.Fatal("no tools change after list_changed")
	}
	require.True(t, slices.ContainsFunc(s.Tools(), func(tool Tool) bool { return tool.Name == "extra" }))
	got := requestLog(t, log)
	require.Equal(t, 2, countOf(got, "tools/list"), "the connect's and the list_changed's, not the acknowledgement's: %v", got)
}

// Without caching hints (ttlMs 0) the acknowledgement lists the tools
// again; that unchanged list signals no change: add_tool's is the only
// one.
func TestStaleListRefetchedWithoutChange(t *testing.T) {
	log := filepath.Join(t.TempDir(), "requests")
	s := connect(t, localServer("uncached", "--modern", "--request-log", log))
	require.Eventually(t, func() bool { return countOf(requestLog(t, log), "tools/list") == 2 }, 10*time.Second, 5*time.Millisecond)
	_, err := s.CallTool(context.Background(), "add_tool", json.RawMessage(`{"name":"extra"}`), nil)
	require.NoError(t, err)
	select {
	case <-s.ToolsChanged():
	case <-time.After(10 * time.Second):
		t.Fatal("no tools change after list_changed")
	}
	require.True(t, slices.ContainsFunc(s.Tools(), func(tool Tool) bool { return tool.Name == "extra" }))
	select {
	case <-s.ToolsChanged():
		t.Fatal("a second change signalled: the unchanged re-list counted as one")
	default:
	}
}
