package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
)

// requestLog returns the methods a test server logged (--request-log), in
// order.
func requestLog(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	return strings.Fields(string(b))
}

func countOf(methods []string, method string) int {
	n := 0
	for _, m := range methods {
		if m == method {
			n++
		}
	}
	return n
}

// connectCached connects srv with cache and closes it at once.
func connectCached(t *testing.T, srv Spec, cache *ProtocolCache) string {
	t.Helper()
	s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t), Protocols: cache})
	require.NoError(t, err)
	v := s.Protocol()
	require.NoError(t, s.Close())
	requireGroupGone(t, s.PID())
	return v
}

// A 2026-07-28-only server is reached by default: one server/discover,
// which mcp-go does not send again, and no initialize. The revision is
// remembered in the file, so that another process (a new cache on the
// same file) sends no probe: its one server/discover is mcp-go's, which
// the 2026-07-28 revision uses in place of initialize.
func TestDefaultReachesModernOnlyWithOneProbe(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "requests")
	srv := localServer("modern-only", "--modern", "--modern-only", "--request-log", log)
	path := filepath.Join(dir, "home", "cache", "protocols.json")

	require.Equal(t, ModernProtocolVersion, connectCached(t, srv, OpenProtocolCache(path, testLogger(t))))
	got := requestLog(t, log)
	require.Equal(t, 1, countOf(got, "server/discover"), "one probe, not two: %v", got)
	require.Zero(t, countOf(got, "initialize"), got)

	require.Equal(t, ModernProtocolVersion, connectCached(t, srv, OpenProtocolCache(path, testLogger(t))))
	got = requestLog(t, log)
	require.Equal(t, 2, countOf(got, "server/discover"), "the second connect sends mcp-go's discover only: %v", got)

	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	di, err := os.Stat(filepath.Dir(path))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())
}

// A server of 2025-11-25 is probed the first time only; a changed
// definition (another environment) is asked again.
func TestDefaultProbesLegacyOnce(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "requests")
	srv := localServer("legacy", "--request-log", log)
	path := filepath.Join(dir, "protocols.json")
	for range 2 {
		require.Equal(t, ProtocolVersion, connectCached(t, srv, OpenProtocolCache(path, testLogger(t))))
	}
	got := requestLog(t, log)
	require.Equal(t, 1, countOf(got, "server/discover"), got)
	require.Equal(t, 2, countOf(got, "initialize"), got)

	srv.Env = map[string]string{"CHANGED": "1"}
	require.Equal(t, ProtocolVersion, connectCached(t, srv, OpenProtocolCache(path, testLogger(t))))
	require.Equal(t, 2, countOf(requestLog(t, log), "server/discover"), "a changed definition is asked again")
}

// A server that no longer speaks the remembered revision (upgraded to
// 2026-07-28 only) refuses it; Connect forgets it, asks the server again
// and connects, and the cache learns the new revision.
func TestRememberedRevisionRefusedIsAskedAgain(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "requests")
	srv := localServer("upgraded", "--modern", "--modern-only", "--request-log", log)
	path := filepath.Join(dir, "protocols.json")
	cache := OpenProtocolCache(path, testLogger(t))
	cache.store(protocolKey(srv), ProtocolVersion)

	require.Equal(t, ModernProtocolVersion, connectCached(t, srv, cache))
	got := requestLog(t, log)
	require.Equal(t, []string{"initialize", "server/discover"}, got[:2], "refused, then asked")
	require.Equal(t, ModernProtocolVersion, OpenProtocolCache(path, testLogger(t)).lookup(protocolKey(srv)))
}

// A corrupt file is ignored (with a log line) and rewritten by the next
// change; entries that are not the cache's are dropped.
func TestProtocolCacheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "protocols.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"servers": {"x`), 0o600))
	var logged []string
	c := OpenProtocolCache(path, testLoggerTo(&logged))
	require.Contains(t, strings.Join(logged, "\n"), "corrupt")
	key := protocolKey(localServer("a"))
	require.Empty(t, c.lookup(key))
	c.store(key, ModernProtocolVersion)
	require.Equal(t, ModernProtocolVersion, OpenProtocolCache(path, testLogger(t)).lookup(key))

	hostile := fmt.Sprintf(`{"servers": {"not-a-key": {"protocol": "2025-11-25"}, %q: {"protocol": "1999-01-01"}}}`, protocolKey(localServer("b")))
	require.NoError(t, os.WriteFile(path, []byte(hostile), 0o600))
	c = OpenProtocolCache(path, testLogger(t))
	require.Empty(t, c.m)

	c.forget(key) // not there: writes nothing
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, hostile, string(b))
}

// The cache holds maxProtocolEntries at most, in memory and in the file:
// the entries learned first are dropped.
func TestProtocolCacheBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "protocols.json")
	pf := protocolFile{Servers: map[string]protocolEntry{}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range maxProtocolEntries {
		pf.Servers[protocolKey(localServer(fmt.Sprint(i)))] = protocolEntry{Protocol: ProtocolVersion, Learned: start.Add(time.Duration(i) * time.Second)}
	}
	require.NoError(t, writeProtocolFile(path, pf))
	c := OpenProtocolCache(path, testLogger(t))
	require.Len(t, c.m, maxProtocolEntries)
	c.store(protocolKey(localServer("new")), ModernProtocolVersion)
	require.Len(t, c.m, maxProtocolEntries)
	require.Empty(t, c.lookup(protocolKey(localServer("0"))), "the oldest went")

	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var back protocolFile
	require.NoError(t, json.Unmarshal(b, &back))
	require.Len(t, back.Servers, maxProtocolEntries)
	c.mu.Lock()
	stored, ok := c.storedLocked(protocolKey(localServer("new")), false)
	c.mu.Unlock()
	require.True(t, ok)
	require.Equal(t, ModernProtocolVersion, back.Servers[stored].Protocol)
	_, raw := back.Servers[protocolKey(localServer("new"))]
	require.False(t, raw, "a key covers expanded secrets: it is not written as it is")
	ki, err := os.Stat(filepath.Join(filepath.Dir(path), ".protocols.json.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), ki.Mode().Perm())
}

// Ping checks something real on a 2026-07-28 session: it asks
// server/discover.
func TestPingModernAsksDiscover(t *testing.T) {
	log := filepath.Join(t.TempDir(), "requests")
	s := connect(t, localServer("modern", "--modern", "--request-log", log))
	require.Equal(t, ModernProtocolVersion, s.Protocol())
	before := countOf(requestLog(t, log), "server/discover")
	require.NoError(t, s.Ping(context.Background()))
	require.Equal(t, before+1, countOf(requestLog(t, log), "server/discover"))
	require.Zero(t, countOf(requestLog(t, log), "ping"))
}

// testLoggerTo appends every line logged, at any verbosity, to lines.
// Only the test's goroutine logs to it here (OpenProtocolCache).
func testLoggerTo(lines *[]string) logr.Logger {
	return funcr.New(func(prefix, args string) { *lines = append(*lines, prefix+args) }, funcr.Options{Verbosity: 1})
}

// A temporary file a write cut short left beside the protocol cache is
// removed when the cache opens; a recent one, the cache, its key and other
// files are left alone.
func TestProtocolCacheRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "protocols.json")
	old := filepath.Join(dir, ".protocols.json.123456")
	recent := filepath.Join(dir, ".protocols.json.654321")
	key := filepath.Join(dir, ".protocols.json.key")
	other := filepath.Join(dir, ".protocols.json.bak")
	for _, p := range []string{old, recent, path, key, other} {
		require.NoError(t, os.WriteFile(p, []byte("{}"), 0o600))
	}
	long := time.Now().Add(-2 * staleTempAge)
	for _, p := range []string{old, path, key, other} {
		require.NoError(t, os.Chtimes(p, long, long))
	}
	OpenProtocolCache(path, testLogger(t))
	require.NoFileExists(t, old)
	for _, p := range []string{recent, path, key, other} {
		require.FileExists(t, p)
	}
}
