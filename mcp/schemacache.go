package mcp

import (
	"crypto/sha256"
	"encoding/json"
	"sync"
)

// SchemaCache remembers prepared input schemas (resolved schema, warnings and
// compiled validator, or the error) by their exact bytes, across tool lists
// and sessions: a server restarted or re-listed with unchanged tools costs
// no resolving or compiling. Safe for concurrent use; a nil *SchemaCache
// caches nothing.
//
// It holds at most about size entries: two generations, the current one and
// the one before; an entry used again moves to the current generation, and
// when the current one is full the older one is dropped.
type SchemaCache struct {
	mu   sync.Mutex // guards cur and prev
	half int
	cur  map[[32]byte]prepared
	prev map[[32]byte]prepared
}

// NewSchemaCache returns a cache of about size entries (at least 2).
func NewSchemaCache(size int) *SchemaCache {
	half := max(size/2, 1)
	return &SchemaCache{half: half, cur: make(map[[32]byte]prepared)}
}

func (c *SchemaCache) get(schema json.RawMessage) (prepared, bool) {
	if c == nil {
		return prepared{}, false
	}
	k := sha256.Sum256(schema)
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.cur[k]; ok {
		return p, true
	}
	p, ok := c.prev[k]
	if ok {
		delete(c.prev, k)
		c.putLocked(k, p)
	}
	return p, ok
}

func (c *SchemaCache) put(schema json.RawMessage, p prepared) {
	if c == nil {
		return
	}
	k := sha256.Sum256(schema)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(k, p)
}

// putLocked adds an entry; c.mu must be held.
func (c *SchemaCache) putLocked(k [32]byte, p prepared) {
	if len(c.cur) >= c.half {
		c.prev, c.cur = c.cur, make(map[[32]byte]prepared, c.half)
	}
	c.cur[k] = p
}

// Len reports how many entries the cache holds.
func (c *SchemaCache) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.prev)
}
