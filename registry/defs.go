package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
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
	// Tools is sorted by name. Callers must not modify it.
	Tools []Def
	// Problems lists tools left out because their schema could not be
	// converted (one line each); normally empty.
	Problems []string
}

// DefsCache builds the provider-facing tool list lazily and keeps it until
// the registry's tool set really changes.
//
// Invalidation uses the registry's generation counter, which is bumped under
// the registry lock exactly when ToolsChanged is published. Reading the
// counter on each Defs call (rather than subscribing to the Bus) means the
// cache can never miss an invalidation when a subscriber buffer overflows,
// needs no goroutine, and is never rebuilt for a re-registration that
// changed nothing — so the version, and the provider's prompt cache behind
// it, stays put.
type DefsCache struct {
	reg *Registry

	mu    sync.Mutex // guards gen and cache
	gen   uint64
	cache map[Dialect]Defs
}

// NewDefsCache returns a cache over r.
func NewDefsCache(r *Registry) *DefsCache {
	return &DefsCache{reg: r, cache: make(map[Dialect]Defs)}
}

// Defs returns the current tool list in dialect d (an unknown dialect is
// treated as DialectJSONSchema).
func (c *DefsCache) Defs(d Dialect) Defs {
	switch d {
	case DialectJSONSchema, DialectOpenAI, DialectGemini:
	default:
		d = DialectJSONSchema
	}
	gen := c.reg.Generation()
	c.mu.Lock()
	if gen == c.gen {
		if defs, ok := c.cache[d]; ok {
			c.mu.Unlock()
			return defs
		}
	}
	c.mu.Unlock()

	// Build outside the lock from a consistent snapshot.
	gen, tools := c.reg.snapshot()
	defs := buildDefs(d, tools)

	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		if gen < c.gen {
			// A newer build won the race; do not cache stale data.
			return defs
		}
		c.gen = gen
		clear(c.cache)
	}
	c.cache[d] = defs
	return defs
}

func buildDefs(d Dialect, tools []Tool) Defs {
	out := Defs{Tools: make([]Def, 0, len(tools))}
	for _, t := range tools {
		schema, err := ConvertSchema(d, t.InputSchema)
		if err != nil {
			out.Problems = append(out.Problems, t.ID+": "+err.Error())
			continue
		}
		desc := t.Description
		if desc == "" {
			desc = t.Title
		}
		out.Tools = append(out.Tools, Def{Name: t.ID, Description: desc, InputSchema: schema})
	}
	// The schemas are canonical already; encodeJSON keeps field order of the
	// struct, so the bytes are deterministic.
	b, err := encodeJSON(out.Tools)
	if err != nil {
		// Unreachable: every schema was produced by encodeJSON.
		b = []byte(err.Error())
	}
	sum := sha256.Sum256(b)
	out.Version = hex.EncodeToString(sum[:])
	return out
}
