package mcp

import (
	"bytes"
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

	"github.com/freecode/freecode/wire"
)

// Manifest is what a server advertised in its last successful connect (or
// its last re-list): enough to advertise it again without running it. The
// lists are the server's own objects, as it sent them: tools are converted
// again from them (ConvertTools), resources, templates and prompts decoded
// again (Features), so that a manifest and a session of the same server
// produce the same registry entries, byte for byte, and registering one
// after the other changes nothing.
//
// Everything in a manifest came from a server: it is read back bounded
// (ManifestStore) and checked as a session checks a list.
type Manifest struct {
	// Format is ManifestFormat when it was written; another is ignored.
	Format int `json:"format"`
	// Server is the server's name, SpecHash its schema.Server.SpecHash:
	// the key it is stored under.
	Server   string `json:"server"`
	SpecHash string `json:"specHash"`
	// Stored is when it was written (UTC).
	Stored time.Time `json:"stored"`
	// Protocol is the revision the session spoke.
	Protocol     string            `json:"protocol,omitempty"`
	ServerInfo   ServerInfo        `json:"serverInfo,omitzero"`
	Instructions string            `json:"instructions,omitempty"`
	Offers       Offers            `json:"offers"`
	Tools        []json.RawMessage `json:"tools"`
	Resources    []json.RawMessage `json:"resources,omitempty"`
	Templates    []json.RawMessage `json:"templates,omitempty"`
	Prompts      []json.RawMessage `json:"prompts,omitempty"`
}

// ManifestFormat is the format of the manifests this FreeCode writes; a
// FreeCode that changes what a manifest means bumps it, and older files
// are then ignored (relearned by one start).
const ManifestFormat = 1

const (
	// maxManifests bounds the store's files (one per spec hash; the
	// oldest go first): far more servers than anyone configures.
	maxManifests = 256
	// MaxManifestBytes bounds one manifest: a larger one (a server with
	// thousands of tools) is neither written nor read, and the server is
	// then started to be listed, as without a manifest.
	MaxManifestBytes = 4 << 20
)

// ErrNoManifest: no usable manifest is stored for that spec hash.
var ErrNoManifest = errors.New("no stored manifest")

// manifestKeyPattern is the shape of a spec hash (schema.Server.SpecHash),
// the name of a manifest's file.
var manifestKeyPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

// Lister is what a manifest is made of; *Session is one.
type Lister interface {
	Name() string
	Protocol() string
	Instructions() Instructions
	ServerInfo() ServerInfo
	Features() Features
	RawTools() []json.RawMessage
}

// ManifestOf returns the manifest of s as it lists now, for the server of
// spec hash hash.
func ManifestOf(s Lister, hash string) Manifest {
	f := s.Features()
	m := Manifest{Format: ManifestFormat, Server: s.Name(), SpecHash: hash, Stored: time.Now().UTC(),
		Protocol: s.Protocol(), ServerInfo: s.ServerInfo(), Instructions: s.Instructions().Text, Offers: f.Offers, Tools: s.RawTools()}
	for _, r := range f.Resources {
		m.Resources = append(m.Resources, r.Raw)
	}
	for _, t := range f.Templates {
		m.Templates = append(m.Templates, t.Raw)
	}
	for _, p := range f.Prompts {
		m.Prompts = append(m.Prompts, p.Raw)
	}
	return m
}

// Same reports whether m and o advertise the same (Stored aside).
func (m Manifest) Same(o Manifest) bool {
	m.Stored, o.Stored = time.Time{}, time.Time{}
	a, errA := json.Marshal(m)
	b, errB := json.Marshal(o)
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// Features decodes m's resources, templates and prompts as a session
// does: what does not decode, has no key or repeats one is left out
// (Problems says so).
func (m Manifest) Features() Features {
	f := Features{Offers: m.Offers}
	if m.Resources != nil {
		f.Resources = decodeList(m.Resources, "resource", "uri", decodeResource, func(r wire.Resource) string { return r.URI }, &f.Problems)
	}
	if m.Templates != nil {
		f.Templates = decodeList(m.Templates, "resource template", "uriTemplate", decodeTemplate,
			func(t wire.ResourceTemplate) string { return t.URITemplate }, &f.Problems)
	}
	if m.Prompts != nil {
		f.Prompts = decodeList(m.Prompts, "prompt", "name", decodePrompt, func(p wire.Prompt) string { return p.Name }, &f.Problems)
	}
	return f
}

// ManifestStore keeps one Manifest per server spec hash in a directory
// ($FREECODE_HOME/cache/manifests), one file each named by the hash: a
// server's manifest is replaced without rewriting the others'. Files are
// 0600 in a 0700 directory, written whole (a temporary file renamed into
// place), so no reader sees one half written; at most maxManifests are
// kept (the oldest by modification time go) and one is at most
// MaxManifestBytes. A file that cannot be read or parsed is logged and
// taken as absent (the server is started to learn it again).
//
// It is safe for concurrent use; processes sharing the directory may
// replace each other's files, which costs at most one start. A nil
// *ManifestStore stores nothing.
type ManifestStore struct {
	dir string
	log logr.Logger
	mu  sync.Mutex // orders this process's writes and evictions; guards key
	// key names the files (storeKey: a spec hash covers expanded secrets);
	// loaded from dir/.key on first use, nil until then.
	key *storeKey
	// where is this process's working directory and PATH, which a local
	// server inherits and a spec does not say: a command resolved in one
	// project (its node_modules/.bin, its venv) may list other tools than
	// in another, so each is a manifest of its own.
	where string
}

// fileKey is what the manifest of spec hash hash is stored under (its
// file name and its stored SpecHash), and false when no key exists yet
// and create is false: then nothing is stored either. s.mu held.
func (s *ManifestStore) fileKeyLocked(hash string, create bool) (string, bool) {
	if s.key == nil {
		path := filepath.Join(s.dir, ".key")
		if _, err := os.Stat(path); err != nil && !create {
			return "", false
		}
		k, err := loadStoreKey(path)
		if err != nil {
			s.log.Info("manifest store key: manifests of this process are not found by others", "err", err.Error())
		}
		s.key = &k
	}
	return s.key.name(hash+"\x00"+s.where, 16), true
}

// OpenManifestStore returns the store kept in dir; nothing is created
// until the first Put. Temporary files of writes that a crash left
// behind (".<hash>.json.*" older than staleTempAge: a write takes
// milliseconds, so none of another process's writes in progress) are
// removed.
func OpenManifestStore(dir string, log logr.Logger) *ManifestStore {
	wd, _ := os.Getwd()
	s := &ManifestStore{dir: dir, log: log, where: wd + "\x00" + os.Getenv("PATH")}
	s.removeStaleTemps(time.Now())
	return s
}

// staleTempAge is how old a temporary file of a write must be to be taken
// as left by a crash.
const staleTempAge = time.Minute

// tempPattern is the name of a temporary file of writePrivateFile's for a
// manifest.
var tempPattern = regexp.MustCompile(`^\.[0-9a-f]{16}\.json\..+$`)

// removeStaleTemps removes the temporary files of s's directory modified
// before now - staleTempAge.
func (s *ManifestStore) removeStaleTemps(now time.Time) {
	removeStaleTemps(s.dir, tempPattern.MatchString, now, s.log)
}

// removeStaleTemps removes the regular files of dir whose names match
// (temporary files of writePrivateFile's) and that were modified before
// now - staleTempAge: what a write cut short by a kill left. A write in
// progress is younger.
func removeStaleTemps(dir string, match func(name string) bool, now time.Time, log logr.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return // none yet, or unreadable: reads and writes say so
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !match(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < staleTempAge {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Info("stale temporary file not removed", "file", filepath.Join(dir, e.Name()), "err", err.Error())
		}
	}
}

// Get returns the manifest stored for hash, of server name, or an error
// wrapping ErrNoManifest (a file that is corrupt, too large, of another
// format or of another server is logged and so reported).
func (s *ManifestStore) Get(name, hash string) (Manifest, error) {
	if s == nil || !manifestKeyPattern.MatchString(hash) {
		return Manifest{}, ErrNoManifest
	}
	s.mu.Lock()
	stored, ok := s.fileKeyLocked(hash, false)
	s.mu.Unlock()
	if !ok {
		return Manifest{}, ErrNoManifest
	}
	path := filepath.Join(s.dir, stored+".json")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, ErrNoManifest
	}
	if err != nil {
		s.log.Info("manifest not read; the server is started to be listed", "path", path, "err", err.Error())
		return Manifest{}, fmt.Errorf("%w: %w", ErrNoManifest, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err == nil && len(b) > MaxManifestBytes {
		err = fmt.Errorf("larger than %d bytes", MaxManifestBytes)
	}
	var m Manifest
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err == nil {
		switch {
		case m.Format != ManifestFormat:
			err = fmt.Errorf("format %d, not %d", m.Format, ManifestFormat)
		case m.Server != name || m.SpecHash != stored:
			err = fmt.Errorf("it is of server %q, not %q, or of another spec", m.Server, name)
		}
	}
	if err != nil {
		s.log.Info("manifest is unusable: ignored, and replaced by the server's next listing", "path", path, "err", err.Error())
		return Manifest{}, fmt.Errorf("%w: %s: %w", ErrNoManifest, path, err)
	}
	m.SpecHash = hash
	return m, nil
}

// Has reports whether a usable manifest of server name is stored for
// hash (Get would return one).
func (s *ManifestStore) Has(name, hash string) bool {
	_, err := s.Get(name, hash)
	return err == nil
}

// Put stores m under m.SpecHash, replacing what was there, and drops the
// oldest manifests beyond maxManifests. A manifest over MaxManifestBytes
// is not stored (and the one it would replace is removed).
func (s *ManifestStore) Put(m Manifest) error {
	if s == nil {
		return nil
	}
	if !manifestKeyPattern.MatchString(m.SpecHash) {
		return fmt.Errorf("store manifest of %q: %q is not a spec hash", m.Server, m.SpecHash)
	}
	m.Format = ManifestFormat
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, _ := s.fileKeyLocked(m.SpecHash, true)
	m.SpecHash = stored
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode manifest of %q: %w", m.Server, err)
	}
	path := filepath.Join(s.dir, stored+".json")
	if len(b) > MaxManifestBytes {
		_ = os.Remove(path)
		return fmt.Errorf("manifest of %q is %d bytes, over %d: not stored", m.Server, len(b), MaxManifestBytes)
	}
	if err := writePrivateFile(path, b); err != nil {
		return fmt.Errorf("store manifest of %q: %w", m.Server, err)
	}
	s.evictLocked()
	return nil
}

// Forget removes the manifest stored for hash, if any.
func (s *ManifestStore) Forget(hash string) {
	if s == nil || !manifestKeyPattern.MatchString(hash) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.fileKeyLocked(hash, false)
	if !ok {
		return
	}
	if err := os.Remove(filepath.Join(s.dir, stored+".json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Info("manifest not removed", "hash", hash, "err", err.Error())
	}
}

// evictLocked removes the oldest manifests beyond maxManifests; s.mu held.
func (s *ManifestStore) evictLocked() {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return
	}
	type file struct {
		name string
		mod  time.Time
	}
	var files []file
	for _, e := range entries {
		n := e.Name()
		if !e.Type().IsRegular() || !strings.HasSuffix(n, ".json") || !manifestKeyPattern.MatchString(strings.TrimSuffix(n, ".json")) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		files = append(files, file{n, info.ModTime()})
	}
	if len(files) <= maxManifests {
		return
	}
	slices.SortFunc(files, func(a, b file) int { return a.mod.Compare(b.mod) })
	for _, f := range files[:len(files)-maxManifests] {
		_ = os.Remove(filepath.Join(s.dir, f.name))
	}
}

// writePrivateFile replaces path with b: a 0600 temporary file in its
// directory (made 0700) synced and renamed into place.
func writePrivateFile(path string, b []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("make %s private: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing there
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
