package schema

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gofrs/flock"
)

// ProjectFile is where a repository keeps its FreeCode settings, relative to
// the directory that holds it.
const ProjectFile = ".freecode/settings.json"

// SourceProjectPrefix starts the Source of a server defined by a project:
// "project:<dir>".
const SourceProjectPrefix = "project:"

// FindProject looks for ProjectFile in start and its parents up to the
// repository root (the first directory holding .git). Outside a repository
// only start itself is considered, so a stray settings file higher up (in
// the home directory, say) is never picked up. It returns the file's
// absolute path, or ok false.
func FindProject(start string) (path string, ok bool) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", false
	}
	root := repoRoot(dir)
	for {
		p := filepath.Join(dir, ProjectFile)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, true
		}
		if root == "" || dir == root {
			return "", false
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// RepoRoot returns the repository root holding dir (the first directory
// from dir up that holds .git), or "" outside a repository.
func RepoRoot(dir string) string { return repoRoot(dir) }

func repoRoot(dir string) string {
	for {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// ProjectDir returns the directory a project settings file belongs to (the
// parent of its .freecode directory).
func ProjectDir(settingsPath string) string {
	return filepath.Dir(filepath.Dir(settingsPath))
}

// ProjectStatus describes the project part of a desired configuration.
type ProjectStatus struct {
	Path string
	Dir  string
	// Hash is the project's DefinitionHash ("" when it is invalid).
	Hash string
	// Trust says whether the project's servers run and, if not, why: never
	// trusted, changed since, invalid or trusted but its ${VAR}s do not
	// resolve (both with their errors in Trust.Err).
	Trust Trust
	// Servers names the servers the project defines (of an invalid file,
	// those it names validly).
	Servers []string
}

// DefinitionHash identifies what a project asks to run: its "mcp" and
// "permission" values, canonicalised (key order and whitespace do not
// matter), before ${VAR} expansion. Any change to a server's command, url,
// headers, env, timeout or to a rule changes it.
func DefinitionHash(data []byte) (string, error) {
	data, _ = stripBOM(data)
	root, err := parseTree(data)
	if err != nil {
		return "", fmt.Errorf("hash project definition: %w", err)
	}
	// Exactly the members the validator checked and Parse reads (see
	// lookalikeKeys): a lookalike "Mcp" cannot stand in for the real one.
	// Numbers keep their text (json.Number): decoded as float64, distinct
	// big integers would hash alike. For integers below 2^53 written without
	// an exponent — every valid file's — the text is what float64 printed,
	// so hashes of such files, and the trust records holding them, stay.
	canon := func(key string) (any, error) {
		var v any
		if n := root.member(key); n != nil {
			dec := json.NewDecoder(bytes.NewReader(data[n.start:n.end]))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return nil, err
			}
		}
		return v, nil
	}
	mcp, err := canon("mcp")
	if err != nil {
		return "", fmt.Errorf("hash project definition: %w", err)
	}
	perm, err := canon("permission")
	if err != nil {
		return "", fmt.Errorf("hash project definition: %w", err)
	}
	b, err := json.Marshal(map[string]any{"mcp": mcp, "permission": perm})
	if err != nil {
		return "", fmt.Errorf("hash project definition: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// TrustRecord is one trusted project definition.
type TrustRecord struct {
	Hash      string    `json:"hash"`
	TrustedAt time.Time `json:"trustedAt"`
	// What the user saw when trusting, for reference.
	Servers []string `json:"servers"`
}

// TrustStore keeps the user's trust decisions in a file of their home
// (never in the repository): {"projects": {"<settings path>": TrustRecord}}.
type TrustStore struct {
	Path string
}

// TrustPath returns the trust store file inside home.
func TrustPath(home string) string { return filepath.Join(home, "trust.json") }

type trustFile struct {
	Projects map[string]TrustRecord `json:"projects"`
}

// Load reads every record; a missing file holds none.
func (t TrustStore) Load() (map[string]TrustRecord, error) {
	data, err := os.ReadFile(t.Path)
	return trustRecords(t.Path, Content{Data: data, Err: err})
}

// trustRecords parses c, what reading the trust store at path found; a
// missing file holds no records.
func trustRecords(path string, c Content) (map[string]TrustRecord, error) {
	switch {
	case c.Missing():
		return map[string]TrustRecord{}, nil
	case c.Err != nil:
		return nil, fmt.Errorf("read trust store: %w", c.Err)
	}
	var f trustFile
	if err := json.Unmarshal(c.Data, &f); err != nil {
		return nil, fmt.Errorf("read trust store %s: %w", path, err)
	}
	if f.Projects == nil {
		f.Projects = map[string]TrustRecord{}
	}
	return f.Projects, nil
}

// Trust records hash as the trusted definition of the project settings file.
func (t TrustStore) Trust(ctx context.Context, settingsPath string, rec TrustRecord) error {
	return t.update(ctx, func(m map[string]TrustRecord) bool {
		m[settingsPath] = rec
		return true
	})
}

// Untrust forgets the project settings file; it reports whether a record
// existed.
func (t TrustStore) Untrust(ctx context.Context, settingsPath string) (bool, error) {
	found := false
	err := t.update(ctx, func(m map[string]TrustRecord) bool {
		_, found = m[settingsPath]
		delete(m, settingsPath)
		return found
	})
	return found, err
}

func (t TrustStore) update(ctx context.Context, fn func(map[string]TrustRecord) bool) error {
	if err := os.MkdirAll(filepath.Dir(t.Path), 0o700); err != nil {
		return fileError(t.Path, "create home", err)
	}
	lock := flock.New(t.Path + ".lock")
	lctx, cancel := context.WithTimeout(ctx, LockTimeout)
	defer cancel()
	ok, err := lock.TryLockContext(lctx, 10*time.Millisecond)
	switch {
	case ok:
	case err != nil && lctx.Err() == nil:
		return fileError(t.Path, "lock "+t.Path, err)
	default:
		return fmt.Errorf("lock %s: another process holds it: %w", t.Path, errors.Join(err, lctx.Err()))
	}
	defer func() { _ = lock.Unlock() }()
	m, err := t.Load()
	if err != nil {
		return err
	}
	if !fn(m) {
		return nil
	}
	data, err := json.MarshalIndent(trustFile{Projects: m}, "", "  ")
	if err != nil {
		return fmt.Errorf("write trust store: %w", err)
	}
	return writeAtomic(t.Path, append(data, '\n'), 0o600, nil)
}

// Sources are the files that make up the desired configuration.
type Sources struct {
	// User is the user config file ($FREECODE_HOME/config.json).
	User string
	// Project is a project settings file, or "" for none.
	Project string
	// Trust is the user's trust store ($FREECODE_HOME/trust.json).
	Trust string
}

// Files lists every file whose change can change the desired state.
func (s Sources) Files() []string {
	out := []string{s.User}
	if s.Project != "" {
		out = append(out, s.Project)
	}
	if s.Trust != "" {
		out = append(out, s.Trust)
	}
	return out
}
