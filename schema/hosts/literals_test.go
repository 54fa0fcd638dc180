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

	refs := s.ReferLiterals()
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
