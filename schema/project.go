package schema

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"

	"github.com/freecode/freecode/internal/termtext"
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

// Hold says why a configured server must not run.
type Hold struct {
	Kind   HoldKind
	Reason string
}

// HoldKind names a reason class for a Hold.
type HoldKind string

const (
	// HoldUntrusted: a project server whose definition the user has not
	// trusted (or has changed since).
	HoldUntrusted HoldKind = "untrusted"
	// HoldConflict: the name is defined by both the user and the project.
	HoldConflict HoldKind = "conflict"
)

// ProjectStatus describes the project part of a desired configuration.
type ProjectStatus struct {
	Path    string `json:"path"`
	Dir     string `json:"dir"`
	Hash    string `json:"hash"`
	Trusted bool   `json:"trusted"`
	// Reason explains why the project's servers do not run: never trusted,
	// changed since, invalid (then with its errors).
	Reason  string   `json:"reason,omitempty"`
	Servers []string `json:"servers"`
	// Err is why the project is ignored: it cannot be read or is invalid
	// (positioned Errors), or, trusted, its ${VAR}s do not resolve. nil
	// when none of that applies.
	Err error `json:"-"`
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
	if errors.Is(err, os.ErrNotExist) {
		return map[string]TrustRecord{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read trust store: %w", err)
	}
	var f trustFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("read trust store %s: %w", t.Path, err)
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

// LoadDesired reads the user config and, if given, the project settings and
// returns the desired state: user servers plus project servers.
//
//   - A project server runs only if the project's current definition hash is
//     the one the user trusted; otherwise it carries Hold{HoldUntrusted} with
//     the reason, and the project's "allow" rules are dropped (its "ask" and
//     "deny" rules only restrict, so they always apply).
//   - A project file that cannot be read or is invalid in any way changes
//     nothing: the user's servers and rules apply as if it were absent,
//     Project.Err holds its errors, and each server it names (that can be
//     named: a valid name of an entry, at most maxHeldNames of them) carries
//     Hold{HoldUntrusted} whose reason quotes them — whether or not it was
//     trusted, since a file that fails validation is read differently by
//     different JSON readers. None of its rules apply.
//   - A trusted project whose ${VAR}s do not resolve is held the same way,
//     with those errors; its "ask" and "deny" rules apply.
//   - A name defined in both files is not overridden: the entry (the user's)
//     carries Hold{HoldConflict} naming both files, and neither copy runs.
//   - pollInterval comes from the user config.
//
// The error is the user config's (positioned Errors), or one of the trust
// store: only the user's own files can make LoadDesired fail.
func (v *Validator) LoadDesired(src Sources, opts LoadOptions) (*Config, error) {
	userOpts := opts
	userOpts.Source = SourceUser
	cfg, err := v.Load(src.User, userOpts)
	if src.Project == "" || err != nil {
		return cfg, err
	}
	data, rerr := os.ReadFile(src.Project)
	if errors.Is(rerr, os.ErrNotExist) {
		return cfg, nil
	}
	ps := &ProjectStatus{Path: src.Project, Dir: ProjectDir(src.Project)}
	cfg.Project = ps
	source := SourceProjectPrefix + ps.Dir
	if rerr != nil {
		ignoreProject(cfg, nil, fmt.Errorf("read project settings: %w", rerr))
		return cfg, nil
	}
	// Nothing of an untrusted project is expanded: its ${VAR}s must neither
	// read the user's environment nor, unset, break the user's own servers.
	proj, perr := v.Parse(src.Project, data, LoadOptions{NoExpand: true, Source: source})
	if perr != nil {
		ignoreProject(cfg, data, perr)
		return cfg, nil
	}
	hash, err := DefinitionHash(data)
	if err != nil {
		ignoreProject(cfg, data, err)
		return cfg, nil
	}
	ps.Hash = hash
	for _, s := range proj.MCP.Servers {
		ps.Servers = append(ps.Servers, s.Name)
	}
	ps.Trusted, ps.Reason = true, ""
	if src.Trust != "" {
		recs, err := TrustStore{Path: src.Trust}.Load()
		if err != nil {
			return nil, err
		}
		switch rec, ok := recs[src.Project]; {
		case !ok:
			ps.Trusted, ps.Reason = false, fmt.Sprintf("project %s is not trusted; review it with `freecode mcp trust %s`", src.Project, ps.Dir)
		case rec.Hash != hash:
			ps.Trusted, ps.Reason = false, fmt.Sprintf("project %s changed since it was trusted on %s; review it again with `freecode mcp trust %s`", src.Project, rec.TrustedAt.Format(time.DateOnly), ps.Dir)
		}
	} else {
		ps.Trusted, ps.Reason = false, "no trust store"
	}
	held := !ps.Trusted
	if ps.Trusted && !opts.NoExpand {
		expanded, err := v.Parse(src.Project, data, LoadOptions{LookupEnv: opts.LookupEnv, Source: source})
		if err != nil {
			ps.Err = err
			ps.Reason = fmt.Sprintf("project %s is trusted but cannot run until this is fixed:\n%s", src.Project, err)
			held = true
		} else {
			proj = expanded
		}
	}

	userNames := map[string]int{}
	for i, s := range cfg.MCP.Servers {
		userNames[s.Name] = i
	}
	for _, s := range proj.MCP.Servers {
		i, clash := userNames[s.Name]
		switch {
		case held:
			// A held project changes nothing, not even by clashing: the
			// user's server of that name keeps running.
			reason := ps.Reason
			if clash {
				reason += fmt.Sprintf(" (its server %q also has the name of one in %s)", s.Name, src.User)
			}
			s.Hold = &Hold{Kind: HoldUntrusted, Reason: reason}
		case clash:
			cfg.MCP.Servers[i].Hold = &Hold{Kind: HoldConflict, Reason: fmt.Sprintf(
				"server %q is defined both in %s and in %s; rename or remove one (neither runs until then)", s.Name, src.User, src.Project)}
			continue
		}
		cfg.MCP.Servers = append(cfg.MCP.Servers, s)
	}
	cfg.Permission.Deny = append(cfg.Permission.Deny, proj.Permission.Deny...)
	cfg.Permission.Ask = append(cfg.Permission.Ask, proj.Permission.Ask...)
	if !held {
		cfg.Permission.Allow = append(cfg.Permission.Allow, proj.Permission.Allow...)
	}
	return cfg, nil
}

// maxHeldNames bounds how many servers of an invalid project are shown as
// held: enough for any real project, and a hostile file's million entries
// do not become a million desired servers.
const maxHeldNames = 100

// ignoreProject records in cfg that its project (whose contents are data,
// nil if unreadable) is ignored because of err: cfg.Project gets the error
// and every server the file names validly is added, held with it.
func ignoreProject(cfg *Config, data []byte, err error) {
	ps := cfg.Project
	ps.Trusted, ps.Err = false, err
	ps.Reason = fmt.Sprintf("project %s is invalid and ignored:\n%s", ps.Path, err)
	data, _ = stripBOM(data)
	root, perr := parseTree(data)
	if perr != nil {
		return
	}
	servers := root.member("mcp").member("servers")
	if servers == nil || servers.kind != '[' {
		return
	}
	var errs Errors
	errors.As(err, &errs)
	badName := map[string]bool{}
	for _, e := range errs {
		if len(e.Path) == 4 && e.Path[0] == "mcp" && e.Path[1] == "servers" && e.Path[3] == "name" {
			badName[e.Path[2]] = true
		}
	}
	for i, el := range servers.elems {
		if len(ps.Servers) == maxHeldNames {
			break
		}
		name := el.member("name")
		if name == nil || name.kind != '"' || badName[strconv.Itoa(i)] {
			continue
		}
		s := Server{Name: name.str, Enabled: true, Source: SourceProjectPrefix + ps.Dir,
			Hold: &Hold{Kind: HoldUntrusted, Reason: ps.Reason}}
		if t := el.member("type"); t != nil && (t.str == string(Local) || t.str == string(Remote)) {
			s.Type = ServerType(t.str)
		}
		if e := el.member("enabled"); e != nil && e.kind == 'f' {
			s.Enabled = false
		}
		ps.Servers = append(ps.Servers, s.Name)
		cfg.MCP.Servers = append(cfg.MCP.Servers, s)
	}
}

// Describe lists what a project settings file would run, for a user about to
// trust it: per server its command or url, its env and headers as written
// (unexpanded: a "${AWS_SECRET_ACCESS_KEY}" shows that the server would get
// that variable), and the project's permission rules. cfg must be parsed
// with NoExpand.
//
// Validation refuses control characters in these values; anything else a
// terminal would not show as it reads (a zero-width space, a no-break
// space, a left-to-right mark) is shown quoted with escapes
// (termtext.Quote), so what the user reads is what runs.
func Describe(cfg *Config) string {
	var b strings.Builder
	for _, s := range cfg.MCP.Servers {
		state := ""
		if !s.Enabled {
			state = " (disabled)"
		}
		fmt.Fprintf(&b, "  server %q%s\n", s.Name, state)
		if s.Type == Remote {
			fmt.Fprintf(&b, "    url:      %s (%s)\n", termtext.Quote(s.URL), s.Transport)
		} else {
			fmt.Fprintf(&b, "    command:  %s\n", strings.Join(quoteArgs(s.Command), " "))
		}
		// Values as the project wrote them: a ${VAR} in one shows which of
		// the user's variables the server would receive.
		for _, kv := range []struct {
			label string
			m     map[string]string
		}{{"env", s.Env}, {"header", s.Headers}} {
			for _, k := range slices.Sorted(maps.Keys(kv.m)) {
				fmt.Fprintf(&b, "    %-9s %s\n", kv.label+":", termtext.Quote(k+"="+kv.m[k]))
			}
		}
	}
	for _, r := range []struct {
		name  string
		rules []string
	}{{"allow", cfg.Permission.Allow}, {"ask", cfg.Permission.Ask}, {"deny", cfg.Permission.Deny}} {
		if len(r.rules) > 0 {
			rules := make([]string, len(r.rules))
			for i, rule := range r.rules {
				rules[i] = termtext.Quote(rule)
			}
			fmt.Fprintf(&b, "  permission.%s: %s\n", r.name, strings.Join(rules, ", "))
		}
	}
	return b.String()
}

// quoteArgs renders a command line for display: a word with characters a
// shell treats specially is single-quoted, one that is not printable as it
// is (termtext.Printable) is a double-quoted Go string literal with escapes
// ("a\u200bb"), so every word shows exactly what runs.
func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		switch {
		case !termtext.Printable(a):
			a = termtext.Quote(a)
		case a == "" || strings.ContainsAny(a, " \t\n'\"\\$`|&;<>()*?[]#~!{}"):
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return out
}
