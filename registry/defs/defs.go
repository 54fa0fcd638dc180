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
	"sync"

	"github.com/freecode/freecode/registry"
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
type DefsCache struct {
	reg *registry.Registry

	mu    sync.Mutex // guards gen, cache and conv
	gen   uint64
	cache map[Dialect]Defs
	// conv holds, per dialect, the conversions of the last build of it.
	// Each inner map is replaced, never modified, once stored.
	conv map[Dialect]map[string]converted
}

// converted is one tool's schema in one dialect: out (or err) for the
// canonical input schema canon.
type converted struct {
	canon []byte
	out   json.RawMessage
	err   error
}

// NewDefsCache returns a cache over r.
func NewDefsCache(r *registry.Registry) *DefsCache {
	return &DefsCache{reg: r, cache: make(map[Dialect]Defs), conv: make(map[Dialect]map[string]converted)}
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
	prev := c.conv[d]
	c.mu.Unlock()

	// Build outside the lock from a consistent snapshot.
	gen, entries := c.reg.Snapshot()
	defs, conv := buildDefs(d, entries, prev)

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
	c.conv[d] = conv
	return defs
}

// buildDefs converts entries' schemas to dialect d, reusing prev's
// conversion of a tool whose canonical schema is unchanged. It returns the
// defs and the conversions of this build.
func buildDefs(d Dialect, entries []registry.Entry, prev map[string]converted) (Defs, map[string]converted) {
	out := Defs{Tools: make([]Def, 0, len(entries))}
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
		out.Tools = append(out.Tools, Def{Name: t.ID, Description: desc, InputSchema: schema})
	}
	out.Version = defsVersion(out.Tools)
	return out, conv
}

// defsVersion is the hex SHA-256 of jsonschema.Encode(tools), computed
// without re-encoding the schemas: they are compact canonical JSON already
// (made by jsonschema.Encode), which is what jsonschema.Encode would copy
// for them, so only the names and descriptions need encoding.
func defsVersion(tools []Def) string {
	h := sha256.New()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	str := func(s string) {
		buf.Reset()
		_ = enc.Encode(s) // a string always encodes
		h.Write(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	}
	h.Write([]byte("["))
	for i, d := range tools {
		if i > 0 {
			h.Write([]byte(","))
		}
		h.Write([]byte(`{"name":`))
		str(d.Name)
		h.Write([]byte(`,"description":`))
		str(d.Description)
		if len(d.InputSchema) > 0 {
			h.Write([]byte(`,"input_schema":`))
			h.Write(d.InputSchema)
		}
		h.Write([]byte("}"))
	}
	h.Write([]byte("]"))
	return hex.EncodeToString(h.Sum(nil))
}
