package mcp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A manifest made of a real session, stored and read back, gives the same
// tools and features the session has, in a private file; a corrupt, foreign
// or oversized file is no manifest.
func TestManifestStoreRoundTrip(t *testing.T) {
	s := connect(t, localServer("mf", "--tools", "3", "--rich"))
	const hash = "0123456789abcdef"
	dir := filepath.Join(t.TempDir(), "home", "cache", "manifests")
	store := OpenManifestStore(dir, testLogger(t))

	_, err := store.Get("mf", hash)
	require.ErrorIs(t, err, ErrNoManifest)

	m := ManifestOf(s, hash)
	require.NoError(t, store.Put(m))
	got, err := store.Get("mf", hash)
	require.NoError(t, err)
	require.True(t, got.Same(m))
	require.Equal(t, ManifestFormat, got.Format)

	tools, errs := ConvertTools("mf", got.Tools)
	require.Empty(t, errs)
	want := s.Tools()
	require.Len(t, tools, len(want))
	for i := range tools {
		require.Equal(t, want[i].ID, tools[i].ID)
		require.JSONEq(t, string(want[i].InputSchema), string(tools[i].InputSchema))
		require.Equal(t, string(want[i].Raw), string(tools[i].Raw))
	}
	sf, gf := s.Features(), got.Features()
	require.NotEmpty(t, sf.Resources)
	require.Equal(t, sf.Resources, gf.Resources)
	require.Equal(t, sf.Templates, gf.Templates)
	require.Equal(t, sf.Prompts, gf.Prompts)
	require.Equal(t, sf.Offers, gf.Offers)

	// Stored under a keyed name, the spec hash (which covers expanded
	// secrets) nowhere in the file or its name.
	path := storedPath(t, store, hash)
	require.NotContains(t, path, hash)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NotContains(t, string(b), hash)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	ki, err := os.Stat(filepath.Join(dir, ".key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), ki.Mode().Perm())
	// Another process of the home finds it: the key is the store's.
	again, err := OpenManifestStore(dir, testLogger(t)).Get("mf", hash)
	require.NoError(t, err)
	require.True(t, again.Same(m))
	di, err := os.Stat(dir)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), di.Mode().Perm())

	// Another server's name under the same hash is not its manifest.
	_, err = store.Get("other", hash)
	require.ErrorIs(t, err, ErrNoManifest)

	for name, content := range map[string]string{
		"corrupt":        "{not json",
		"another format": fmt.Sprintf(`{"format": 99, "server": "mf", "specHash": %q}`, hash),
		"too large":      `{"format": 1, "server": "mf", "specHash": "` + hash + `", "x": "` + string(make([]byte, MaxManifestBytes)) + `"}`,
	} {
		require.NoError(t, os.WriteFile(path, []byte(content), 0o600), name)
		_, err = store.Get("mf", hash)
		require.ErrorIs(t, err, ErrNoManifest, name)
	}

	store.Forget(hash)
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)

	// A nil store stores nothing and finds nothing.
	var none *ManifestStore
	require.NoError(t, none.Put(m))
	_, err = none.Get("mf", hash)
	require.ErrorIs(t, err, ErrNoManifest)
}

// The store keeps at most maxManifests files, dropping the oldest.
func TestManifestStoreBounded(t *testing.T) {
	dir := t.TempDir()
	store := OpenManifestStore(dir, testLogger(t))
	for i := range maxManifests + 3 {
		m := Manifest{Server: "s", SpecHash: fmt.Sprintf("%016x", i), Tools: []json.RawMessage{}}
		require.NoError(t, store.Put(m))
	}
	manifests, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	require.Len(t, manifests, maxManifests)
}

// storedPath is the file the manifest of hash is kept in.
func storedPath(t *testing.T, s *ManifestStore, hash string) string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	name, ok := s.fileKeyLocked(hash, false)
	require.True(t, ok, "no key yet")
	return filepath.Join(s.dir, name+".json")
}

// A temporary file a crash left in the store is removed when the store
// opens; a recent one (another process's write in progress) and the
// manifests are left alone.
func TestManifestStoreRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, ".0123456789abcdef.json.123456")
	recent := filepath.Join(dir, ".0123456789abcdef.json.654321")
	kept := filepath.Join(dir, "0123456789abcdef.json")
	other := filepath.Join(dir, ".notes")
	for _, p := range []string{old, recent, kept, other} {
		require.NoError(t, os.WriteFile(p, []byte("{}"), 0o600))
	}
	long := time.Now().Add(-2 * staleTempAge)
	require.NoError(t, os.Chtimes(old, long, long))
	require.NoError(t, os.Chtimes(kept, long, long))
	OpenManifestStore(dir, testLogger(t))
	require.NoFileExists(t, old)
	for _, p := range []string{recent, kept, other} {
		require.FileExists(t, p)
	}
}

// The manifest keeps who the server said it is.
func TestManifestKeepsServerInfo(t *testing.T) {
	s := connect(t, localServer("mi"))
	info := s.ServerInfo()
	require.NotEmpty(t, info.Name)
	m := ManifestOf(s, "0123456789abcdef")
	require.Equal(t, info, m.ServerInfo)
	store := OpenManifestStore(t.TempDir(), testLogger(t))
	require.NoError(t, store.Put(m))
	got, err := store.Get("mi", "0123456789abcdef")
	require.NoError(t, err)
	require.Equal(t, info, got.ServerInfo)
}

// A manifest learned in one working directory is not another's: a local
// server inherits the directory (and PATH), which may change what its
// command runs and lists.
func TestManifestStoreIsPerWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	m := Manifest{Server: "s", SpecHash: "0123456789abcdef", Tools: []json.RawMessage{}}
	require.NoError(t, OpenManifestStore(dir, testLogger(t)).Put(m))
	_, err := OpenManifestStore(dir, testLogger(t)).Get("s", m.SpecHash)
	require.NoError(t, err, "the same directory finds it")
	t.Chdir(t.TempDir())
	_, err = OpenManifestStore(dir, testLogger(t)).Get("s", m.SpecHash)
	require.ErrorIs(t, err, ErrNoManifest, "another directory does not")
}
