package schema

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// roots resolve against the home directory in the user config and
// against the project in a project's settings; protocol and logLevel are
// kept, and each of them is part of the spec.
func TestServerRootsProtocolLogLevel(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	doc := []byte(`{"mcp": {"servers": [{"name": "fs", "type": "local", "command": ["x"],
		"roots": [".", "src/../docs", "~/notes", "/abs/"], "protocol": "auto", "logLevel": "warning"}]}}`)
	cfg, err := v.Parse("c.json", doc, LoadOptions{LookupEnv: env(map[string]string{"HOME": "/home/u"})})
	require.NoError(t, err)
	s := cfg.MCP.Servers[0]
	require.Equal(t, []string{"/home/u", "/home/u/docs", "/home/u/notes", "/abs"}, s.Roots)
	require.Equal(t, "auto", s.Protocol)
	require.Equal(t, "warning", s.LogLevel)

	cfg, err = v.Parse("p.json", doc, LoadOptions{LookupEnv: env(map[string]string{"HOME": "/home/u"}), Source: SourceProjectPrefix + "/work/proj"})
	require.NoError(t, err)
	require.Equal(t, []string{"/work/proj", "/work/proj/docs", "/home/u/notes", "/abs"}, cfg.MCP.Servers[0].Roots)

	plain := Server{Name: "fs", Type: Local, Command: []string{"x"}}
	for _, changed := range []Server{
		func(s Server) Server { s.Roots = []string{"/a"}; return s }(plain),
		func(s Server) Server { s.Protocol = "auto"; return s }(plain),
		func(s Server) Server { s.LogLevel = "info"; return s }(plain),
	} {
		require.NotEqual(t, plain.SpecHash(), changed.SpecHash())
	}
}

func TestServerRootsProtocolLogLevelErrors(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, tc := range []struct{ name, server, want string }{
		{"relative root without a home", `"roots": ["src"]`, `mcp.servers[0].roots (server "fs"): root "src" is relative and $HOME is not set; write an absolute path`},
		{"unknown protocol", `"protocol": "2024-11-05"`, `mcp.servers[0].protocol (server "fs"): protocol must be "2025-11-25", "2026-07-28" or "auto"`},
		{"unknown log level", `"logLevel": "loud"`, `mcp.servers[0].logLevel (server "fs"): logLevel must be "debug", "info", "notice", "warning", "error", "critical", "alert" or "emergency"`},
		{"empty root", `"roots": [""]`, `mcp.servers[0].roots[0] (server "fs"): roots must be a list of directories`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Parse("c.json", []byte(`{"mcp": {"servers": [{"name": "fs", "type": "local", "command": ["x"], `+tc.server+`}]}}`), LoadOptions{LookupEnv: env(nil)})
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, 1, strings.Count(err.Error(), "\n")+1, "one error: %v", err)
		})
	}
}
