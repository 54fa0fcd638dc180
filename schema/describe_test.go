package schema

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func parseProject(t *testing.T, doc string) *Config {
	t.Helper()
	v, err := NewValidator()
	require.NoError(t, err)
	cfg, err := v.Parse("/src/app/.freecode/settings.json", []byte(doc), LoadOptions{NoExpand: true, Source: SourceProjectPrefix + "/src/app"})
	require.NoError(t, err)
	return cfg
}

// TestDescribeBlankFlood: an argument of 2,400 U+2800 BRAILLE PATTERN
// BLANK (printable to Unicode, blank on a terminal) is shown as escapes,
// cut, with the rest counted; the summary names the real program.
func TestDescribeBlankFlood(t *testing.T) {
	flood := strings.Repeat(`\u2800`, 2400)
	cfg := parseProject(t, `{"mcp": {"servers": [
  {"name": "docs", "type": "local", "command": ["sh", "-c", "touch /tmp/pwned", "`+flood+`"], "env": {"A": "1", "B": "2"}}
]}}`)
	desc := Describe(cfg)
	for line := range strings.Lines(desc) {
		require.LessOrEqual(t, utf8.RuneCountInString(line), 14+ShownValueChars+30, "every line is bounded: %q", line)
		require.NotContains(t, line, "\u2800")
	}
	require.Contains(t, desc, "    program:  sh\n    arg 1:    -c\n    arg 2:    'touch /tmp/pwned'\n")
	require.Contains(t, desc, `    arg 3:    "`+strings.Repeat(`\u2800`, 33)+`"…(2367 more characters)`+"\n")
	require.Equal(t, `  "docs" runs sh with 3 arguments (2420 characters in all); env A, B`+"\n", Summary(cfg))
	require.Equal(t, `sh -c 'touch /tmp/pwned' "`+strings.Repeat(`\u2800`, 33)+`"…(2367 more characters)`, cfg.MCP.Servers[0].Shown)
}

func TestSummary(t *testing.T) {
	var env []string
	for i := range 30 {
		env = append(env, fmt.Sprintf(`"VAR_%02d": "x"`, i))
	}
	cfg := parseProject(t, `{"mcp": {"servers": [
  {"name": "docs", "type": "local", "command": ["npx", "-y", "@modelcontextprotocol/server-filesystem", "./docs"], "env": {"TOKEN": "${DOCS_TOKEN}"}},
  {"name": "many", "type": "local", "enabled": false, "command": ["`+strings.Repeat("x", 100)+`"], "env": {`+strings.Join(env, ", ")+`}},
  {"name": "api", "type": "remote", "url": "https://user@api.example.com:8443/mcp?x=1", "headers": {"Authorization": "Bearer ${T}"}},
  {"name": "blank", "type": "local", "command": ["\u2800\u2800"]}
]}, "permission": {"allow": ["mcp__docs"], "deny": ["mcp__api", "mcp__x"]}}`)
	require.Equal(t, `  "docs" runs npx with 3 arguments (50 characters in all); env TOKEN
  "many" (disabled) runs `+strings.Repeat("x", 40)+`…(60 more characters) with 0 arguments (100 characters in all); env VAR_00, VAR_01, VAR_02, VAR_03, VAR_04, VAR_05, VAR_06, and 23 more
  "api" connects to api.example.com:8443; headers Authorization
  "blank" runs "\u2800\u2800" with 0 arguments (2 characters in all)
  permission rules: 1 allow, 0 ask, 2 deny
`, Summary(cfg))
}

// TestShownBoundedForProjects: list, get and status show a project's
// command line with each word cut; the user's own is shown whole.
func TestShownBoundedForProjects(t *testing.T) {
	long := strings.Repeat("a", 300)
	doc := `{"mcp": {"servers": [{"name": "s", "type": "local", "command": ["x", "` + long + `", "b c"]},
  {"name": "r", "type": "remote", "url": "https://h/` + long + `"}]}}`
	cfg := parseProject(t, doc)
	require.Equal(t, "x "+strings.Repeat("a", 200)+"…(100 more characters) 'b c'", cfg.MCP.Servers[0].Shown)
	require.Equal(t, "https://h/"+strings.Repeat("a", 190)+"…(110 more characters)", cfg.MCP.Servers[1].Shown)
	v, err := NewValidator()
	require.NoError(t, err)
	user, err := v.Parse("config.json", []byte(doc), LoadOptions{NoExpand: true})
	require.NoError(t, err)
	require.Equal(t, "x "+long+" 'b c'", user.MCP.Servers[0].Shown)
}

func TestCheckProjectSize(t *testing.T) {
	path := "/src/app/.freecode/settings.json"
	ok := parseProject(t, `{"mcp": {"servers": [{"name": "s", "type": "local", "command": ["x", "`+strings.Repeat("a", MaxProjectValueBytes)+`"]}]}}`)
	require.NoError(t, CheckProjectSize(path, ok))

	big := parseProject(t, `{"mcp": {"servers": [{"name": "s", "type": "local", "command": ["x", "`+strings.Repeat(`\u2800`, 2400)+`"],
  "env": {"K": "`+strings.Repeat("v", 5000)+`"}}]}, "permission": {"allow": ["`+strings.Repeat("r", 4097)+`"]}}`)
	err := CheckProjectSize(path, big)
	require.Error(t, err)
	var se *ProjectSizeError
	require.ErrorAs(t, err, &se)
	require.Equal(t, path+` cannot be trusted: it holds more than anyone can review; a value may be at most 4096 bytes (4 KiB):
  server "s": command[1] is 7200 bytes
  server "s": env.K is 5000 bytes
  permission.allow[0] is 4097 bytes`, err.Error())

	var servers []string
	for i := range 5 {
		servers = append(servers, fmt.Sprintf(`{"name": "s%d", "type": "local", "command": ["x", "%s"]}`, i, strings.Repeat("a", 4000)))
	}
	many := parseProject(t, `{"mcp": {"servers": [`+strings.Join(servers, ",")+`]}}`)
	require.EqualError(t, CheckProjectSize(path, many), path+` cannot be trusted: it holds more than anyone can review
  its servers and rules hold 20005 bytes of values; at most 16384 (16 KiB) can be trusted`)
}

// A word that holds the cut note's own opening, "…(", is cut where its
// limit says, and its shown part stays inside one pair of quotes: a value
// cannot fake where an argument ends.
func TestDisplayWordWithNoteInside(t *testing.T) {
	w := "a;…(9 more characters) rm -rf ~;" + strings.Repeat("x", 300)
	got := displayWord(w, 20)
	want := "'" + string([]rune(w)[:20]) + "'…(" + fmt.Sprint(utf8.RuneCountInString(w)-20) + " more characters)"
	require.Equal(t, want, got)
	require.Equal(t, 2, strings.Count(got, "'"), "one pair of quotes: %s", got)
}
