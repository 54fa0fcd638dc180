package hosts

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/schema"
)

func TestLiterals(t *testing.T) {
	s := Server{Name: "my.api", Type: schema.Remote, URL: "https://x.example/mcp",
		Env:     map[string]string{"GITHUB_TOKEN": "ghp_abc", "MEMORY_FILE_PATH": "/tmp/m", "FROM_VAR": "${HOME}/x", "ESCAPED": "a$${B}c", "EMPTY": ""},
		Headers: map[string]string{"Authorization": "Bearer s3cr3t", "X-Region": "eu", "X-Ref": "Bearer ${T}"}}
	s.finish()
	require.Equal(t, []Literal{
		{Kind: "env", Key: "ESCAPED"},
		{Kind: "env", Key: "GITHUB_TOKEN", Secret: true},
		{Kind: "env", Key: "MEMORY_FILE_PATH"},
		{Kind: "header", Key: "Authorization", Secret: true},
		{Kind: "header", Key: "X-Region"},
	}, s.Literals())
	require.Contains(t, s.Notes, "env ESCAPED, env GITHUB_TOKEN, env MEMORY_FILE_PATH, header Authorization, header X-Region: copied as written; to keep a secret out of the file, write ${NAME} and set NAME where freecode runs")

	refs := s.ReferLiterals(nil)
	var vars []string
	for _, r := range refs {
		vars = append(vars, r.Var)
	}
	require.Equal(t, []string{"ESCAPED", "GITHUB_TOKEN", "MEMORY_FILE_PATH", "MY_API_AUTHORIZATION", "MY_API_X_REGION"}, vars)
	require.Equal(t, map[string]string{"GITHUB_TOKEN": "${GITHUB_TOKEN}", "MEMORY_FILE_PATH": "${MEMORY_FILE_PATH}", "FROM_VAR": "${HOME}/x", "ESCAPED": "${ESCAPED}", "EMPTY": ""}, s.Env)
	require.Equal(t, map[string]string{"Authorization": "Bearer ${MY_API_AUTHORIZATION}", "X-Region": "${MY_API_X_REGION}", "X-Ref": "Bearer ${T}"}, s.Headers)
	require.Empty(t, s.Literals())
	for _, n := range s.Notes {
		require.NotContains(t, n, "copied as written")
		require.NotContains(t, n, "s3cr3t")
		require.NotContains(t, n, "ghp_abc")
	}
	require.Contains(t, s.Notes, "header Authorization: written as ${MY_API_AUTHORIZATION}, not its value; set MY_API_AUTHORIZATION where freecode runs")
}

func TestLooksSecret(t *testing.T) {
	for _, tc := range []struct {
		key, value string
		want       bool
	}{
		{"GITHUB_PERSONAL_ACCESS_TOKEN", "x", true},
		{"OPENAI_API_KEY", "x", true},
		{"X-Api-Key", "x", true},
		{"X-Auth-Token", "x", true},
		{"DB_PASSWORD", "x", true},
		{"Cookie", "x", true},
		{"CUSTOM", "ghp_0123456789", true},
		{"CUSTOM", "Bearer x", true},
		{"MEMORY_FILE_PATH", "/home/me/m.jsonl", false},
		{"X-Figma-Region", "us-east-1", false},
		{"NODE_ENV", "production", false},
		{"KEYBOARD_LAYOUT", "us", false},
	} {
		require.Equal(t, tc.want, looksSecret(tc.key, tc.value), "%s=%s", tc.key, tc.value)
	}
}

func TestVarName(t *testing.T) {
	require.Equal(t, "MY_API_X_REGION", varName("my.api_X-Region"))
	require.Equal(t, "V_1PASSWORD", varName("1password"))
	require.Equal(t, "V_", varName("!!"))
}

func TestSecretsInURLAndCommand(t *testing.T) {
	remote := Server{Name: "search", Type: schema.Remote, URL: "https://me:pa55@search.example/mcp?region=eu&api_key=sk-live-1&token=${T}#top"}
	remote.finish()
	require.Equal(t, []Literal{
		{Kind: "url", Key: "password", Secret: true},
		{Kind: "url", Key: "query api_key", Secret: true},
	}, remote.Literals())
	require.Equal(t, "https://me:***@search.example/mcp?region=eu&api_key=***&token=${T}#top", remote.Shown())
	require.Contains(t, remote.Notes, "url password, url query api_key: copied as written; to keep a secret out of the file, write ${NAME} and set NAME where freecode runs")

	local := Server{Name: "gh", Type: schema.Local, Command: []string{"gh-mcp", "--name", "db", "--api-key=ghp_abc", "--token", "sk-xyz",
		"--header", "Authorization: Bearer s3cr3t", "ghs_positional", "/tmp/data", "--verbose", "--db", "https://h.example/x?key=k1", "--root=${HOME}"}}
	local.finish()
	require.Equal(t, []Literal{
		{Kind: "command", Key: "--api-key", Secret: true},
		{Kind: "command", Key: "--token", Secret: true},
		{Kind: "command", Key: "Authorization", Secret: true},
		{Kind: "command", Key: "argument 8", Secret: true},
		{Kind: "command", Key: "url query key", Secret: true},
	}, local.Literals())
	require.Equal(t, "gh-mcp --name db '--api-key=***' --token '***' --header 'Authorization: Bearer ***' '***' /tmp/data --verbose --db 'https://h.example/x?key=***' '--root=${HOME}'", local.Shown())
	require.Equal(t, "ghp_abc", local.Command[3][len("--api-key="):], "Shown changes nothing")

	refs := local.ReferLiterals(nil)
	var vars []string
	for _, r := range refs {
		vars = append(vars, r.Var)
	}
	require.Equal(t, []string{"GH_API_KEY", "GH_TOKEN", "GH_AUTHORIZATION", "GH_ARGUMENT_8", "GH_KEY"}, vars)
	require.Equal(t, []string{"gh-mcp", "--name", "db", "--api-key=${GH_API_KEY}", "--token", "${GH_TOKEN}",
		"--header", "Authorization: Bearer ${GH_AUTHORIZATION}", "${GH_ARGUMENT_8}", "/tmp/data", "--verbose", "--db", "https://h.example/x?key=${GH_KEY}", "--root=${HOME}"}, local.Command)
	require.Empty(t, local.Literals())

	remote.ReferLiterals(nil)
	require.Equal(t, "https://me:${SEARCH_PASSWORD}@search.example/mcp?region=eu&api_key=${SEARCH_API_KEY}&token=${T}#top", remote.URL)
	for _, n := range append(remote.Notes, local.Notes...) {
		for _, secret := range []string{"pa55", "sk-live", "ghp_abc", "sk-xyz", "s3cr3t", "ghs_positional", "k1"} {
			require.NotContains(t, n, secret)
		}
	}
}

func TestReferLiteralsTaken(t *testing.T) {
	s := Server{Name: "b.api", Type: schema.Local, Command: []string{"x", "--api-key=sk-1"}, Env: map[string]string{"API_KEY": "k2", "REGION": "eu"}}
	s.finish()
	refs := s.ReferLiterals(map[string]bool{"API_KEY": true, "B_API_API_KEY": true})
	var vars []string
	for _, r := range refs {
		vars = append(vars, r.Var)
	}
	// env API_KEY is another's: the server's name goes first; the flag's
	// variable would be the same name, and gets a number.
	require.Equal(t, []string{"B_API_API_KEY_2", "REGION", "B_API_API_KEY_3"}, vars)
	require.Equal(t, map[string]string{"API_KEY": "${B_API_API_KEY_2}", "REGION": "${REGION}"}, s.Env)

	require.Equal(t, []string{"HOME", "T", "TOKEN"}, Server{Env: map[string]string{"TOKEN": "x", "P": "${HOME}/p"}, URL: "https://h/${T}"}.Claims())
}

func TestProjectFileDir(t *testing.T) {
	for path, want := range map[string]string{
		"/src/app/.mcp.json":             "/src/app",
		"/src/app/.cursor/mcp.json":      "/src/app",
		"/src/app/.vscode/mcp.json":      "/src/app",
		"/src/app/.codex/config.toml":    "/src/app",
		"/src/app/.gemini/settings.json": "/src/app",
		"/src/app/opencode.jsonc":        "/src/app",
		"/.mcp.json":                     "/",
		"/src/app/mcp.json":              "",
		"/src/app/.cursor/other.json":    "",
		"/src/app/x.mcp.json":            "",
	} {
		dir, ok := ProjectFileDir(path)
		require.Equal(t, want != "", ok, path)
		require.Equal(t, want, dir, path)
	}
}
