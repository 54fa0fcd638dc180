package registry

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/freecode/freecode/jsonschema"
	"github.com/freecode/freecode/registry/event"
	"github.com/freecode/freecode/wire"
)

// ToolsChanged says that a source's tool set really changed: an id, title,
// description, schema, annotations, read-only flag or the source's own
// object (Tool.Raw: an icon, an output schema) differs from before.
// It carries only the source name; readers re-read the registry. Its JSON
// is the API's tools_changed event.
type ToolsChanged struct {
	Source string `json:"source"`
}

// Kind implements event.Event.
func (ToolsChanged) Kind() string { return wire.KindToolsChanged }

// Registry holds tools keyed by id and grouped by source, and each source's
// resources and prompts (Features). It is safe for concurrent use.
//
// Change detection compares ids, titles, descriptions, input schemas,
// annotations and the sources' objects (Tool.Raw; as canonical JSON: key
// order and spacing do not matter) and the ReadOnly flag — never the
// Validate or Call functions, so re-registering the same tools with fresh
// closures is not a change. A change of Raw alone changes no provider-facing
// definition, so the definitions' version (their hash) stays put.
type Registry struct {
	bus *event.Bus

	mu       sync.RWMutex // guards tools, bySource and gen
	tools    map[string]Entry
	bySource map[string][]string // sorted ids
	gen      uint64              // bumped on every real change

	fmu      sync.RWMutex        // guards features
	features map[string]features // resources and prompts by source (features.go)
}

// Entry is a registered tool with the canonical JSON of its input schema,
// as Snapshot returns it.
type Entry struct {
	Tool Tool
	// Schema is Tool.InputSchema as jsonschema.Canonical made it (nil when
	// the tool has none). It is shared: callers must not modify it.
	Schema []byte

	annotCanon []byte // Tool.Annotations, canonical
	// rawSum is the SHA-256 of Tool.Raw as canonical JSON (zero: none):
	// a digest, not the bytes, since Raw holds the whole object again.
	rawSum [sha256.Size]byte
}

// NewRegistry returns an empty registry that publishes ToolsChanged on bus
// (nil: no events).
func NewRegistry(bus *event.Bus) *Registry {
	return &Registry{
		bus:      bus,
		tools:    make(map[string]Entry),
		bySource: make(map[string][]string),
		features: make(map[string]features),
	}
}

// ReplaceSource makes tools the complete tool set of source, replacing what
// it had. It fails, changing nothing, when source is empty, a tool has no id
// or no Call, a tool's Source names another source, an id appears twice in
// tools, an id is already owned by another source, or a schema or
// annotations object is not valid JSON. changed reports whether the source's
// set differs from before (see Registry); only then is ToolsChanged
// published, after the lock is released. An empty tools list removes the
// source.
func (r *Registry) ReplaceSource(source string, tools []Tool) (changed bool, err error) {
	changed, err = r.ReplaceSourceQuiet(source, tools)
	if changed {
		r.AnnounceTools(source)
	}
	return changed, err
}

// ReplaceSourceQuiet is ReplaceSource without the event: a caller that
// keeps a read side of its own derived from the registry (the
// controller's snapshot) announces the change (AnnounceTools) itself when
// changed, once that read side has caught up, so that a reader woken by
// the event never reads the old set.
func (r *Registry) ReplaceSourceQuiet(source string, tools []Tool) (changed bool, err error) {
	if source == "" {
		return false, fmt.Errorf("replace tools: empty source name")
	}
	// Canonical forms are a pure function of the bytes: reuse those of the
	// source's current tools and of earlier tools in this call when the
	// bytes are equal, so re-registering an unchanged set (a re-list, a
	// restart) and tools sharing one schema cost no re-encoding.
	r.mu.RLock()
	prev := make(map[string]Entry, len(r.bySource[source]))
	for _, id := range r.bySource[source] {
		prev[id] = r.tools[id]
	}
	r.mu.RUnlock()
	memo := make(map[string][]byte)
	canon := func(raw json.RawMessage, old json.RawMessage, oldCanon []byte, had bool) ([]byte, error) {
		if had && bytes.Equal(raw, old) {
			return oldCanon, nil
		}
		if c, ok := memo[string(raw)]; ok {
			return c, nil
		}
		c, err := jsonschema.Canonical(raw)
		if err == nil {
			memo[string(raw)] = c
		}
		return c, err
	}
	next := make(map[string]Entry, len(tools))
	for _, t := range tools {
		if t.ID == "" {
			return false, fmt.Errorf("replace tools of %s: a tool has no id", source)
		}
		if t.Source != "" && t.Source != source {
			return false, fmt.Errorf("replace tools of %s: tool %q says its source is %q", source, t.ID, t.Source)
		}
		if t.Call == nil {
			return false, fmt.Errorf("replace tools of %s: tool %q has no Call function", source, t.ID)
		}
		if _, dup := next[t.ID]; dup {
			return false, fmt.Errorf("replace tools of %s: duplicate tool id %q", source, t.ID)
		}
		p, had := prev[t.ID]
		sc, err := canon(t.InputSchema, p.Tool.InputSchema, p.Schema, had)
		if err != nil {
			return false, fmt.Errorf("replace tools of %s: input schema of %q: %w", source, t.ID, err)
		}
		ac, err := canon(t.Annotations, p.Tool.Annotations, p.annotCanon, had)
		if err != nil {
			return false, fmt.Errorf("replace tools of %s: annotations of %q: %w", source, t.ID, err)
		}
		rs := p.rawSum
		if !had || !bytes.Equal(t.Raw, p.Tool.Raw) {
			if rs, err = rawSum(t.Raw); err != nil {
				return false, fmt.Errorf("replace tools of %s: the source's object of %q: %w", source, t.ID, err)
			}
		}
		t.Source = source
		next[t.ID] = Entry{Tool: t, Schema: sc, annotCanon: ac, rawSum: rs}
	}

	r.mu.Lock()
	for id := range next {
		if e, ok := r.tools[id]; ok && e.Tool.Source != source {
			r.mu.Unlock()
			return false, fmt.Errorf("replace tools of %s: tool id %q is already provided by %s", source, id, e.Tool.Source)
		}
	}
	changed = !r.sameLocked(source, next)
	for _, id := range r.bySource[source] {
		delete(r.tools, id)
	}
	delete(r.bySource, source)
	if len(next) > 0 {
		ids := make([]string, 0, len(next))
		for id, e := range next {
			r.tools[id] = e
			ids = append(ids, id)
		}
		sort.Strings(ids)
		r.bySource[source] = ids
	}
	if changed {
		r.gen++
	}
	r.mu.Unlock()
	return changed, nil
}

// sameLocked reports whether source's current set equals next. r.mu held.
func (r *Registry) sameLocked(source string, next map[string]Entry) bool {
	cur := r.bySource[source]
	if len(cur) != len(next) {
		return false
	}
	for _, id := range cur {
		n, ok := next[id]
		if !ok || !sameEntry(r.tools[id], n) {
			return false
		}
	}
	return true
}

func sameEntry(a, b Entry) bool {
	return a.Tool.ID == b.Tool.ID &&
		a.Tool.Title == b.Tool.Title &&
		a.Tool.Description == b.Tool.Description &&
		a.Tool.ReadOnly == b.Tool.ReadOnly &&
		bytes.Equal(a.Schema, b.Schema) &&
		bytes.Equal(a.annotCanon, b.annotCanon) &&
		a.rawSum == b.rawSum
}

// rawSum is the SHA-256 of raw as canonical JSON; zero for none.
func rawSum(raw json.RawMessage) ([sha256.Size]byte, error) {
	if len(raw) == 0 {
		return [sha256.Size]byte{}, nil
	}
	c, err := jsonschema.Canonical(raw)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(c), nil
}

// RemoveSource removes every tool of source and reports whether there were
// any; ToolsChanged is published only then.
func (r *Registry) RemoveSource(source string) (changed bool) {
	changed = r.RemoveSourceQuiet(source)
	if changed {
		r.AnnounceTools(source)
	}
	return changed
}

// AnnounceTools publishes ToolsChanged{Source: source}, the event of a
// change made with ReplaceSourceQuiet or RemoveSourceQuiet.
func (r *Registry) AnnounceTools(source string) {
	r.bus.Publish(ToolsChanged{Source: source})
}

// RemoveSourceQuiet is RemoveSource without the event, as
// ReplaceSourceQuiet.
func (r *Registry) RemoveSourceQuiet(source string) (changed bool) {
	r.mu.Lock()
	ids := r.bySource[source]
	for _, id := range ids {
		delete(r.tools, id)
	}
	delete(r.bySource, source)
	changed = len(ids) > 0
	if changed {
		r.gen++
	}
	r.mu.Unlock()
	return changed
}

// Get returns the tool with id.
func (r *Registry) Get(id string) (Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[id]
	return e.Tool, ok
}

// List returns every tool sorted by id.
func (r *Registry) List() []Tool {
	_, tools := r.snapshot()
	return tools
}

// SourceTools returns the tools of one source sorted by id.
func (r *Registry) SourceTools(source string) []Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	ids := r.bySource[source]
	out := make([]Tool, 0, len(ids))
	for _, id := range ids {
		out = append(out, r.tools[id].Tool)
	}
	return out
}

// Sources returns the names of sources that have at least one tool, sorted.
func (r *Registry) Sources() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.bySource))
	for s := range r.bySource {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// Generation returns a counter bumped on every real change of the tool set.
// Equal generations mean an identical tool set.
func (r *Registry) Generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// snapshot returns the generation and the sorted tools, consistently.
func (r *Registry) snapshot() (uint64, []Tool) {
	gen, entries := r.Snapshot()
	out := make([]Tool, len(entries))
	for i, e := range entries {
		out[i] = e.Tool
	}
	return gen, out
}

// Snapshot returns the generation and every entry sorted by tool id, read
// consistently under one lock: the entries are exactly the tool set of that
// generation. Entries are values whose byte slices are never modified.
func (r *Registry) Snapshot() (gen uint64, entries []Entry) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Entry, 0, len(r.tools))
	for _, e := range r.tools {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Tool.ID, b.Tool.ID) })
	return r.gen, out
}
