package schema

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
)

// Content is what reading one source file found: its bytes, or the error
// reading it returned (wrapping fs.ErrNotExist when it does not exist).
type Content struct {
	Data []byte
	Err  error
}

// Missing reports whether the file does not exist.
func (c Content) Missing() bool { return errors.Is(c.Err, fs.ErrNotExist) }

// Contents are the files of a Sources as read, keyed by the path Sources
// names them by. A file without an entry does not exist.
type Contents map[string]Content

// of returns the content of path.
func (c Contents) of(path string) Content {
	if got, ok := c[path]; ok {
		return got
	}
	return Content{Err: &fs.PathError{Op: "read", Path: path, Err: fs.ErrNotExist}}
}

// ReadSources reads every file of src once with read (nil means
// os.ReadFile). It is the only I/O of LoadDesired.
func ReadSources(src Sources, read func(string) ([]byte, error)) Contents {
	if read == nil {
		read = os.ReadFile
	}
	c := Contents{}
	for _, f := range src.Files() {
		if _, done := c[f]; !done {
			data, err := read(f)
			c[f] = Content{Data: data, Err: err}
		}
	}
	return c
}

// LoadDesired reads the files of src and returns the desired state they
// make (Desired).
func (v *Validator) LoadDesired(src Sources, opts LoadOptions) (*Config, error) {
	return v.Desired(src, ReadSources(src, nil), opts)
}

// Desired returns the desired state made by contents, the files of src as
// read (ReadSources): the user's servers plus the project's, if src names
// one and it exists. It reads nothing itself: the trust decision is
// DecideTrust's, the merge is pure.
//
//   - A project server runs only if the project's current definition hash is
//     the one the user trusted; otherwise it carries Hold{HoldUntrusted} with
//     the decision, and the project's "allow" rules are dropped (its "ask"
//     and "deny" rules only restrict, so they always apply).
//   - A project file that cannot be read or is invalid in any way changes
//     nothing: the user's servers and rules apply as if it were absent,
//     Project.Trust holds its errors (ProjectInvalid), and each server it
//     names (that can be named: a valid name of an entry, at most
//     maxHeldNames of them) carries Hold{HoldUntrusted} — whether or not
//     it was trusted, since a file that fails validation is read
//     differently by different JSON readers. None of its rules apply.
//   - A trusted project whose ${VAR}s do not resolve is held the same way,
//     with those errors (TrustedUnresolved); its "ask" and "deny" rules
//     apply.
//   - A name defined in both files is not overridden: the entry (the user's)
//     carries Hold{HoldConflict} naming both files, and neither copy runs.
//   - pollInterval, toolBudget, maxArgumentBytes and the callTimeout and
//     maxOutputTokens of servers that set none of their own come from the
//     user config: the project's servers are resolved (MCP.Resolve)
//     against it, here and only here.
//   - A server of the user config whose entry has errors of its own is held
//     with them (HoldInvalid, see Parse); the user's other servers are as
//     they would be without it.
//
// The error is the user config's (positioned Errors of a file-level
// problem, every error of the file with them, or it cannot be read),
// or one of the trust store: only the user's own files can make Desired
// fail.
func (v *Validator) Desired(src Sources, contents Contents, opts LoadOptions) (*Config, error) {
	userOpts := opts
	userOpts.Source, userOpts.HoldInvalid = SourceUser, true
	user, err := v.parseContent(src.User, contents.of(src.User), userOpts)
	if src.Project == "" || err != nil {
		return user, err
	}
	pc := contents.of(src.Project)
	if pc.Missing() {
		return user, nil
	}
	p, invalid := v.readProject(src.Project, pc)
	in := TrustInput{Project: src.Project, Invalid: invalid, Hash: p.hash, NoStore: src.Trust == ""}
	if invalid == nil && !in.NoStore {
		// Only a valid project's definition is looked up.
		if in.Records, err = trustRecords(src.Trust, contents.of(src.Trust)); err != nil {
			return nil, err
		}
	}
	t := DecideTrust(in)
	if t.State == Trusted && !opts.NoExpand {
		expanded, err := v.parse(src.Project, pc.Data, LoadOptions{LookupEnv: opts.LookupEnv, Source: projectSource(src.Project)})
		if err != nil {
			t.State, t.Err = TrustedUnresolved, err
		} else {
			p.cfg = expanded
		}
	}
	return merge(user, p, t), nil
}

// parseContent parses c, what reading the config file at path found; a
// missing file is an empty config (nothing configured yet).
func (v *Validator) parseContent(path string, c Content, opts LoadOptions) (*Config, error) {
	switch {
	case c.Missing():
		return Empty(path), nil
	case c.Err != nil:
		return nil, fmt.Errorf("read config: %w", c.Err)
	}
	return v.Parse(path, c.Data, opts)
}

// Empty is the config of a file at path that does not exist: nothing
// configured, every default.
func Empty(path string) *Config {
	cfg := newConfig(path)
	cfg.MCP.resolve()
	return cfg
}

// projectSource is the Server.Source of the servers of the project
// settings file at path.
func projectSource(path string) string { return SourceProjectPrefix + ProjectDir(path) }

// project is a project settings file as merge takes it.
type project struct {
	path string
	hash string // DefinitionHash; "" when the file is invalid
	// cfg holds its servers and rules, unexpanded, or expanded once
	// trusted; of an invalid file only the servers it names validly, with
	// no rules (namedServers). Its servers are not resolved yet.
	cfg *Config
}

// readProject parses c, what reading the project settings file at path
// found. The error says why the file is ignored: it cannot be read or is
// invalid.
func (v *Validator) readProject(path string, c Content) (project, error) {
	p := project{path: path, cfg: &Config{Path: path}}
	if c.Err != nil {
		return p, fmt.Errorf("read project settings: %w", c.Err)
	}
	// Nothing of an untrusted project is expanded: its ${VAR}s must neither
	// read the user's environment nor, unset, break the user's own servers.
	cfg, err := v.parse(path, c.Data, LoadOptions{NoExpand: true, Source: projectSource(path)})
	if err == nil {
		p.hash, err = DefinitionHash(c.Data)
	}
	if err != nil {
		p.hash = ""
		p.cfg.MCP.Servers = namedServers(path, c.Data, err)
		return p, err
	}
	p.cfg = cfg
	return p, nil
}

// maxHeldNames bounds how many servers of an invalid project are shown as
// held: enough for any real project, and a hostile file's million entries
// do not become a million desired servers.
const maxHeldNames = 100

// namedServers returns the servers the invalid project settings file at
// path (holding data, invalid because of err) names validly, at most
// maxHeldNames: an entry whose name is a string err does not find fault
// with. They carry only what shows them: name, type, enabled.
func namedServers(path string, data []byte, err error) []Server {
	data, _ = stripBOM(data)
	root, perr := parseTree(data)
	if perr != nil {
		return nil
	}
	servers := root.member("mcp").member("servers")
	if servers == nil || servers.kind != '[' {
		return nil
	}
	var errs Errors
	errors.As(err, &errs)
	badName := map[string]bool{}
	for _, e := range errs {
		if len(e.Path) == 4 && e.Path[0] == "mcp" && e.Path[1] == "servers" && e.Path[3] == "name" {
			badName[e.Path[2]] = true
		}
	}
	var out []Server
	for i, el := range servers.elems {
		if len(out) == maxHeldNames {
			break
		}
		name := el.member("name")
		if name == nil || name.kind != '"' || badName[strconv.Itoa(i)] {
			continue
		}
		s := Server{Name: name.str, Enabled: true, Source: projectSource(path)}
		if t := el.member("type"); t != nil && (t.str == string(Local) || t.str == string(Remote)) {
			s.Type = ServerType(t.str)
		}
		if e := el.member("enabled"); e != nil && e.kind == 'f' {
			s.Enabled = false
		}
		out = append(out, s)
	}
	return out
}

// merge returns the desired state: the user's config plus project p as
// decided by t (see Desired for the rules), p's servers resolved against
// the user's mcp section. It changes neither input.
func merge(user *Config, p project, t Trust) *Config {
	cfg := *user
	cfg.MCP.Servers = slices.Clone(user.MCP.Servers)
	cfg.Permission = Permission{
		Allow: slices.Clone(user.Permission.Allow),
		Ask:   slices.Clone(user.Permission.Ask),
		Deny:  slices.Clone(user.Permission.Deny),
	}
	ps := &ProjectStatus{Path: p.path, Dir: ProjectDir(p.path), Hash: p.hash, Trust: t}
	cfg.Project = ps
	for _, s := range p.cfg.MCP.Servers {
		ps.Servers = append(ps.Servers, s.Name)
	}
	if t.State == ProjectInvalid {
		// Only shown: held, clashing with nothing, none of its rules.
		for _, s := range p.cfg.MCP.Servers {
			s.Hold = &Hold{Kind: HoldUntrusted, Server: s.Name, Trust: t}
			cfg.MCP.Servers = append(cfg.MCP.Servers, user.MCP.Resolve(s))
		}
		return &cfg
	}

	held := t.State != Trusted
	userNames := map[string]int{}
	for i, s := range user.MCP.Servers {
		userNames[s.Name] = i
	}
	for _, s := range p.cfg.MCP.Servers {
		i, clash := userNames[s.Name]
		switch {
		case held:
			// A held project changes nothing, not even by clashing: the
			// user's server of that name keeps running.
			s.Hold = &Hold{Kind: HoldUntrusted, Server: s.Name, Trust: t}
			if clash {
				s.Hold.UserFile = user.Path
			}
		case clash:
			cfg.MCP.Servers[i].Hold = &Hold{Kind: HoldConflict, Server: s.Name, Trust: t, UserFile: user.Path}
			continue
		}
		cfg.MCP.Servers = append(cfg.MCP.Servers, user.MCP.Resolve(s))
	}
	cfg.Permission.Deny = append(cfg.Permission.Deny, p.cfg.Permission.Deny...)
	cfg.Permission.Ask = append(cfg.Permission.Ask, p.cfg.Permission.Ask...)
	if !held {
		cfg.Permission.Allow = append(cfg.Permission.Allow, p.cfg.Permission.Allow...)
	}
	return &cfg
}
