package schema

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// An invalid project settings file, whatever is wrong with it, leaves the
// user's config as it is: the load succeeds with the user's servers, the
// project's servers that can be named are held with the project's errors,
// and none of its rules apply.
func TestInvalidProjectChangesNothing(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	const user = `{"mcp": {"servers": [{"name": "mine", "type": "local", "command": ["mine"]}]}, "permission": {"allow": ["read"]}}`
	for _, tc := range []struct {
		name, project string
		held          []string // project servers listed as held
		want          string   // in the project's error
	}{
		{"lookalike MCP key",
			`{"MCP": {"servers": []}, "mcp": {"servers": [{"name": "docs", "type": "local", "command": ["x"]}]}, "permission": {"allow": ["mcp__mine"], "deny": ["mcp__mine"]}}`,
			[]string{"docs"}, `key "MCP" is too close to "mcp"`},
		{"duplicate key",
			`{"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["x"], "command": ["y"]}]}}`,
			[]string{"docs"}, `duplicate key "command"`},
		{"syntax error",
			`{"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["x"]}]}, "permission": {"deny": ["mcp__mine"]}`,
			nil, "invalid JSON"},
		{"typo",
			`{"mcp": {"servers": [{"name": "docs", "type": "local", "comand": ["x"]}]}}`,
			[]string{"docs"}, `unknown field "comand"`},
		{"unknown field in permission",
			`{"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["x"]}]}, "permission": {"allow": ["x"], "never": []}}`,
			[]string{"docs"}, `unknown field "never"`},
		{"control character in a string",
			"{\"mcp\": {\"servers\": [{\"name\": \"docs\", \"type\": \"local\", \"command\": [\"x\x1b[2K\"]}]}}",
			nil, "control character"},
		{"bad name is not shown",
			`{"mcp": {"servers": [{"name": "fs_", "type": "local", "command": ["x"]}, {"name": "ok", "type": "remote", "url": "ftp://x"}]}}`,
			[]string{"ok"}, `server name must`},
		{"not an object", `[1, 2]`, nil, "must be a JSON object"},
		{"empty", ``, nil, "empty file"},
		{"user name, invalid project",
			`{"mcp": {"servers": [{"name": "mine", "type": "local", "command": ["evil"], "x": 1}]}}`,
			[]string{"mine"}, `unknown field "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := Sources{User: filepath.Join(dir, "home", "config.json"), Project: filepath.Join(dir, "repo", ProjectFile), Trust: filepath.Join(dir, "home", "trust.json")}
			write(t, src.User, user)
			write(t, src.Project, tc.project)
			for _, expand := range []bool{false, true} {
				cfg, err := v.LoadDesired(src, LoadOptions{NoExpand: !expand, LookupEnv: env(nil)})
				require.NoError(t, err)
				mine := cfg.MCP.Servers[0]
				require.Equal(t, "mine", mine.Name)
				require.Equal(t, []string{"mine"}, mine.Command)
				require.Nil(t, mine.Hold, "the user's server runs")
				require.Equal(t, Permission{Allow: []string{"read"}}, cfg.Permission, "no rule of the project applies")

				require.NotNil(t, cfg.Project)
				require.False(t, cfg.Project.Trust.Trusted())
				require.ErrorContains(t, cfg.Project.Trust.Err, tc.want)
				require.ErrorContains(t, cfg.Project.Trust.Err, src.Project, "errors are positioned in the project file")
				require.Contains(t, cfg.Project.Trust.String(), "project "+src.Project+" is invalid and ignored:\n")
				var held []string
				for _, s := range cfg.MCP.Servers[1:] {
					require.NotNil(t, s.Hold)
					require.Equal(t, HoldUntrusted, s.Hold.Kind)
					require.Equal(t, cfg.Project.Trust.String(), s.Hold.String())
					require.Equal(t, SourceProjectPrefix+filepath.Join(dir, "repo"), s.Source)
					held = append(held, s.Name)
				}
				require.Equal(t, tc.held, held)
				require.Equal(t, tc.held, cfg.Project.Servers)
			}
		})
	}
}

func TestUnreadableProjectChangesNothing(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	dir := t.TempDir()
	src := Sources{User: filepath.Join(dir, "config.json"), Project: filepath.Join(dir, "repo", ProjectFile), Trust: filepath.Join(dir, "trust.json")}
	write(t, src.User, `{"mcp": {"servers": [{"name": "mine", "type": "local", "command": ["mine"]}]}}`)
	require.NoError(t, os.MkdirAll(src.Project, 0o755)) // a directory cannot be read as a file
	cfg, err := v.LoadDesired(src, LoadOptions{})
	require.NoError(t, err)
	require.Len(t, cfg.MCP.Servers, 1)
	require.ErrorContains(t, cfg.Project.Trust.Err, "read project settings")
	require.Contains(t, cfg.Project.Trust.String(), "is invalid and ignored")
}

// A trusted project that becomes invalid stops running even when the part
// the trust hash covers did not change, and runs again once it is valid
// with the trusted definition.
func TestTrustedProjectTurnedInvalid(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	dir := t.TempDir()
	src := Sources{User: filepath.Join(dir, "config.json"), Project: filepath.Join(dir, "repo", ProjectFile), Trust: filepath.Join(dir, "trust.json")}
	write(t, src.User, `{}`)
	const def = `"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["x"]}]}, "permission": {"allow": ["mcp__docs"]}`
	write(t, src.Project, `{`+def+`}`)
	hash, err := DefinitionHash([]byte(`{` + def + `}`))
	require.NoError(t, err)
	require.NoError(t, TrustStore{Path: src.Trust}.Trust(context.Background(), src.Project, TrustRecord{Hash: hash, TrustedAt: time.Now()}))
	cfg, err := v.LoadDesired(src, LoadOptions{})
	require.NoError(t, err)
	require.Nil(t, cfg.MCP.Servers[0].Hold)
	require.Equal(t, []string{"mcp__docs"}, cfg.Permission.Allow)

	for name, bad := range map[string]string{
		"lookalike key":   `{"MCP": {}, ` + def + `}`,
		"foreign dup key": `{"model": 1, "model": 2, ` + def + `}`,
		"typo":            `{"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["x"], "enabld": true}]}, "permission": {"allow": ["mcp__docs"]}}`,
		"syntax error":    `{` + def,
	} {
		t.Run(name, func(t *testing.T) {
			write(t, src.Project, bad)
			if h, err := DefinitionHash([]byte(bad)); err == nil && name != "typo" {
				require.Equal(t, hash, h, "the hash covers mcp and permission only; validity has to hold the project")
			}
			cfg, err := v.LoadDesired(src, LoadOptions{})
			require.NoError(t, err)
			require.False(t, cfg.Project.Trust.Trusted())
			require.Empty(t, cfg.Permission.Allow)
			for _, s := range cfg.MCP.Servers {
				require.NotNil(t, s.Hold, "%s must not run", s.Name)
			}
		})
	}
	write(t, src.Project, "{\n"+def+"\n}")
	cfg, err = v.LoadDesired(src, LoadOptions{})
	require.NoError(t, err)
	require.True(t, cfg.Project.Trust.Trusted())
	require.Nil(t, cfg.MCP.Servers[0].Hold)
}

// A trusted project whose variables are unset is held with that error; the
// user's servers run and only the project's restricting rules apply.
func TestTrustedProjectUnsetVariable(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	dir := t.TempDir()
	src := Sources{User: filepath.Join(dir, "config.json"), Project: filepath.Join(dir, "repo", ProjectFile), Trust: filepath.Join(dir, "trust.json")}
	write(t, src.User, `{"mcp": {"servers": [{"name": "mine", "type": "local", "command": ["mine"]}]}}`)
	proj := `{"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["x", "${DOCS_TOKEN}"]}]}, "permission": {"allow": ["mcp__docs"], "deny": ["write"]}}`
	write(t, src.Project, proj)
	hash, err := DefinitionHash([]byte(proj))
	require.NoError(t, err)
	require.NoError(t, TrustStore{Path: src.Trust}.Trust(context.Background(), src.Project, TrustRecord{Hash: hash, TrustedAt: time.Now()}))
	cfg, err := v.LoadDesired(src, LoadOptions{LookupEnv: env(nil)})
	require.NoError(t, err)
	require.Nil(t, cfg.MCP.Servers[0].Hold)
	require.NotNil(t, cfg.MCP.Servers[1].Hold)
	require.Contains(t, cfg.MCP.Servers[1].Hold.String(), "is trusted but cannot run until this is fixed")
	require.Contains(t, cfg.MCP.Servers[1].Hold.String(), "environment variable DOCS_TOKEN is not set")
	require.ErrorContains(t, cfg.Project.Trust.Err, "DOCS_TOKEN")
	require.Empty(t, cfg.Permission.Allow)
	require.Equal(t, []string{"write"}, cfg.Permission.Deny)

	cfg, err = v.LoadDesired(src, LoadOptions{LookupEnv: env(map[string]string{"DOCS_TOKEN": "t"})})
	require.NoError(t, err)
	require.Nil(t, cfg.MCP.Servers[1].Hold)
	require.Equal(t, []string{"x", "t"}, cfg.MCP.Servers[1].Command)
	require.Equal(t, []string{"mcp__docs"}, cfg.Permission.Allow)
}

func TestInvalidProjectHeldNamesBounded(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	dir := t.TempDir()
	src := Sources{User: filepath.Join(dir, "config.json"), Project: filepath.Join(dir, "repo", ProjectFile)}
	b := []byte(`{"mcp": {"bad": 1, "servers": [`)
	for i := range 3 * maxHeldNames {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name": "s`+strconv.Itoa(i)+`"}`...)
	}
	b = append(b, "]}}"...)
	write(t, src.Project, string(b))
	cfg, err := v.LoadDesired(src, LoadOptions{})
	require.NoError(t, err)
	require.Len(t, cfg.MCP.Servers, maxHeldNames)
}
