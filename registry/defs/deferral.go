package defs

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/freecode/freecode/jsonschema"
	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/wire"
)

// Deferred loading. When the definitions of every tool would take more
// than Policy.Budget estimated tokens in a dialect, that dialect's list
// holds only:
//
//  1. the always-loaded tools — built-ins and the tools of the sources in
//     Policy.AlwaysLoad — and tool_search, sorted by name;
//  2. the tools tool_search loaded, in the order they were loaded.
//
// Every other tool is deferred: callable, but not advertised until a
// search names it. Loading appends, so every byte of the list before it
// stays put (and with it the provider's prompt cache). A changed server
// changes only its own entries' bytes; a removed one's entries leave, and
// come back at their place with it (moving what follows them), and an
// always-loaded server that connects later is sorted into the first part.
// A list that fits the budget is the full list, without tool_search —
// unless it was deferred since the loaded set was last cleared or the
// policy last changed: a dialect that is deferred stays so until then, so
// that a server in backoff that takes the list under the budget does not
// turn it full and back again (each time a new list for the provider).

// SearchToolID is the id of the built-in that finds and loads deferred
// tools (DefsCache.SearchTool).
const SearchToolID = "tool_search"

// Search limits: tool_search returns DefaultSearchLimit matches unless
// asked for at most MaxSearchLimit; a match's description is cut at
// MaxMatchDescription bytes (the whole one comes with the definition).
const (
	DefaultSearchLimit  = 5
	MaxSearchLimit      = 20
	MaxMatchDescription = 400
)

// Policy says when a list is deferred.
type Policy struct {
	// Budget is how many estimated tokens (EstimateTokens) a dialect's
	// list may take before tools are deferred; 0 never defers.
	Budget int
	// AlwaysLoad names the sources whose tools are advertised even when
	// deferring; the built-ins always are.
	AlwaysLoad []string
	// Project names the sources that are a project's servers: tool_search
	// ranks their tools below the user's on near-ties and says where each
	// match comes from. It changes no list.
	Project []string
}

func (p Policy) alwaysLoads(source string) bool {
	return source == registry.SourceBuiltin || slices.Contains(p.AlwaysLoad, source)
}

// key identifies the policy's always-loaded set.
func (p Policy) key() string { return setKey(p.AlwaysLoad) }

// indexKey identifies what the search index depends on: the always-loaded
// set (left out) and the project's servers (ranked lower).
func (p Policy) indexKey() string { return p.key() + "\x01" + setKey(p.Project) }

func setKey(names []string) string {
	s := slices.Clone(names)
	slices.Sort(s)
	return strings.Join(slices.Compact(s), "\x00")
}

// Deferral says how a list was deferred.
type Deferral struct {
	// Budget is the policy's budget; FullTokens what every tool's
	// definition would take.
	Budget     int `json:"budget"`
	FullTokens int `json:"fullTokens"`
	// Deferred are the ids left out of the list, sorted.
	Deferred []string `json:"deferred"`
	// Loaded are the ids tool_search loaded that are in the list, in the
	// order they were loaded (the order they end the list in).
	Loaded []string `json:"loaded"`
}

// ToolsLoaded says that the loaded set changed: IDs were loaded, or (with
// Cleared) the set was emptied. Its JSON is the API's tools_loaded event.
// Like every event it is a hint to read the definitions again, and a slow
// subscriber may miss it (event.Bus says how it learns that it did).
type ToolsLoaded struct {
	IDs     []string `json:"ids,omitempty"`
	Cleared bool     `json:"cleared,omitempty"`
}

// Kind implements event.Event.
func (ToolsLoaded) Kind() string { return wire.KindToolsLoaded }

// PolicyChanged says that the deferral policy changed (SetPolicy): the
// definitions may have changed with it. Its JSON is the API's
// defs_policy_changed event.
type PolicyChanged struct {
	Budget     int      `json:"budget"`
	AlwaysLoad []string `json:"alwaysLoad,omitempty"`
}

// Kind implements event.Event.
func (PolicyChanged) Kind() string { return wire.KindDefsPolicyChanged }

// view is a deferred list with what it was built from.
type view struct {
	version   string // of the full list
	policy    string // Policy.key()
	budget    int
	loadedGen uint64
	defs      Defs
}

func (c *DefsCache) currentPolicy() Policy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.policy
}

// SetPolicy makes p the deferral policy and, when it differs from the one
// before, publishes PolicyChanged and ends every dialect's stickiness (see
// the package comment on deferral).
// A change of Policy.Project alone changes only how tool_search ranks.
func (c *DefsCache) SetPolicy(p Policy) (changed bool) {
	p.AlwaysLoad, p.Project = slices.Clone(p.AlwaysLoad), slices.Clone(p.Project)
	c.mu.Lock()
	changed = p.Budget != c.policy.Budget || p.key() != c.policy.key()
	if changed {
		clear(c.sticky)
	}
	c.policy = p
	c.mu.Unlock()
	if changed {
		c.opts.Bus.Publish(PolicyChanged{Budget: p.Budget, AlwaysLoad: p.AlwaysLoad})
	}
	return changed
}

// deferred returns dialect d's full list f, deferred as the policy says.
func (c *DefsCache) deferred(d Dialect, f full) Defs {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.policy
	if p.Budget <= 0 || f.search == nil || (f.defs.EstimatedTokens <= p.Budget && !c.sticky[d]) {
		// Without tool_search nothing deferred could be found again.
		return f.defs
	}
	c.sticky[d] = true
	key := p.key()
	if v, ok := c.views[d]; ok && v.version == f.defs.Version && v.policy == key && v.budget == p.Budget && v.loadedGen == c.loadedGen {
		return v.defs
	}
	out := Defs{Problems: f.defs.Problems}
	dfr := &Deferral{Budget: p.Budget, FullTokens: f.defs.EstimatedTokens, Deferred: []string{}, Loaded: []string{}}
	byID := make(map[string]int, len(f.defs.Tools))
	for i, t := range f.defs.Tools {
		if p.alwaysLoads(f.sources[i]) {
			out.Tools = append(out.Tools, t)
			continue
		}
		byID[t.Name] = i
	}
	at, _ := slices.BinarySearchFunc(out.Tools, SearchToolID, func(t Def, id string) int { return strings.Compare(t.Name, id) })
	out.Tools = slices.Insert(out.Tools, at, *f.search)
	for _, id := range c.loaded {
		if i, ok := byID[id]; ok {
			out.Tools = append(out.Tools, f.defs.Tools[i])
			dfr.Loaded = append(dfr.Loaded, id)
			delete(byID, id)
		}
	}
	for id := range byID {
		dfr.Deferred = append(dfr.Deferred, id)
	}
	slices.Sort(dfr.Deferred)
	out.Version, out.EstimatedTokens = defsVersion(out.Tools)
	out.Deferral = dfr
	c.views[d] = view{version: f.defs.Version, policy: key, budget: p.Budget, loadedGen: c.loadedGen, defs: out}
	return out
}

// Load adds ids to the loaded set, in order, skipping those already in it,
// and returns the ones added. Ids need not be registered (yet): a loaded
// tool whose server is gone comes back at its place when the server does.
func (c *DefsCache) Load(ids []string) []string {
	c.mu.Lock()
	var added []string
	for _, id := range ids {
		if !c.loadedSet[id] {
			c.loadedSet[id] = true
			c.loaded = append(c.loaded, id)
			added = append(added, id)
		}
	}
	if len(added) > 0 {
		c.loadedGen++
	}
	c.mu.Unlock()
	if len(added) > 0 {
		c.opts.Bus.Publish(ToolsLoaded{IDs: added})
	}
	return added
}

// ResetLoaded empties the loaded set (a new conversation starts with only
// the always-loaded tools again), ends every dialect's stickiness, and
// reports whether either held anything.
func (c *DefsCache) ResetLoaded() bool {
	c.mu.Lock()
	had := len(c.loaded) > 0 || len(c.sticky) > 0
	if had {
		c.loaded = nil
		clear(c.loadedSet)
		clear(c.sticky)
		c.loadedGen++
	}
	c.mu.Unlock()
	if had {
		c.opts.Bus.Publish(ToolsLoaded{Cleared: true})
	}
	return had
}

// deferring reports whether any dialect's list is deferred now: one that
// was since it last started over (cheap), else one that is once built.
func (c *DefsCache) deferring() bool {
	c.mu.Lock()
	sticky := len(c.sticky) > 0
	c.mu.Unlock()
	if sticky {
		return true
	}
	for _, d := range Dialects() {
		if c.Defs(d).Deferral != nil {
			return true
		}
	}
	return false
}

// Search ranks the tools that are not always loaded (tool_search aside)
// for query and returns at most limit of them, best first. It loads
// nothing.
func (c *DefsCache) Search(query string, limit int) []Match {
	return c.searchIndex(c.currentPolicy()).Search(query, limit)
}

// searchIndex returns the index over the current tools that p does not
// always load, built at most once per registry generation and policy:
// concurrent searchers wait for one build (imu).
func (c *DefsCache) searchIndex(p Policy) *Index {
	key := p.indexKey()
	c.imu.Lock()
	defer c.imu.Unlock()
	gen := c.reg.Generation()
	c.mu.Lock()
	if c.index != nil && c.indexGen == gen && c.indexKey == key {
		ix := c.index
		c.mu.Unlock()
		return ix
	}
	c.mu.Unlock()
	gen, entries := c.reg.Snapshot()
	entries = slices.DeleteFunc(entries, func(e registry.Entry) bool {
		return p.alwaysLoads(e.Tool.Source)
	})
	ix := NewScopedIndex(entries, p.Project)
	c.mu.Lock()
	if c.index == nil || gen >= c.indexGen {
		c.index, c.indexGen, c.indexKey = ix, gen, key
	}
	c.mu.Unlock()
	return ix
}

// SearchSchema is tool_search's input schema.
func SearchSchema() json.RawMessage { return json.RawMessage(searchSchema()) }

// searchSchema is tool_search's input schema.
func searchSchema() string {
	return fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "maxLength": 1000, "description": "What the tool should do, in a few words (\"read a file\", \"create an issue\"), or a tool's name."},
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "description": "How many tools to return at most. Default %d."}
  },
  "required": ["query"],
  "additionalProperties": false
}`, MaxSearchLimit, DefaultSearchLimit)
}

// searchDescription is tool_search's description: what a model needs to
// know to use it.
const searchDescription = "Find tools by what they do and make them available. Not every tool is in your tool list yet: " +
	"describe the task in a few words, or give a tool's name, and the best matches are returned with their descriptions; " +
	"from then on they are in your tool list and can be called."

// SearchTool returns the built-in tool_search, to be registered with the
// built-ins: {query, limit?} ranks the tools c can defer (Search), loads
// the matches (Load) and names them with their descriptions and
// parameters. It is read-only: it changes what is advertised, not the
// world.
func (c *DefsCache) SearchTool() (registry.Tool, error) {
	schema := json.RawMessage(searchSchema())
	v, err := jsonschema.Compile(schema)
	if err != nil {
		return registry.Tool{}, fmt.Errorf("tool_search schema: %w", err)
	}
	return registry.Tool{
		ID:          SearchToolID,
		Source:      registry.SourceBuiltin,
		Title:       "Search tools",
		Description: searchDescription,
		InputSchema: schema,
		Annotations: json.RawMessage(`{"readOnlyHint":true,"openWorldHint":false}`),
		ReadOnly:    true,
		Validate:    v.ValidateContext,
		Call:        c.callSearch,
	}, nil
}

func (c *DefsCache) callSearch(ctx context.Context, args json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
	var a struct {
		Query string `json:"query"`
		Limit int    `json:"limit"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return wire.ErrorResult("tool_search: arguments: " + err.Error()), nil
	}
	if err := ctx.Err(); err != nil {
		return wire.CallResult{}, err
	}
	limit := a.Limit
	if limit <= 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	matches := c.Search(a.Query, limit)
	if len(matches) == 0 {
		return wire.TextResult(fmt.Sprintf("No tool matches %q. Try other words for the task, or a tool's name.", a.Query)), nil
	}
	// Only a deferred list has anything to load; a full one has them all.
	loaded := c.deferring()
	if loaded {
		ids := make([]string, len(matches))
		for i, m := range matches {
			ids[i] = m.ID
		}
		c.Load(ids)
	}
	return searchResult(a.Query, matches, loaded), nil
}

// searchResult is what tool_search answers: the matches in order, each
// with its description (cut at MaxMatchDescription) and parameter names,
// as text, and as structured content {"tools": [...]}; loaded says they
// were loaded.
func searchResult(query string, matches []Match, loaded bool) wire.CallResult {
	var b strings.Builder
	if loaded {
		fmt.Fprintf(&b, "%d tool(s) for %q, best first; they are now in your tool list:\n", len(matches), query)
	} else {
		fmt.Fprintf(&b, "%d tool(s) for %q, best first:\n", len(matches), query)
	}
	out := make([]Match, len(matches))
	for i, m := range matches {
		m.Description = cut(m.Description, MaxMatchDescription)
		out[i] = m
		// "<n>. <id>:" first, as the gateway finds ids in the text; where
		// the tool comes from before what its server says about it.
		fmt.Fprintf(&b, "%d. %s: [%s] %s", i+1, m.ID, matchSource(m), m.Description)
		if len(m.Params) > 0 {
			fmt.Fprintf(&b, " (parameters: %s)", strings.Join(m.Params, ", "))
		}
		b.WriteString("\n")
	}
	structured, _ := json.Marshal(struct {
		Tools []Match `json:"tools"`
	}{out}) // strings and numbers always encode
	return wire.CallResult{Content: []wire.Content{{Type: wire.ContentText, Text: strings.TrimSuffix(b.String(), "\n")}}, Structured: structured}
}

// matchSource says where a match's tool comes from: "server fs, user",
// "server repo-tools, project", "built-in".
func matchSource(m Match) string {
	if m.Scope == ScopeBuiltin {
		return "built-in"
	}
	return "server " + m.Server + ", " + m.Scope
}

// cut returns s shortened to at most n bytes at a rune boundary, with "…"
// when it was.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
