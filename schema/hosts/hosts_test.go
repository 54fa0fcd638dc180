package hosts

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/schema"
)

func TestTranslate(t *testing.T) {
	for _, tc := range []struct {
		name string
		syn  syntax
		in   string
		want string
	}{
		{"literal dollar stays", literalText, "cost $5", "cost $5"},
		{"literal ${ is escaped", literalText, "a${B}c", "a$${B}c"},
		{"literal $$ is escaped", literalText, "p$$w", "p$$$w"},
		{"claude code keeps references", dollarBrace, "${A}/${B:-x y}", "${A}/${B:-x y}"},
		{"claude code $VAR is text", dollarBrace, "$A", "$A"},
		{"claude code nested default is text", dollarBrace, "${A:-${B}}", "$${A:-${B}}"},
		{"vscode env", vscodeVars, "Bearer ${env:TOKEN}", "Bearer ${TOKEN}"},
		{"vscode home", vscodeVars, "${userHome}/x", "${HOME}/x"},
		{"vscode separator", vscodeVars, "a${/}b${pathSeparator}c", "a/b/c"},
		{"gemini bare", geminiVars, "$DB_URL?x=$1", "${DB_URL}?x=$1"},
		{"gemini braced", geminiVars, "${A:-d}", "${A:-d}"},
		{"opencode env", opencodeVars, "Bearer {env:JIRA_TOKEN}", "Bearer ${JIRA_TOKEN}"},
		{"opencode other braces", opencodeVars, `{"a": 1} $${x}`, `{"a": 1} $$$${x}`},
		{"generic both", genericVars, "${A} ${env:B}", "${A} ${B}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &translator{syn: tc.syn}
			require.Equal(t, tc.want, tr.text(tc.in))
			require.Empty(t, tr.unsupported)
			out, missing, malformed := schema.Expand(tr.text(tc.in), func(string) (string, bool) { return "v", true })
			require.Empty(t, missing)
			require.Empty(t, malformed, "FreeCode reads every translation: %s", out)
			if tc.syn == literalText {
				require.Equal(t, tc.in, out, "FreeCode reads literal text as the host did")
			}
		})
	}
	tr := &translator{syn: vscodeVars, workspace: "/src/app$", inputs: map[string]string{"api-key": "API key"}}
	require.Equal(t, "/src/app$/x app$ ${API_KEY}", tr.text("${workspaceFolder}/x ${workspaceFolderBasename} ${input:api-key}"))
	require.Equal(t, []string{`${input:api-key} (API key), which VS Code asks for, became ${API_KEY}: set API_KEY where freecode runs`}, tr.notes)
	tr = &translator{syn: vscodeVars}
	tr.text("${workspaceFolder}/x")
	require.Equal(t, "it uses ${workspaceFolder}, which FreeCode cannot resolve here", tr.unsupported)
	tr = &translator{syn: opencodeVars}
	tr.text("{file:~/.secret}")
	require.Contains(t, tr.unsupported, "{file:...}")
}

func TestValidName(t *testing.T) {
	for in, want := range map[string]string{
		"linear.app": "linear-app", "my server": "my-server", "fs__x": "fs_x", "9lives": "lives",
		"tools_": "tools", "builtin": "", "...": "", "Perplexity": "Perplexity",
	} {
		require.Equal(t, want, validName(in), in)
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		path, data string
		want       *Host
	}{
		{"/h/.config/Claude/claude_desktop_config.json", `{"mcpServers": {}}`, claudeDesktop},
		{"/h/.claude.json", `{"mcpServers": {}, "projects": {}}`, claudeCode},
		{"/p/.mcp.json", `{"mcpServers": {}}`, claudeCode},
		{"/p/.cursor/mcp.json", `{"mcpServers": {}}`, cursor},
		{"/p/.gemini/settings.json", `{"mcpServers": {}}`, gemini},
		{"/tmp/snippet.json", `{"mcpServers": {}}`, anyMCPServers},
		{"/p/.vscode/mcp.json", "{// c\n\"servers\": {},}", vscode},
		{"/p/opencode.jsonc", `{"mcp": {"a": {"type": "local", "command": ["x"]},},}`, opencode},
		{"/h/.codex/config.toml", "[mcp_servers.a]\ncommand = \"x\"\n", codex},
	} {
		h, err := Detect(tc.path, []byte(tc.data))
		require.NoError(t, err, tc.path)
		require.Same(t, tc.want, h, tc.path)
	}
	_, err := Detect("/h/.freecode/config.json", []byte(`{"mcp": {"servers": []}}`))
	require.ErrorIs(t, err, ErrUnknownFormat)
	require.ErrorContains(t, err, "a FreeCode config already")
	_, err = Detect("/x.json", []byte(`{"model": "x"}`))
	require.ErrorIs(t, err, ErrUnknownFormat)
}

func TestFromJSON(t *testing.T) {
	s, err := FromJSON("fs", []byte(`{"command": "npx", "args": ["-y", "pkg", "/tmp"], "env": {"K": "${env:K}"}}`))
	require.NoError(t, err)
	require.Equal(t, []schema.Field{{Key: "name", Value: "fs"}, {Key: "type", Value: "local"},
		{Key: "command", Value: []string{"npx", "-y", "pkg", "/tmp"}}, {Key: "env", Value: map[string]string{"K": "${K}"}}}, s.Fields())
	s, err = FromJSON("gh", []byte(`{"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${T}"}}`))
	require.NoError(t, err)
	require.Equal(t, schema.TransportStreamableHTTP, s.Transport)
	require.Equal(t, "Bearer ${T}", s.Headers["Authorization"])
	s, err = FromJSON("x", []byte(`{"type": "local", "command": ["a", "b"], "timeout": 8000, "limits": {"maxListItems": 5}}`))
	require.NoError(t, err)
	require.Equal(t, int64(8000), s.TimeoutMS)
	require.Equal(t, map[string]int64{"maxListItems": 5}, s.Limits)
	_, err = FromJSON("x", []byte(`{"type": "local", "command": ["a"], "cmd": 1}`))
	require.ErrorContains(t, err, `cmd is not a field of a FreeCode server entry`)
	_, err = FromJSON("x", []byte(`{"mcpServers": {"x": {"command": "a"}}}`))
	require.ErrorIs(t, err, ErrWholeConfig)
	_, err = FromJSON("x", []byte(`{"name": "y", "command": "a"}`))
	require.ErrorContains(t, err, `the JSON names the server y, not x`)
	_, err = FromJSON("x", []byte(`{"command": "a", "cwd": "/src"}`))
	require.ErrorContains(t, err, "working directory")
}

func TestIsGateway(t *testing.T) {
	for _, tc := range []struct {
		cmd  []string
		want bool
	}{
		{[]string{"freecode", "mcp", "serve"}, true},
		{[]string{"/usr/local/bin/freecode", "mcp", "serve", "--http", ":8080"}, true},
		{[]string{"freecode", "--config", "/x.json", "mcp", "serve"}, true},
		{[]string{`C:\Tools\freecode.exe`, "mcp", "serve"}, true},
		{[]string{"freecode", "mcp", "list"}, false},
		{[]string{"freecode-other", "mcp", "serve"}, false},
		{[]string{"npx", "freecode", "mcp", "serve"}, false},
		{nil, false},
	} {
		require.Equal(t, tc.want, IsGateway(tc.cmd), "%q", tc.cmd)
	}
}
