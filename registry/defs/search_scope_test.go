package defs

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/registry"
)

// stuffedFixture is the user's filesystem server beside a project's server
// whose one tool describes itself with every everyday word, over and over.
func stuffedFixture(t *testing.T) (*registry.Registry, *DefsCache) {
	t.Helper()
	r, c, _ := deferralFixture(t)
	stuffing := strings.Repeat("read file contents text list directory files folder move rename write save edit ", 12)
	_, err := r.ReplaceSource("repo-helper", []registry.Tool{
		{ID: "mcp__repo-helper__helper", Name: "helper", Description: "Helper for the repository. " + stuffing,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"input":{"type":"string"}}}`), Call: nopCall},
	})
	require.NoError(t, err)
	c.SetPolicy(Policy{Budget: 1, Project: []string{"repo-helper"}})
	return r, c
}

// TestToolSearchPrefersTheUsersToolsOverStuffing: on everyday tasks the
// user's filesystem tools rank above a project server that repeats every
// everyday word in its description; each match says its server and where
// that server is configured.
func TestToolSearchPrefersTheUsersToolsOverStuffing(t *testing.T) {
	r, c := stuffedFixture(t)
	for query, want := range map[string]string{
		"read a file":                 "mcp__fs__read_text_file",
		"show the contents of a file": "mcp__fs__read_text_file",
		"list the files in a folder":  "mcp__fs__list_directory",
		"rename a file":               "mcp__fs__move_file",
		"move files":                  "mcp__fs__move_file",
	} {
		got := c.Search(query, 5)
		require.NotEmpty(t, got, query)
		require.Equal(t, want, got[0].ID, "%q: %+v", query, got)
	}

	search, ok := r.Get(SearchToolID)
	require.True(t, ok)
	res, err := search.Call(context.Background(), json.RawMessage(`{"query": "read a file", "limit": 5}`), nil)
	require.NoError(t, err)
	require.Contains(t, res.Text(), "1. mcp__fs__read_text_file: [server fs, user] Read the complete contents of a file as text.")
	require.Contains(t, res.Text(), "mcp__repo-helper__helper: [server repo-helper, project] Helper for the repository.")
	var structured struct {
		Tools []Match `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(res.Structured, &structured))
	require.Equal(t, "fs", structured.Tools[0].Server)
	require.Equal(t, ScopeUser, structured.Tools[0].Scope)
}

// A project's tool that matches clearly better still comes first: the
// scope weight settles near-ties, it does not hide project tools.
func TestToolSearchProjectToolThatFitsBetterComesFirst(t *testing.T) {
	r, c, _ := deferralFixture(t)
	_, err := r.ReplaceSource("proj", []registry.Tool{
		{ID: "mcp__proj__run_migrations", Name: "run_migrations", Description: "Run the database migrations of this project.", Call: nopCall},
	})
	require.NoError(t, err)
	c.SetPolicy(Policy{Budget: 1, Project: []string{"proj"}})
	got := c.Search("run database migrations", 3)
	require.Equal(t, "mcp__proj__run_migrations", got[0].ID)
	require.Equal(t, ScopeProject, got[0].Scope)
}

// Repeating a word in a description does not make it match better.
func TestDescriptionTermsCountOnce(t *testing.T) {
	tool := func(id, desc string) registry.Entry {
		return registry.Entry{Tool: registry.Tool{ID: id, Name: id, Source: "s", Description: desc}}
	}
	ix := NewIndex([]registry.Entry{
		tool("once", "Export a report."),
		tool("many", "Export a report. report report report report report report report report"),
	})
	got := ix.Rank("report", 2, false)
	require.Len(t, got, 2)
	require.Equal(t, got[0].Score, got[1].Score, "%+v", got)
}

// A project's copy of the user's tool (the same name and description, a
// server whose name sorts first) ties on every word: the user's ranks
// first.
func TestToolSearchNearTiesGoToTheUser(t *testing.T) {
	r, c, _ := deferralFixture(t)
	_, err := r.ReplaceSource("a-fs", []registry.Tool{
		{ID: "mcp__a-fs__read_text_file", Name: "read_text_file", Title: "Read Text File", Description: "Read the complete contents of a file as text.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number"}}}`), Call: nopCall},
	})
	require.NoError(t, err)
	c.SetPolicy(Policy{Budget: 1, Project: []string{"a-fs"}})
	for _, q := range []string{"read a file", "show the contents of a text file"} {
		got := c.Search(q, 2)
		require.Equal(t, []string{"mcp__fs__read_text_file", "mcp__a-fs__read_text_file"}, []string{got[0].ID, got[1].ID}, q)
	}
}

// TestSearchTiesPreferTheUsersServer: the same tool from a project's
// server and from the user's scores the same less projectWeight; with the
// project's weight cancelled out by a better match it still ties, and the
// user's comes first, whatever the ids' order. Each match says its server.
func TestSearchTiesPreferTheUsersServer(t *testing.T) {
	tool := func(src string) registry.Entry {
		return registry.Entry{Tool: registry.Tool{ID: "mcp__" + src + "__list_widgets", Source: src, Name: "list_widgets",
			Description: "List the widgets."}}
	}
	// Without a project: a tie, broken by id.
	ix := NewScopedIndex([]registry.Entry{tool("aaa"), tool("zzz")}, nil)
	got := ix.Search("list widgets", 5)
	require.Len(t, got, 2)
	require.Equal(t, got[0].Score, got[1].Score)
	require.Equal(t, "aaa", got[0].Server)
	// A project's source sorts after the user's on equal scores.
	ix = NewScopedIndex([]registry.Entry{tool("aaa"), tool("zzz")}, []string{"aaa"})
	ix.docs[0].weight = 1 // the same score: only the tie-break orders them
	got = ix.Search("list widgets", 5)
	require.Len(t, got, 2)
	require.Equal(t, got[0].Score, got[1].Score)
	require.Equal(t, []string{"zzz", "aaa"}, []string{got[0].Server, got[1].Server})
	require.Equal(t, []string{ScopeUser, ScopeProject}, []string{got[0].Scope, got[1].Scope})
}
