package defs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/jsonschema"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
)

// deferralFixture is a registry with the built-ins, tool_search and
// servers "fs" (file tools) and "mem" (memory tools), and a cache over it
// whose policy the test sets.
func deferralFixture(t *testing.T) (*registry.Registry, *DefsCache, *event.Bus) {
	t.Helper()
	bus := event.NewBus()
	r := registry.NewRegistry(bus)
	c := NewDefsCache(r, Options{Bus: bus})
	search, err := c.SearchTool()
	require.NoError(t, err)
	require.NoError(t, registry.RegisterBuiltins(r, registry.BuiltinOptions{Root: t.TempDir(), Extra: []registry.Tool{search}}))
	_, err = r.ReplaceSource("fs", []registry.Tool{
		{ID: "mcp__fs__read_text_file", Name: "read_text_file", Title: "Read Text File", Description: "Read the complete contents of a file as text.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"head":{"type":"number"}}}`), Call: nopCall},
		{ID: "mcp__fs__list_directory", Name: "list_directory", Description: "Get a detailed listing of all files and directories in a path.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`), Call: nopCall},
		{ID: "mcp__fs__move_file", Name: "move_file", Description: "Move or rename files and directories.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"source":{"type":"string"},"destination":{"type":"string"}}}`), Call: nopCall},
	})
	require.NoError(t, err)
	_, err = r.ReplaceSource("mem", []registry.Tool{
		{ID: "mcp__mem__create_entities", Name: "create_entities", Description: "Create multiple new entities in the knowledge graph",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"entityType":{"type":"string"}}}}}}`), Call: nopCall},
		{ID: "mcp__mem__search_nodes", Name: "search_nodes", Description: "Search for nodes in the knowledge graph based on a query",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`), Call: nopCall},
	})
	require.NoError(t, err)
	return r, c, bus
}

func names(ds []Def) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

// encode is the list's JSON as a provider would be sent it.
func encode(t *testing.T, ds []Def) []byte {
	t.Helper()
	b, err := jsonschema.Encode(ds)
	require.NoError(t, err)
	return b
}

func TestDeferralStartsExactlyAtTheBudget(t *testing.T) {
	_, c, _ := deferralFixture(t)
	for _, d := range Dialects() {
		fullList := c.Defs(d)
		require.Nil(t, fullList.Deferral, "no policy: never deferred")
		require.NotContains(t, names(fullList.Tools), SearchToolID, "tool_search is advertised only when deferring")
		require.Equal(t, EstimateTokens(len(encode(t, fullList.Tools))), fullList.EstimatedTokens, "the estimate is of the list's JSON")

		c.SetPolicy(Policy{Budget: fullList.EstimatedTokens})
		at := c.Defs(d)
		require.Nil(t, at.Deferral, "%s: a list exactly at the budget is not deferred", d)
		require.Equal(t, fullList.Version, at.Version)

		c.SetPolicy(Policy{Budget: fullList.EstimatedTokens - 1})
		over := c.Defs(d)
		require.NotNil(t, over.Deferral, "%s: one token over the budget defers", d)
		require.Equal(t, []string{"read", SearchToolID, "write"}, names(over.Tools))
		require.Equal(t, []string{"mcp__fs__list_directory", "mcp__fs__move_file", "mcp__fs__read_text_file",
			"mcp__mem__create_entities", "mcp__mem__search_nodes"}, over.Deferral.Deferred)
		require.Empty(t, over.Deferral.Loaded)
		require.Equal(t, fullList.EstimatedTokens, over.Deferral.FullTokens)
		require.Less(t, over.EstimatedTokens, fullList.EstimatedTokens)
		c.SetPolicy(Policy{})
	}

	// Budget 0 never defers, however large the list.
	c.SetPolicy(Policy{Budget: 0})
	require.Nil(t, c.Defs(DialectJSONSchema).Deferral)
}

func TestDeferralKeepsAlwaysLoadedServers(t *testing.T) {
	_, c, _ := deferralFixture(t)
	c.SetPolicy(Policy{Budget: 1, AlwaysLoad: []string{"mem"}})
	got := c.Defs(DialectJSONSchema)
	require.Equal(t, []string{"mcp__mem__create_entities", "mcp__mem__search_nodes", "read", SearchToolID, "write"}, names(got.Tools))
	require.Equal(t, []string{"mcp__fs__list_directory", "mcp__fs__move_file", "mcp__fs__read_text_file"}, got.Deferral.Deferred)
	// Search never offers what is advertised anyway.
	for _, m := range c.Search("search nodes in the knowledge graph", 5) {
		require.NotContains(t, m.ID, "mcp__mem__")
	}
}

func TestDeferralNeedsToolSearch(t *testing.T) {
	r := registry.NewRegistry(nil)
	_, err := r.ReplaceSource("fs", []registry.Tool{tool("mcp__fs__a", "A", "")})
	require.NoError(t, err)
	c := NewDefsCache(r, Options{Policy: Policy{Budget: 1}})
	got := c.Defs(DialectJSONSchema)
	require.Nil(t, got.Deferral, "without tool_search registered nothing deferred could be found")
	require.Equal(t, []string{"mcp__fs__a"}, names(got.Tools))
}

func TestLoadingAppendsAndKeepsEveryEarlierByte(t *testing.T) {
	r, c, bus := deferralFixture(t)
	events, cancel := bus.Subscribe(256)
	defer cancel()
	c.SetPolicy(Policy{Budget: 1})
	for _, d := range Dialects() {
		c.ResetLoaded()
		prev := c.Defs(d)
		versions := map[string]bool{prev.Version: true}
		for _, id := range []string{"mcp__mem__search_nodes", "mcp__fs__move_file", "mcp__fs__read_text_file"} {
			require.Equal(t, []string{id}, c.Load([]string{id}))
			next := c.Defs(d)
			require.False(t, versions[next.Version], "%s: loading %s changes the version", d, id)
			versions[next.Version] = true
			p, n := encode(t, prev.Tools), encode(t, next.Tools)
			require.True(t, bytes.HasPrefix(n, p[:len(p)-1]), "%s: loading %s keeps every earlier byte:\n%s\n%s", d, id, p, n)
			require.Equal(t, id, next.Tools[len(next.Tools)-1].Name, "appended last")
			require.Equal(t, id, next.Deferral.Loaded[len(next.Deferral.Loaded)-1])
			require.NotContains(t, next.Deferral.Deferred, id)
			prev = next
		}
		require.Empty(t, c.Load([]string{"mcp__fs__move_file"}), "loading twice adds nothing")
		require.Equal(t, prev.Version, c.Defs(d).Version)
	}

	// A changed server changes only its own entries: the others keep their
	// bytes and places.
	before := c.Defs(DialectJSONSchema)
	_, err := r.ReplaceSource("mem", []registry.Tool{
		{ID: "mcp__mem__search_nodes", Name: "search_nodes", Description: "Search nodes (changed)", Call: nopCall},
	})
	require.NoError(t, err)
	after := c.Defs(DialectJSONSchema)
	require.Equal(t, names(before.Tools), names(after.Tools))
	for i := range before.Tools {
		if before.Tools[i].Name == "mcp__mem__search_nodes" {
			require.NotEqual(t, before.Tools[i], after.Tools[i])
			continue
		}
		require.Equal(t, before.Tools[i], after.Tools[i])
	}
	// A removed server's loaded tools leave; they come back at their place.
	r.RemoveSource("mem")
	gone := c.Defs(DialectJSONSchema)
	require.Equal(t, []string{"read", SearchToolID, "write", "mcp__fs__move_file", "mcp__fs__read_text_file"}, names(gone.Tools))
	_, err = r.ReplaceSource("mem", []registry.Tool{{ID: "mcp__mem__search_nodes", Name: "search_nodes", Description: "Search nodes (changed)", Call: nopCall}})
	require.NoError(t, err)
	require.Equal(t, after.Version, c.Defs(DialectJSONSchema).Version)

	// Clearing starts over, and says so; once.
	require.True(t, c.ResetLoaded())
	require.False(t, c.ResetLoaded())
	require.Equal(t, []string{"read", SearchToolID, "write"}, names(c.Defs(DialectJSONSchema).Tools))
	var kinds []string
	for len(events) > 0 {
		m := <-events
		if tl, ok := m.Event.(ToolsLoaded); ok {
			kinds = append(kinds, fmt.Sprint(tl.IDs, tl.Cleared))
		}
	}
	require.Contains(t, kinds, "[mcp__mem__search_nodes] false")
	require.Contains(t, kinds, "[] true")
}

func TestToolSearchFindsAndLoads(t *testing.T) {
	r, c, _ := deferralFixture(t)
	c.SetPolicy(Policy{Budget: 1})
	search, ok := r.Get(SearchToolID)
	require.True(t, ok)
	ctx := context.Background()
	args := json.RawMessage(`{"query": "rename a file", "limit": 2}`)
	require.NoError(t, search.Validate(ctx, args))
	res, err := search.Call(ctx, args, nil)
	require.NoError(t, err)
	require.False(t, res.IsError)
	text := res.Text()
	require.Contains(t, text, "1. mcp__fs__move_file: [server fs, user] Move or rename files and directories. (parameters: destination, source)")
	require.NotContains(t, text, "3. ")
	var structured struct {
		Tools []Match `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(res.Structured, &structured))
	require.Equal(t, "mcp__fs__move_file", structured.Tools[0].ID)
	got := c.Defs(DialectJSONSchema)
	require.Equal(t, "mcp__fs__move_file", got.Deferral.Loaded[0])
	require.Contains(t, names(got.Tools), "mcp__fs__move_file")

	// Nested parameter names count, and a tool's exact name comes first.
	require.Equal(t, "mcp__mem__create_entities", c.Search("entity type", 1)[0].ID)
	require.Equal(t, "mcp__fs__list_directory", c.Search("list_directory", 5)[0].ID)

	// Nothing matches: nothing loaded, and the model is told what to do.
	loaded := len(c.Defs(DialectJSONSchema).Deferral.Loaded)
	res, err = search.Call(ctx, json.RawMessage(`{"query": "zzzz qqqq"}`), nil)
	require.NoError(t, err)
	require.Contains(t, res.Text(), `No tool matches "zzzz qqqq"`)
	require.Len(t, c.Defs(DialectJSONSchema).Deferral.Loaded, loaded)

	// Bad arguments are refused by the schema before any call.
	for _, bad := range []string{`{}`, `{"query": ""}`, `{"query": "x", "limit": 0}`, `{"query": "x", "limit": 21}`, `{"query": "x", "extra": 1}`} {
		require.Error(t, search.Validate(ctx, json.RawMessage(bad)), bad)
	}
}

func TestSearchIndexFollowsTheRegistry(t *testing.T) {
	r, c, _ := deferralFixture(t)
	require.Empty(t, c.Search("weather forecast", 5))
	_, err := r.ReplaceSource("wx", []registry.Tool{{ID: "mcp__wx__forecast", Name: "forecast", Description: "Weather forecast for a city", Call: nopCall}})
	require.NoError(t, err)
	require.Equal(t, "mcp__wx__forecast", c.Search("weather forecast", 5)[0].ID)
	r.RemoveSource("wx")
	require.Empty(t, c.Search("weather forecast", 5))
}

func TestTerms(t *testing.T) {
	for in, want := range map[string][]string{
		"readFile":                  {"read", "file"},
		"list_directory_with_sizes": {"list", "directori", "size"},
		"HTTPServer get-env":        {"http", "server", "get", "env"},
		"Listing the files":         {"list", "file"},
		"":                          nil,
	} {
		require.Equal(t, want, Terms(in), in)
	}
}

// TestSearchAtScale checks that a search over 10,000 tools ranks the one
// tool that does the task first (the timing is in BenchmarkToolSearch).
func TestSearchAtScale(t *testing.T) {
	entries := scaleEntries(10000)
	entries = append(entries, registry.Entry{Tool: registry.Tool{ID: "mcp__gh__create_issue", Name: "create_issue", Source: "gh",
		Description: "Open a new issue in a GitHub repository"}})
	ix := NewIndex(entries)
	start := time.Now()
	got := ix.Search("open an issue on github", 5)
	require.Equal(t, "mcp__gh__create_issue", got[0].ID, "after %s", time.Since(start))
}

// scaleEntries returns n generated tools over a small vocabulary, 50 per
// server.
func scaleEntries(n int) []registry.Entry {
	verbs := []string{"get", "list", "create", "update", "delete", "search", "sync", "export"}
	nouns := []string{"record", "report", "user", "order", "invoice", "ticket", "page", "dataset", "job", "alert"}
	out := make([]registry.Entry, 0, n)
	for i := range n {
		v, o := verbs[i%len(verbs)], nouns[(i/len(verbs))%len(nouns)]
		server := fmt.Sprintf("s%03d", i/50)
		name := fmt.Sprintf("%s_%s_%d", v, o, i)
		out = append(out, registry.Entry{
			Tool: registry.Tool{ID: "mcp__" + server + "__" + name, Name: name, Source: server,
				Description: fmt.Sprintf("%s a %s of service %d", v, o, i)},
			Schema: []byte(`{"properties":{"id":{"type":"string"},"limit":{"type":"integer"}},"type":"object"}`),
		})
	}
	return out
}

func BenchmarkToolSearch(b *testing.B) {
	ix := NewIndex(scaleEntries(10000))
	b.ResetTimer()
	for b.Loop() {
		if len(ix.Search("export the invoice report of a user", 5)) != 5 {
			b.Fatal("no matches")
		}
	}
}

func TestPolicyChangesAreAnnouncedAndDeferralSticks(t *testing.T) {
	r, c, bus := deferralFixture(t)
	events, cancel := bus.Subscribe(64)
	defer cancel()
	policyEvents := func() (n int) {
		for len(events) > 0 {
			if _, ok := (<-events).Event.(PolicyChanged); ok {
				n++
			}
		}
		return n
	}
	full := c.Defs(DialectJSONSchema)
	require.True(t, c.SetPolicy(Policy{Budget: full.EstimatedTokens - 1}))
	require.False(t, c.SetPolicy(Policy{Budget: full.EstimatedTokens - 1}), "the same policy again is no change")
	require.True(t, c.SetPolicy(Policy{Budget: full.EstimatedTokens - 1, AlwaysLoad: []string{"mem"}}))
	require.False(t, c.SetPolicy(Policy{Budget: full.EstimatedTokens - 1, AlwaysLoad: []string{"mem", "mem"}}))
	require.Equal(t, 2, policyEvents())
	require.NotNil(t, c.Defs(DialectJSONSchema).Deferral)

	// The list goes under the budget (a server leaves, say): it stays
	// deferred until the loaded set is cleared.
	r.RemoveSource("fs")
	stuck := c.Defs(DialectJSONSchema)
	require.NotNil(t, stuck.Deferral, "once deferred, deferred until cleared")
	require.Contains(t, names(stuck.Tools), SearchToolID)
	require.True(t, c.ResetLoaded())
	require.Nil(t, c.Defs(DialectJSONSchema).Deferral, "cleared: the list fits, so it is full")

	// A policy change ends the stickiness too.
	_, err := r.ReplaceSource("fs", []registry.Tool{tool("mcp__fs__big", strings.Repeat("big ", 2000), "")})
	require.NoError(t, err)
	require.NotNil(t, c.Defs(DialectJSONSchema).Deferral)
	r.RemoveSource("fs")
	require.NotNil(t, c.Defs(DialectJSONSchema).Deferral)
	require.True(t, c.SetPolicy(Policy{Budget: full.EstimatedTokens - 2, AlwaysLoad: []string{"mem"}}))
	require.Nil(t, c.Defs(DialectJSONSchema).Deferral)
	require.Equal(t, 1, policyEvents())
}

func TestToolSearchLoadsOnlyWhenDeferring(t *testing.T) {
	r, c, bus := deferralFixture(t)
	events, cancel := bus.Subscribe(64)
	defer cancel()
	search, _ := r.Get(SearchToolID)
	res, err := search.Call(context.Background(), json.RawMessage(`{"query": "rename a file"}`), nil)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(res.Text(), `3 tool(s) for "rename a file", best first:`+"\n"), res.Text())
	require.NotContains(t, res.Text(), "now in your tool list", "nothing is deferred: nothing to load")
	for len(events) > 0 {
		_, loaded := (<-events).Event.(ToolsLoaded)
		require.False(t, loaded, "no tools_loaded without a change")
	}
	c.SetPolicy(Policy{Budget: 1})
	res, err = search.Call(context.Background(), json.RawMessage(`{"query": "rename a file"}`), nil)
	require.NoError(t, err)
	require.Contains(t, res.Text(), "they are now in your tool list")
	require.Equal(t, "mcp__fs__move_file", c.Defs(DialectOpenAI).Deferral.Loaded[0])
}

// An always-loaded server that connects after tools were loaded is sorted
// into the first part: the loaded tools keep their order after it.
func TestAlwaysLoadedServerArrivingLater(t *testing.T) {
	r, c, _ := deferralFixture(t)
	c.SetPolicy(Policy{Budget: 1, AlwaysLoad: []string{"late"}})
	c.Load([]string{"mcp__mem__search_nodes", "mcp__fs__move_file"})
	require.Equal(t, []string{"read", SearchToolID, "write", "mcp__mem__search_nodes", "mcp__fs__move_file"}, names(c.Defs(DialectJSONSchema).Tools))
	_, err := r.ReplaceSource("late", []registry.Tool{tool("mcp__late__a", "A", "")})
	require.NoError(t, err)
	require.Equal(t, []string{"mcp__late__a", "read", SearchToolID, "write", "mcp__mem__search_nodes", "mcp__fs__move_file"}, names(c.Defs(DialectJSONSchema).Tools))
}

func TestExactNameMatchesEveryServersTool(t *testing.T) {
	ix := NewIndex([]registry.Entry{
		{Tool: registry.Tool{ID: "mcp__a__deploy", Name: "deploy", Source: "a", Description: "Ship it"}},
		{Tool: registry.Tool{ID: "mcp__b__deploy", Name: "deploy", Source: "b", Description: "Ship it too"}},
		{Tool: registry.Tool{ID: "mcp__c__deploy_preview", Name: "deploy_preview", Source: "c", Description: "deploy deploy deploy a preview"}},
	})
	got := ix.Search("deploy", 3)
	require.ElementsMatch(t, []string{"mcp__a__deploy", "mcp__b__deploy"}, []string{got[0].ID, got[1].ID})
}

// Every entry point at once, under -race: the cache's state stays
// consistent and nothing deadlocks.
func TestDeferralConcurrentUse(t *testing.T) {
	r, c, _ := deferralFixture(t)
	search, _ := r.Get(SearchToolID)
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			for i := range 200 {
				switch (w + i) % 6 {
				case 0:
					c.Defs(Dialects()[i%3])
				case 1:
					c.Load([]string{fmt.Sprintf("mcp__fs__x%d", i%7)})
				case 2:
					c.ResetLoaded()
				case 3:
					_, _ = search.Call(context.Background(), json.RawMessage(`{"query": "file"}`), nil)
				case 4:
					_, _ = r.ReplaceSource("churn", []registry.Tool{tool(fmt.Sprintf("mcp__churn__t%d", i%5), "churn", "")})
				case 5:
					c.SetPolicy(Policy{Budget: i % 3})
				}
			}
		})
	}
	wg.Wait()
	d := c.Defs(DialectJSONSchema)
	require.Len(t, d.Version, 64)
}
