package schema

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestDecideTrust(t *testing.T) {
	const path = "/src/app/.freecode/settings.json"
	trustedAt := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	records := map[string]TrustRecord{path: {Hash: "h1", TrustedAt: trustedAt}, "/other/.freecode/settings.json": {Hash: "h2"}}
	invalid := Errors{{File: path, Msg: "bad"}}
	for _, tc := range []struct {
		name string
		in   TrustInput
		want Trust
	}{
		{"trusted", TrustInput{Project: path, Hash: "h1", Records: records},
			Trust{Project: path, State: Trusted}},
		{"never trusted", TrustInput{Project: path, Hash: "h1", Records: map[string]TrustRecord{}},
			Trust{Project: path, State: NeverTrusted}},
		{"another project's record does not count", TrustInput{Project: path, Hash: "h2", Records: map[string]TrustRecord{"/other/.freecode/settings.json": {Hash: "h2"}}},
			Trust{Project: path, State: NeverTrusted}},
		{"changed since trusted", TrustInput{Project: path, Hash: "h3", Records: records},
			Trust{Project: path, State: ChangedSinceTrusted, Since: trustedAt}},
		{"no trust store", TrustInput{Project: path, Hash: "h1", Records: records, NoStore: true},
			Trust{Project: path, State: NoTrustStore}},
		{"invalid, whatever was trusted", TrustInput{Project: path, Hash: "h1", Records: records, Invalid: invalid},
			Trust{Project: path, State: ProjectInvalid, Err: invalid}},
		{"invalid without a trust store", TrustInput{Project: path, Invalid: invalid, NoStore: true},
			Trust{Project: path, State: ProjectInvalid, Err: invalid}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, DecideTrust(tc.in))
		})
	}
}

// The facts a decision states, without any remedy.
func TestTrustText(t *testing.T) {
	const path = "/src/app/.freecode/settings.json"
	errs := Errors{{File: path, Line: 1, Col: 2, Msg: "bad"}}
	for _, tc := range []struct {
		t    Trust
		want string
	}{
		{Trust{Project: path, State: NeverTrusted}, "project " + path + " is not trusted"},
		{Trust{Project: path, State: ChangedSinceTrusted, Since: time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)}, "project " + path + " changed since it was trusted on 2026-11-02"},
		{Trust{Project: path, State: NoTrustStore}, "no trust store"},
		{Trust{Project: path, State: ProjectInvalid, Err: errs}, "project " + path + " is invalid and ignored:\n" + path + ":1:2: bad"},
		{Trust{Project: path, State: TrustedUnresolved, Err: errs}, "project " + path + " is trusted but cannot run until this is fixed:\n" + path + ":1:2: bad"},
	} {
		require.Equal(t, tc.want, tc.t.String())
		require.Equal(t, tc.want+"; do this", tc.t.Text("do this"))
	}
	h := &Hold{Kind: HoldUntrusted, Server: "docs", Trust: Trust{Project: path, State: NeverTrusted}, UserFile: "/home/me/config.json"}
	require.Equal(t, "project "+path+` is not trusted; do this (its server "docs" also has the name of one in /home/me/config.json)`, h.Text("do this"))
	h = &Hold{Kind: HoldConflict, Server: "docs", Trust: Trust{Project: path, State: Trusted}, UserFile: "/home/me/config.json"}
	require.Equal(t, `server "docs" is defined both in /home/me/config.json and in `+path, h.String())
}

// summary lists a desired config's servers as name, name!kind or
// name!kind<userfile, in order.
func summary(cfg *Config) []string {
	var out []string
	for _, s := range cfg.MCP.Servers {
		e := s.Name
		if s.Hold != nil {
			e += "!" + string(s.Hold.Kind)
			if s.Hold.UserFile != "" {
				e += "<" + s.Hold.UserFile
			}
		}
		out = append(out, e)
	}
	return out
}

func TestMerge(t *testing.T) {
	const (
		userFile = "/home/me/config.json"
		projFile = "/src/app/.freecode/settings.json"
	)
	srv := func(name string) Server {
		return Server{Name: name, Type: Local, Command: []string{name}, Enabled: true}
	}
	user := func() *Config {
		return &Config{Path: userFile,
			MCP:        MCP{Servers: []Server{srv("mine"), srv("shared")}, PollInterval: 7 * time.Second},
			Permission: Permission{Allow: []string{"read"}, Deny: []string{"mcp__x"}}}
	}
	proj := func(names ...string) project {
		cfg := &Config{Path: projFile, Permission: Permission{Allow: []string{"mcp__docs"}, Ask: []string{"write"}, Deny: []string{"mcp__docs__rm"}}}
		for _, n := range names {
			s := srv(n)
			s.Source = projectSource(projFile)
			cfg.MCP.Servers = append(cfg.MCP.Servers, s)
		}
		return project{path: projFile, hash: "h", cfg: cfg}
	}
	trust := func(s TrustState) Trust { return Trust{Project: projFile, State: s} }
	errs := Errors{{File: projFile, Msg: "bad"}}
	everyRule := Permission{Allow: []string{"read", "mcp__docs"}, Ask: []string{"write"}, Deny: []string{"mcp__x", "mcp__docs__rm"}}
	restricting := Permission{Allow: []string{"read"}, Ask: []string{"write"}, Deny: []string{"mcp__x", "mcp__docs__rm"}}
	for _, tc := range []struct {
		name    string
		p       project
		t       Trust
		servers []string
		perm    Permission
	}{
		{"trusted: its servers run and its rules apply", proj("docs"), trust(Trusted),
			[]string{"mine", "shared", "docs"}, everyRule},
		{"never trusted: held, only restricting rules", proj("docs"), trust(NeverTrusted),
			[]string{"mine", "shared", "docs!untrusted"}, restricting},
		{"changed since trusted: held the same way", proj("docs"), Trust{Project: projFile, State: ChangedSinceTrusted, Since: time.Now()},
			[]string{"mine", "shared", "docs!untrusted"}, restricting},
		{"no trust store: held", proj("docs"), trust(NoTrustStore),
			[]string{"mine", "shared", "docs!untrusted"}, restricting},
		{"trusted but unresolved: held, only restricting rules", proj("docs"), Trust{Project: projFile, State: TrustedUnresolved, Err: errs},
			[]string{"mine", "shared", "docs!untrusted"}, restricting},
		{"untrusted name clash: the user's server runs", proj("shared"), trust(NeverTrusted),
			[]string{"mine", "shared", "shared!untrusted<" + userFile}, restricting},
		{"trusted name clash: the user's entry is held, the project's left out", proj("shared", "docs"), trust(Trusted),
			[]string{"mine", "shared!conflict<" + userFile, "docs"}, everyRule},
		{"invalid: named servers shown held, no rule, no clash", proj("shared", "docs"), Trust{Project: projFile, State: ProjectInvalid, Err: errs},
			[]string{"mine", "shared", "shared!untrusted", "docs!untrusted"}, Permission{Allow: []string{"read"}, Deny: []string{"mcp__x"}}},
		{"trusted, no servers: rules only", proj(), trust(Trusted),
			[]string{"mine", "shared"}, everyRule},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, p := user(), tc.p
			if tc.t.State == ProjectInvalid {
				// As readProject leaves an invalid file: names, no rules.
				p.hash, p.cfg.Permission = "", Permission{}
			}
			got := merge(u, p, tc.t)
			require.Equal(t, tc.servers, summary(got))
			require.Equal(t, tc.perm, got.Permission)
			require.Equal(t, 7*time.Second, got.MCP.PollInterval, "pollInterval is the user's")
			require.Equal(t, &ProjectStatus{Path: projFile, Dir: "/src/app", Hash: p.hash, Trust: tc.t, Servers: namesOf(p.cfg)}, got.Project)
			for _, s := range got.MCP.Servers {
				if s.Hold != nil {
					require.Equal(t, tc.t, s.Hold.Trust, "every hold carries the decision")
				}
			}
			require.Equal(t, user(), u, "the user's config is not changed")
		})
	}
}

func namesOf(cfg *Config) []string {
	var out []string
	for _, s := range cfg.MCP.Servers {
		out = append(out, s.Name)
	}
	return out
}

// Desired reads nothing: it decides on the bytes it is given, which need
// not be on disk at all.
func TestDesiredDecidesOnTheGivenBytes(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	dir := t.TempDir() // empty: none of the files below exist
	src := Sources{User: filepath.Join(dir, "config.json"), Project: filepath.Join(dir, "repo", ProjectFile), Trust: filepath.Join(dir, "trust.json")}
	proj := []byte(`{"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["docs"]}]}}`)
	hash, err := DefinitionHash(proj)
	require.NoError(t, err)
	contents := Contents{
		src.User:    {Data: []byte(`{"mcp": {"servers": [{"name": "mine", "type": "local", "command": ["mine"]}]}}`)},
		src.Project: {Data: proj},
		src.Trust:   {Data: []byte(fmt.Sprintf(`{"projects": {%q: {"hash": %q}}}`, src.Project, hash))},
	}
	cfg, err := v.Desired(src, contents, LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"mine", "docs"}, summary(cfg))
	require.Equal(t, Trusted, cfg.Project.Trust.State)

	// A file without an entry does not exist.
	delete(contents, src.Trust)
	cfg, err = v.Desired(src, contents, LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"mine", "docs!untrusted"}, summary(cfg))
	delete(contents, src.User)
	cfg, err = v.Desired(src, contents, LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, []string{"docs!untrusted"}, summary(cfg))
	require.Equal(t, DefaultPollInterval, cfg.MCP.PollInterval)

	// What a read error means depends on the file.
	denied := &fs.PathError{Op: "open", Path: src.Project, Err: fs.ErrPermission}
	contents[src.Project] = Content{Err: denied}
	cfg, err = v.Desired(src, contents, LoadOptions{})
	require.NoError(t, err, "an unreadable project is ignored")
	require.Equal(t, ProjectInvalid, cfg.Project.Trust.State)
	require.ErrorIs(t, cfg.Project.Trust.Err, fs.ErrPermission)
	contents[src.User] = Content{Err: denied}
	_, err = v.Desired(src, contents, LoadOptions{})
	require.ErrorIs(t, err, fs.ErrPermission, "an unreadable user config is an error")
	require.ErrorContains(t, err, "read config: ")
	contents[src.User], contents[src.Project] = Content{Data: []byte(`{}`)}, Content{Data: proj}
	contents[src.Trust] = Content{Err: denied}
	_, err = v.Desired(src, contents, LoadOptions{})
	require.ErrorIs(t, err, fs.ErrPermission, "an unreadable trust store is an error")
	require.ErrorContains(t, err, "read trust store: ")
}

func TestReadSourcesReadsEachFileOnce(t *testing.T) {
	src := Sources{User: "/h/config.json", Project: "/r/" + ProjectFile, Trust: "/h/config.json"}
	reads := map[string]int{}
	c := ReadSources(src, func(name string) ([]byte, error) {
		reads[name]++
		if name == src.Project {
			return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
		}
		return []byte(name), nil
	})
	require.Equal(t, map[string]int{"/h/config.json": 1, src.Project: 1}, reads)
	require.Equal(t, []byte("/h/config.json"), c[src.User].Data)
	require.True(t, c[src.Project].Missing())
	require.False(t, c[src.User].Missing())
}

// Errors reach their readers wrapped; each one that looks into them uses
// errors.As, so a wrapped Errors neither panics (a bare type assertion)
// nor is missed (a checked one).
func TestWrappedErrorsAreSeen(t *testing.T) {
	const path = "/src/app/.freecode/settings.json"
	data := []byte(`{"mcp": {"servers": [{"name": "fs_", "type": "local"}, {"name": "ok", "type": "local"}]}}`)
	bad := Errors{{File: path, Path: []string{"mcp", "servers", "0", "name"}, Msg: "server name must …"}}
	for _, err := range []error{bad, fmt.Errorf("parse: %w", bad), errors.Join(errors.New("other"), fmt.Errorf("parse: %w", bad))} {
		var names []string
		for _, s := range namedServers(path, data, err) {
			names = append(names, s.Name)
		}
		require.Equal(t, []string{"ok"}, names, "a server whose name is at fault is not shown (%T)", err)
	}
}

// A project's servers are resolved against the user's mcp section: its
// callTimeout and maxOutputTokens apply to them, the project's own do not;
// the project's mcp.limits apply to its own servers only. Every server,
// held ones included, comes out resolved.
func TestDesiredResolvesProjectServersAgainstTheUsers(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	dir := t.TempDir()
	src := Sources{User: filepath.Join(dir, "config.json"), Project: filepath.Join(dir, "repo", ProjectFile), Trust: filepath.Join(dir, "trust.json")}
	proj := []byte(`{"mcp": {"callTimeout": 1000, "maxOutputTokens": 1000, "limits": {"maxListItems": 9}, "servers": [
		{"name": "docs", "type": "local", "command": ["docs"]},
		{"name": "own", "type": "local", "command": ["own"], "callTimeout": 2000, "timeout": 3000}]}}`)
	hash, err := DefinitionHash(proj)
	require.NoError(t, err)
	contents := Contents{
		src.User:    {Data: []byte(`{"mcp": {"callTimeout": 60000, "maxOutputTokens": 5000, "servers": [{"name": "mine", "type": "local", "command": ["mine"]}]}}`)},
		src.Project: {Data: proj},
		src.Trust:   {Data: []byte(fmt.Sprintf(`{"projects": {%q: {"hash": %q}}}`, src.Project, hash))},
	}
	for _, trusted := range []bool{true, false} {
		if !trusted {
			delete(contents, src.Trust)
		}
		cfg, err := v.Desired(src, contents, LoadOptions{})
		require.NoError(t, err)
		require.Equal(t, Settings{CallTimeout: time.Minute, MaxOutputTokens: 5000}, cfg.MCP.Defaults)
		mine, docs, own := cfg.MCP.Servers[0], cfg.MCP.Servers[1], cfg.MCP.Servers[2]
		require.Equal(t, cfg.MCP.Defaults, mine.Settings)
		require.Equal(t, cfg.MCP.Defaults, docs.Settings, "the user's mcp settings, not the project's")
		require.Equal(t, Settings{CallTimeout: 2 * time.Second, MaxOutputTokens: 5000, OwnCallTimeout: true}, own.Settings)
		require.Equal(t, DefaultTimeout, docs.Timeout)
		require.Equal(t, 3*time.Second, own.Timeout)
		require.Equal(t, DefaultMaxListItems, mine.Limits.MaxListItems)
		require.Equal(t, 9, docs.Limits.MaxListItems, "the project's mcp.limits")
		require.Equal(t, Limits{}.WithDefaults().MaxMessageBytes, docs.Limits.MaxMessageBytes)
	}
}

// The spec hash of a parsed server is what it was before settings were
// resolved in one place: a server is not restarted by an upgrade.
func TestSpecHashPinned(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	cfg, err := v.Parse("c.json", []byte(`{"mcp": {"callTimeout": 60000, "limits": {"maxListPages": 50}, "servers": [
		{"name": "a", "type": "local", "command": ["x"], "callTimeout": 1000, "maxOutputTokens": 2000},
		{"name": "b", "type": "remote", "url": "https://h/mcp", "timeout": 9000, "limits": {"maxListItems": 7}}
	]}}`), LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, "21bd321b2eb476f9", cfg.MCP.Servers[0].SpecHash())
	require.Equal(t, "975d1aeea25159b2", cfg.MCP.Servers[1].SpecHash())
}
