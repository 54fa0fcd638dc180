// Package defs turns the registry's tools into the definitions a model
// provider is shown: one list per dialect (full JSON Schema, OpenAI
// function calling, Gemini function declarations; DIALECTS.md has the
// rules), with a content-hashed version, cached until the tool set really
// changes.
package defs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"

	"github.com/freecode/freecode/registry"
	"github.com/freecode/freecode/registry/event"
)

// Def is one provider-facing tool definition.
type Def struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// InputSchema is the tool's schema in the requested dialect; nil for a
	// Gemini declaration without parameters.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
}

// Defs is the provider-facing tool list for one dialect.
type Defs struct {
	// Version is the hex SHA-256 of the canonical JSON of Tools: equal tool
	// lists have equal versions, across processes and restarts.
	Version string
	// Tools is sorted by name — or, when Deferral is set, the always-loaded
	// tools and tool_search sorted by name, then the loaded tools in the
	// order they were loaded. Callers must not modify it.
	Tools []Def
	// Problems lists tools left out because their schema could not be
	// converted (one line each); normally empty.
	Problems []string
	// EstimatedTokens is EstimateTokens of the JSON encoding of Tools (the
	// bytes Version hashes).
	EstimatedTokens int
	// Deferral is set when every tool's definition would take more than
	// the policy's budget: Tools then holds only some of them (deferral.go).
	Deferral *Deferral
}

// DefsCache builds the provider-facing tool list lazily and keeps it until
// the registry's tool set really changes.
//
// Invalidation uses the registry's generation counter, which is bumped under
// the registry lock exactly when ToolsChanged is published. Reading the
// counter on each Defs call (rather than subscribing to the event bus) means the
// cache can never miss an invalidation when a subscriber buffer overflows,
// needs no goroutine, and is never rebuilt for a re-registration that
// changed nothing — so the version, and the provider's prompt cache behind
// it, stays put.
//
// A rebuild converts only the tools whose schema changed since the last
// build of that dialect: each dialect keeps the converted schema of every
// tool, keyed by tool id and compared on the canonical input schema. So a
// change of one server costs that server's tools, not every tool again.
//
// On top of each dialect's full list it applies the deferral policy
// (deferral.go): over the budget, only the always-loaded tools, tool_search
// and the tools tool_search loaded are advertised.
type DefsCache struct {
	reg  *registry.Registry
	opts Options

	// imu is held while the search index is built, so that concurrent
	// searchers build it once; taken before mu, never under it.
	imu sync.Mutex

	mu    sync.Mutex // guards every field below
	gen   uint64
	cache map[Dialect]full
	// conv holds, per dialect, the conversions of the last build of it.
	// Each inner map is replaced, never modified, once stored.
	conv map[Dialect]map[string]converted
	// views is the deferred list last built per dialect, with its key.
	views map[Dialect]view
	// policy is the deferral policy (SetPolicy); sticky holds the dialects
	// deferred since the loaded set was last cleared or the policy changed.
	policy Policy
	sticky map[Dialect]bool
	// loaded lists the tools tool_search loaded, in load order; loadedSet
	// holds the same ids; loadedGen counts changes of them.
	loaded    []string
	loadedSet map[string]bool
	loadedGen uint64
	// index is the search index over the tools of generation indexGen with
	// always-loaded set indexKey (nil until a search).
	index    *Index
	indexGen uint64
	indexKey string
}

// Options configure a DefsCache.
type Options struct {
	// Policy is the deferral policy to start with (SetPolicy changes it);
	// the zero Policy never defers.
	Policy Policy
	// Bus receives ToolsLoaded whenever tools are loaded or the loaded set
	// is cleared, and PolicyChanged; nil: no events.
	Bus *event.Bus
}

// full is one dialect's complete list: every registered tool but
// tool_search, whose definition is kept apart, with each tool's source.
type full struct {
	defs    Defs
	sources []string // sources[i] is the source of defs.Tools[i]
	search  *Def     // tool_search's definition, if registered
}

// converted is one tool's schema in one dialect: out (or err) for the
// canonical input schema canon.
type converted struct {
	canon []byte
	out   json.RawMessage
	err   error
}

// NewDefsCache returns a cache over r.
func NewDefsCache(r *registry.Registry, opts Options) *DefsCache {
	opts.Policy.AlwaysLoad, opts.Policy.Project = slices.Clone(opts.Policy.AlwaysLoad), slices.Clone(opts.Policy.Project)
	return &DefsCache{reg: r, opts: opts, cache: make(map[Dialect]full), conv: make(map[Dialect]map[string]converted),
		views: make(map[Dialect]view), loadedSet: make(map[string]bool), policy: opts.Policy, sticky: make(map[Dialect]bool)}
}

// Defs returns the current tool list in dialect d (an unknown dialect is
// treated as DialectJSONSchema), deferred when the policy says so.
func (c *DefsCache) Defs(d Dialect) Defs {
	switch d {
	case DialectJSONSchema, DialectOpenAI, DialectGemini:
	default:
		d = DialectJSONSchema
	}
	return c.deferred(d, c.full(d))
}

// full returns dialect d's complete list, built at most once per registry
// generation.
func (c *DefsCache) full(d Dialect) full {
	gen := c.reg.Generation()
	c.mu.Lock()
	if gen == c.gen {
		if f, ok := c.cache[d]; ok {
			c.mu.Unlock()
			return f
		}
	}
	prev := c.conv[d]
	c.mu.Unlock()

	// Build outside the lock from a consistent snapshot.
	gen, entries := c.reg.Snapshot()
	f, conv := buildDefs(d, entries, prev)

	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		if gen < c.gen {
			// A newer build won the race; do not cache stale data.
			return f
		}
		c.gen = gen
		clear(c.cache)
	}
	c.cache[d] = f
	c.conv[d] = conv
	return f
}

// buildDefs converts entries' schemas to dialect d, reusing prev's
// conversion of a tool whose canonical schema is unchanged. It returns the
// list and the conversions of this build.
func buildDefs(d Dialect, entries []registry.Entry, prev map[string]converted) (full, map[string]converted) {
	out := Defs{Tools: make([]Def, 0, len(entries))}
	var f full
	f.sources = make([]string, 0, len(entries))
	conv := make(map[string]converted, len(entries))
	for _, e := range entries {
		t := e.Tool
		cv, ok := prev[t.ID]
		if !ok || !bytes.Equal(cv.canon, e.Schema) {
			cv = converted{canon: e.Schema}
			if d == DialectJSONSchema && len(e.Schema) > 0 && string(e.Schema) != "null" {
				// ConvertSchema would decode and re-encode canonical JSON:
				// the same bytes.
				cv.out = e.Schema
			} else {
				cv.out, cv.err = ConvertSchema(d, e.Schema)
			}
		}
		conv[t.ID] = cv
		schema, err := cv.out, cv.err
		if err != nil {
			out.Problems = append(out.Problems, t.ID+": "+err.Error())
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		def := Def{Name: t.ID, Description: desc, InputSchema: schema}
		if t.ID == SearchToolID && t.Source == registry.SourceBuiltin {
			// Advertised only when tools are deferred.
			f.search = &def
			continue
		}
		out.Tools = append(out.Tools, def)
		f.sources = append(f.sources, t.Source)
	}
	out.Version, out.EstimatedTokens = defsVersion(out.Tools)
	f.defs = out
	return f, conv
}

// EstimateTokens is the estimated number of tokens n bytes of JSON take:
// n / 4, rounded up (the estimate tool outputs are capped by too).
func EstimateTokens(n int) int { return (n + 3) / 4 }

// defsVersion is the hex SHA-256 of jsonschema.Encode(tools), computed
// without re-encoding the schemas: they are compact canonical JSON already
// (made by jsonschema.Encode), which is what jsonschema.Encode would copy
// for them, so only the names and descriptions need encoding. tokens is
// EstimateTokens of the bytes hashed.
func defsVersion(tools []Def) (version string, tokens int) {
	h := sha256.New()
	n := 0
	write := func(b []byte) {
		h.Write(b)
		n += len(b)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	str := func(s string) {
		buf.Reset()
		_ = enc.Encode(s) // a string always encodes
		write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	write([]byte("["))
	for i, d := range tools {
		if i > 0 {
			write([]byte(","))
		}
		write([]byte(`{"name":`))
		str(d.Name)
		write([]byte(`,"description":`))
		str(d.Description)
		if len(d.InputSchema) > 0 {
			write([]byte(`,"input_schema":`))
			write(d.InputSchema)
		}
		write([]byte("}"))
	}
	write([]byte("]"))
	return hex.EncodeToString(h.Sum(nil)), EstimateTokens(n)
}
