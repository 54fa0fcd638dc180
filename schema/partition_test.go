package schema

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const threeServers = `{"mcp": {"servers": [
  {"name": "a", "type": "local", "command": ["run-a"]},
  {"name": "bad", "type": "local", "command": ["run-b"], "env": {"TOKEN": "${UNSET_TOKEN}"}},
  {"name": "c", "type": "remote", "url": "https://h/mcp"}
]}}`

// An error of one server's entry holds that server only.
func TestServerErrorHoldsOnlyThatServer(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	_, err = v.Parse("c.json", []byte(threeServers), LoadOptions{LookupEnv: env(nil)})
	var errs Errors
	require.ErrorAs(t, err, &errs, "without HoldInvalid the file fails")
	require.Len(t, errs, 1)

	cfg, err := v.Parse("c.json", []byte(threeServers), LoadOptions{LookupEnv: env(nil), HoldInvalid: true})
	require.NoError(t, err)
	require.Len(t, cfg.MCP.Servers, 3)
	a, bad, c := cfg.MCP.Servers[0], cfg.MCP.Servers[1], cfg.MCP.Servers[2]
	require.Nil(t, a.Hold)
	require.Nil(t, c.Hold)
	require.Equal(t, []string{"run-a"}, a.Command)
	require.NotNil(t, bad.Hold)
	require.Equal(t, HoldInvalid, bad.Hold.Kind)
	require.Equal(t, "bad", bad.Hold.Server)
	require.Equal(t, Local, bad.Type)
	require.Equal(t, "run-b", bad.Shown)
	require.Len(t, bad.Hold.Errors, 1)
	require.Equal(t, "UNSET_TOKEN", bad.Hold.Errors[0].Var)
	require.Equal(t, `c.json:3:66: mcp.servers[1].env.TOKEN (server "bad"): environment variable UNSET_TOKEN is not set (set it, or write ${UNSET_TOKEN:-default})`, bad.Hold.Errors[0].Error())
	require.Equal(t, bad.Hold.Errors, cfg.ServerErrors())
	require.Equal(t, "server \"bad\" has errors; fix it:\n"+bad.Hold.Errors.Error(), bad.Hold.Text("fix it"))
	require.NotContains(t, bad.Hold.String(), "secret")
}

func TestServerErrorKinds(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, tc := range []struct {
		name, entry string
		key         string // the held server's name
		msgs        []string
	}{
		{"wrong type", `{"name": "x", "type": "lokal", "command": ["y"]}`, "x",
			[]string{`type must be "local" or "remote", not "lokal"`}},
		{"no type", `{"name": "x", "command": ["y"]}`, "x",
			[]string{`missing "type": "local" for a command to run, or "remote" for a url`}},
		{"only a name", `{"name": "x"}`, "x",
			[]string{`missing "type": "local" for a command to run, or "remote" for a url`}},
		{"typo", `{"name": "x", "type": "local", "comand": ["y"]}`, "x",
			[]string{`unknown field "comand" (did you mean "command"?)`}},
		{"field of the wrong kind", `{"name": "x", "type": "local", "command": 42}`, "x",
			[]string{"command must be a list of non-empty strings"}},
		{"a known field in the wrong place", `{"name": "x", "type": "local", "command": ["y"], "pollInterval": 100}`, "x",
			[]string{`"pollInterval" is not a field of a server entry`}},
		{"url as a command", `{"name": "x", "type": "local", "command": ["https://h/mcp"]}`, "x",
			[]string{`the command is a URL: a server reached at a URL is "remote"; did you mean "type": "remote", "url": "https://h/mcp"?`}},
		{"timeout out of range", `{"name": "x", "type": "local", "command": ["y"], "timeout": 18446744073710}`, "x",
			[]string{"timeout must be a whole number of milliseconds from 1 to 3600000 (1 hour)"}},
		{"control character", `{"name": "x", "type": "local", "command": ["y\u001b[2K"]}`, "x",
			[]string{"contains the control character U+001B (ESC) at byte 2; control characters are not allowed (they can hide text on a terminal)"}},
		{"invalid name", `{"name": "a__b", "type": "local", "command": ["y"]}`, "mcp.servers[1]",
			[]string{`server name must start with a letter, contain only letters, digits, "_" and "-", be at most 48 characters, and neither contain "__" nor end in "_" (tool ids are mcp__<server>__<tool>)`}},
		{"not an object", `42`, "mcp.servers[1]", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"mcp": {"servers": [{"name": "ok", "type": "local", "command": ["z"]}, ` + tc.entry + `]}}`
			cfg, err := v.Parse("c.json", []byte(doc), LoadOptions{HoldInvalid: true, LookupEnv: env(nil)})
			require.NoError(t, err)
			require.Len(t, cfg.MCP.Servers, 2)
			require.Nil(t, cfg.MCP.Servers[0].Hold, "the other server runs")
			held := cfg.MCP.Servers[1]
			require.NotNil(t, held.Hold)
			require.Equal(t, HoldInvalid, held.Hold.Kind)
			require.Equal(t, tc.key, held.Name)
			var msgs []string
			for _, e := range held.Hold.Errors {
				msgs = append(msgs, e.Msg)
			}
			if tc.msgs != nil {
				require.Equal(t, tc.msgs, msgs)
			} else {
				require.NotEmpty(t, msgs)
			}
		})
	}
}

// A name given twice holds the name: both entries, with one hold.
func TestDuplicateNameHoldsBothEntries(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	cfg, err := v.Parse("c.json", []byte(`{"mcp": {"servers": [
		{"name": "a", "type": "local", "command": ["x"]},
		{"name": "b", "type": "local", "command": ["x"]},
		{"name": "a", "type": "remote", "url": "https://h"}
	]}}`), LoadOptions{HoldInvalid: true})
	require.NoError(t, err)
	require.Len(t, cfg.MCP.Servers, 3)
	require.Nil(t, cfg.MCP.Servers[1].Hold)
	require.NotNil(t, cfg.MCP.Servers[0].Hold)
	require.Same(t, cfg.MCP.Servers[0].Hold, cfg.MCP.Servers[2].Hold)
	require.Contains(t, cfg.MCP.Servers[0].Hold.Errors.Error(), `duplicate server name "a"`)
}

// File-level errors fail the file, with every error of it.
func TestFileLevelErrorsFailTheFile(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, doc := range []string{
		`{"mcp": {"servers": [{"name": "x", "type": "lokal"}], "pollInterval": 5}}`,
		`{"mcp": {"servers": [{"name": "x", "type": "lokal"}]}, "permission": {"allow": ["a b"]}}`,
		`{"mcp": {"servers": [{"name": "x", "type": "lokal"}], "bogus": 1}}`,
		`{"mcp": {"servers": [{"name": "x", "type": "lokal"}]}, "Mcp": {}}`,
		`{"mcp": {"servers": [{"name": "x", "type": "lokal"}], "limits": {"maxListItems": 0}}}`,
		`{"mcp": {"servers": {"x": {"type": "local"}}}}`,
	} {
		_, err := v.Parse("c.json", []byte(doc), LoadOptions{HoldInvalid: true})
		var errs Errors
		require.ErrorAs(t, err, &errs, doc)
		if strings.Contains(doc, "lokal") {
			require.Contains(t, errs.Error(), `not "lokal"`, "the server's errors come along: %s", doc)
		}
	}
}

// A config of another host is an error that says so, never "0 servers".
func TestForeignFormats(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, tc := range []struct {
		file, doc, want string
	}{
		{"/x/claude_desktop_config.json", `{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"]}}}`,
			`/x/claude_desktop_config.json:1:2: mcpServers: this looks like a Claude Desktop config ("mcpServers" maps names to servers), not FreeCode's "mcp": {"servers": [...]}; import them with ` + "`freecode mcp import --from /x/claude_desktop_config.json`"},
		{"/x/.vscode/mcp.json", `{"servers": {"fs": {"type": "stdio", "command": "npx"}}, "inputs": []}`,
			`/x/.vscode/mcp.json:1:2: servers: this looks like a VS Code mcp.json ("servers" maps names to servers), not FreeCode's "mcp": {"servers": [...]}; import them with ` + "`freecode mcp import --from /x/.vscode/mcp.json`"},
		{"my config.json", `{"mcp": {"fs": {"type": "local", "command": ["npx", "x"]}, "gh": {"type": "remote", "url": "https://h"}}}`,
			`my config.json:1:10: mcp.fs: this looks like an OpenCode config ("mcp" maps names to servers: "fs", "gh"), not FreeCode's "mcp": {"servers": [...]}; import them with ` + "`freecode mcp import --from 'my config.json'`"},
		{"c.json", `{"mcp": {"servers": {"fs": {"type": "local", "command": ["npx"]}}}}`,
			`c.json:1:10: mcp.servers: mcp.servers maps names to servers, as OpenCode's config does; FreeCode's is a list: "servers": [{"name": ..., "type": ...}]; import them with ` + "`freecode mcp import --from c.json`"},
		{"config.toml", "[mcp_servers.fs]\ncommand = \"npx\"\n",
			"config.toml:1:2: invalid JSON: unexpected 'm': expected a value; this is TOML (Codex's config.toml?), not FreeCode's JSON: import them with `freecode mcp import --from config.toml`"},
	} {
		_, err := v.Parse(tc.file, []byte(tc.doc), LoadOptions{HoldInvalid: true})
		var errs Errors
		require.ErrorAs(t, err, &errs, tc.doc)
		require.Len(t, errs, 1, "%s: what CUE says of the same members adds nothing", errs)
		require.True(t, strings.HasPrefix(errs[0].Error(), tc.want), "%s\nwant %s", errs[0], tc.want)
	}
}

func TestHomeWithLiteralTilde(t *testing.T) {
	for _, h := range []string{"~", "~/fc", "~bob/fc"} {
		_, err := Home(func(k string) string {
			if k == "FREECODE_HOME" {
				return h
			}
			return "/home/u"
		})
		require.ErrorIs(t, err, ErrTildeHome, h)
	}
	_, err := Home(func(k string) string {
		if k == "FREECODE_HOME" {
			return "~/fc"
		}
		return ""
	})
	require.EqualError(t, err, `FREECODE_HOME=~/fc starts with "~", which only a shell expands (and not inside quotes): a literal ~ is not the home directory; write $HOME/fc or an absolute path`)
}

// An edit of a file whose servers have errors of their own works, unless
// it adds errors; then they are named without positions in a file that
// was not written.
func TestEditBesideAnInvalidServer(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	orig := `{"mcp": {"servers": [
  {"name": "bad", "type": "lokal"},
  {"name": "x", "type": "local", "command": ["y"]},
  {"name": "x", "type": "local", "command": ["z"]},
  {"name": "ok", "type": "local", "command": ["y"]}
]}}
`
	require.NoError(t, os.WriteFile(path, []byte(orig), 0o600))
	edit := func(fn func(*Doc) error) error { return v.Edit(t.Context(), path, fn) }

	require.NoError(t, edit(func(d *Doc) error {
		return d.AddServer([]Field{{"name", "new"}, {"type", "local"}, {"command", []string{"n"}}})
	}), "adding another server works")
	_, err = func() (bool, error) {
		var changed bool
		return changed, edit(func(d *Doc) error { var err error; changed, err = d.SetEnabled("bad", false); return err })
	}()
	require.NoError(t, err, "disabling the invalid server works")
	require.NoError(t, edit(func(d *Doc) error { return d.RemoveServer("ok") }),
		"removing a server before... or after the duplicate moves no error")

	before, err := os.ReadFile(path)
	require.NoError(t, err)
	err = edit(func(d *Doc) error {
		return d.AddServer([]Field{{"name", "t"}, {"type", "local"}, {"command", []string{"y"}}, {"timeout", int64(0)}})
	})
	var re *RefusedEdit
	require.ErrorAs(t, err, &re)
	require.Equal(t, "the change would make "+path+" invalid, so it was not written:\nnew server \"t\": timeout: timeout must be a whole number of milliseconds from 1 to 3600000 (1 hour)", err.Error())
	var errs Errors
	require.ErrorAs(t, err, &errs)
	require.Len(t, errs, 1)
	require.Zero(t, errs[0].Line, "no line of a file that was not written")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, string(before), string(after))

	require.NoError(t, edit(func(d *Doc) error { return d.RemoveServer("bad") }), "removing the invalid server works")
	require.NoError(t, edit(func(d *Doc) error { return d.RemoveServer("x") }), "and one of the duplicates")
	cfg, err := v.Load(path, LoadOptions{})
	require.NoError(t, err, "the file is valid again")
	require.Len(t, cfg.MCP.Servers, 2)

	// A file-level error still stops every edit.
	require.NoError(t, os.WriteFile(path, []byte(`{"mcp": {"servers": [], "pollInterval": 5}}`), 0o600))
	err = edit(func(d *Doc) error { return d.RemoveServer("x") })
	require.ErrorContains(t, err, "is not valid, so it was left untouched")
	require.False(t, errors.As(err, &re))
}
