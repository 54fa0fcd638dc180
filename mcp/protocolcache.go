package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// ProtocolCache remembers, per server definition (protocolKey: a hash of
// what starts or reaches the server, with its environment or headers),
// the revision the server spoke in its last successful connect, so that
// connecting it again sends no server/discover probe: the revision is a
// property of the server, which the 2026-07-28 revision says a client may
// keep across restarts of the same configuration. A changed definition is
// another key, and asked again. A connect that fails forgets the key, so
// that the next one asks again (a server upgraded to the other revision
// fails once, then is probed).
//
// A cache opened with OpenProtocolCache is also kept in a file, so that
// every FreeCode process of one home (serve, the gateway, each one-shot
// command) asks a server once, not once per process. The file is small
// and bounded (maxProtocolEntries; the oldest learned are dropped), 0600
// in a 0700 directory, replaced whole (a temporary file renamed into
// place) so that no reader sees it half written. Processes writing at
// once may lose each other's entry: that costs a probe, nothing else.
// A file that cannot be read or parsed is logged, taken as empty, and
// rewritten by the next change.
//
// The zero value is not usable: use NewProtocolCache or OpenProtocolCache.
// It is safe for concurrent use; a nil *ProtocolCache remembers nothing.
type ProtocolCache struct {
	path string      // the file; "" keeps it in memory only
	log  logr.Logger // says why the file was not read or written

	mu sync.Mutex // guards m, key and the file's writes
	// m is keyed by the stored names of keys (key.name): a protocolKey
	// covers expanded secrets, and is not written (see storeKey).
	m   map[string]protocolEntry
	key lazyStoreKey
}

// storedLocked is what key is kept under, false when nothing can be kept
// under it yet (no key file and create false). c.mu held.
func (c *ProtocolCache) storedLocked(key string, create bool) (string, bool) {
	name, ok, err := c.key.name(key, 64, create)
	if err != nil {
		c.log.Info("protocol cache key: what this process learns is not found by others", "err", err.Error())
	}
	return name, ok
}

// protocolEntry is what the cache knows of one server.
type protocolEntry struct {
	Protocol string    `json:"protocol"`
	Learned  time.Time `json:"learned"` // when it was stored; the oldest goes first
}

// protocolFile is the cache file's content.
type protocolFile struct {
	Servers map[string]protocolEntry `json:"servers"`
}

const (
	// maxProtocolEntries bounds the cache: far more servers than anyone
	// configures, and a file of some tens of KiB at most.
	maxProtocolEntries = 512
	// maxProtocolFileBytes bounds what is read of the file: a larger one
	// is not the cache's.
	maxProtocolFileBytes = 1 << 20
)

// protocolKeyPattern is the shape of a key (protocolKey): an entry with
// another is not the cache's and is dropped.
var protocolKeyPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// NewProtocolCache returns an empty cache kept in memory only.
func NewProtocolCache() *ProtocolCache {
	return &ProtocolCache{m: map[string]protocolEntry{}, log: logr.Discard()}
}

// OpenProtocolCache returns the cache kept in path (see ProtocolCache),
// loaded now; it does not create the file, which the first change does
// (with its directory, 0700). What goes wrong with the file is logged to
// log and costs nothing but probes.
func OpenProtocolCache(path string, log logr.Logger) *ProtocolCache {
	c := &ProtocolCache{path: path, log: log, m: map[string]protocolEntry{}}
	if path != "" {
		c.key.path = filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".key")
		// What a write cut short left: ".protocols.json.<digits>" (the
		// key file beside it is ".protocols.json.key").
		prefix := "." + filepath.Base(path) + "."
		removeStaleTemps(filepath.Dir(path), func(name string) bool {
			rest, ok := strings.CutPrefix(name, prefix)
			return ok && rest != "" && strings.Trim(rest, "0123456789") == ""
		}, time.Now(), log)
	}
	c.m = c.read()
	return c
}

// read returns the file's entries, valid ones only; an empty map when
// there is no file or it cannot be used (logged). It reads the file
// however the cache is locked: the caller holds mu, or nobody shares c yet.
func (c *ProtocolCache) read() map[string]protocolEntry {
	m := map[string]protocolEntry{}
	if c.path == "" {
		return m
	}
	f, err := os.Open(c.path)
	if errors.Is(err, fs.ErrNotExist) {
		return m
	}
	if err != nil {
		c.log.Info("protocol cache not read; servers are asked their revision again", "path", c.path, "err", err.Error())
		return m
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxProtocolFileBytes+1))
	if err == nil && len(b) > maxProtocolFileBytes {
		err = fmt.Errorf("larger than %d bytes", maxProtocolFileBytes)
	}
	var pf protocolFile
	if err == nil {
		err = json.Unmarshal(b, &pf)
	}
	if err != nil {
		c.log.Info("protocol cache is corrupt: ignored, and rewritten on the next change", "path", c.path, "err", err.Error())
		return m
	}
	for k, e := range pf.Servers {
		if protocolKeyPattern.MatchString(k) && validStoredRevision(e.Protocol) {
			m[k] = e
		}
	}
	evictOldest(m)
	return m
}

// validStoredRevision reports whether v is a revision a session can speak
// (one mcp-go knows), as the cache may hold.
func validStoredRevision(v string) bool {
	return v == ModernProtocolVersion || mcpgo.IsValidProtocolVersion(v)
}

// evictOldest drops the entries learned first until m is within
// maxProtocolEntries.
func evictOldest(m map[string]protocolEntry) {
	if len(m) <= maxProtocolEntries {
		return
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return m[a].Learned.Compare(m[b].Learned) })
	for _, k := range keys[:len(m)-maxProtocolEntries] {
		delete(m, k)
	}
}

// lookup returns the revision remembered for key, or "". A key not in
// memory is looked for in the file too: another process may have learned
// it since (a read of a small file, against the probe it spares).
func (c *ProtocolCache) lookup(key string) string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key, ok := c.storedLocked(key, false)
	if !ok {
		return ""
	}
	if e, ok := c.m[key]; ok {
		return e.Protocol
	}
	if c.path == "" {
		return ""
	}
	if e, ok := c.read()[key]; ok {
		c.m[key] = e
		return e.Protocol
	}
	return ""
}

// store remembers that key speaks version, and writes the file if that is
// news.
func (c *ProtocolCache) store(key, version string) {
	if c == nil || !validStoredRevision(version) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key, ok := c.storedLocked(key, true)
	if !ok {
		return
	}
	if e, ok := c.m[key]; ok && e.Protocol == version {
		return
	}
	e := protocolEntry{Protocol: version, Learned: time.Now().UTC()}
	c.m[key] = e
	evictOldest(c.m)
	c.update(func(m map[string]protocolEntry) { m[key] = e })
}

// forget drops what is remembered of key, in the file too.
func (c *ProtocolCache) forget(key string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key, ok := c.storedLocked(key, false)
	if !ok {
		return
	}
	if _, ok := c.m[key]; !ok {
		return
	}
	delete(c.m, key)
	c.update(func(m map[string]protocolEntry) { delete(m, key) })
}

// update applies change to the file's entries as they are now (other
// processes' included) and writes them back; c.mu is held. A failure is
// logged: the memory still has the change.
func (c *ProtocolCache) update(change func(map[string]protocolEntry)) {
	if c.path == "" {
		return
	}
	m := c.read()
	change(m)
	evictOldest(m)
	if err := writeProtocolFile(c.path, protocolFile{Servers: m}); err != nil {
		c.log.Info("protocol cache not written; servers may be asked their revision again", "err", err.Error())
	}
}

// writeProtocolFile replaces path with pf: a 0600 temporary file in its
// directory (made 0700) renamed into place.
func writeProtocolFile(path string, pf protocolFile) error {
	b, err := json.MarshalIndent(pf, "", "  ")
	if err != nil {
		return fmt.Errorf("encode protocol cache: %w", err)
	}
	return writePrivateFile(path, append(b, '\n'))
}
