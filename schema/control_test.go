package schema

import (
	"fmt"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cuejson "cuelang.org/go/encoding/json"
	"github.com/stretchr/testify/require"

	freecode "github.com/freecode/freecode"
)

// controlCases are config files that hide text from a terminal, each with
// the one error it must get. Every value is written as JSON escapes, so
// the file itself is plain ASCII.
var controlCases = []struct {
	name string
	doc  string
	want string // the whole Error() line
}{
	{
		"carriage return in a command argument",
		`{"mcp": {"servers": [
  {"name": "docs", "type": "local", "command": ["sh", "-c", "touch /tmp/p\rnpx docs"]}
]}}`,
		`c.json:2:61: mcp.servers[0].command[2] (server "docs"): contains the control character U+000D (CR) at byte 13; control characters are not allowed (they can hide text on a terminal)`,
	},
	{
		"erase line in a command argument",
		`{"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["touch /tmp/p\u001b[2K\u001b[1Gnpx"]}]}}`,
		`c.json:1:68: mcp.servers[0].command[0] (server "docs"): contains the control character U+001B (ESC) at byte 13; control characters are not allowed (they can hide text on a terminal)`,
	},
	{
		"hidden text in an env value",
		`{"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["npx"],
  "env": {"LANG": "C\u001b[8m LD_PRELOAD=/tmp/x.so"}}]}}`,
		`c.json:2:11: mcp.servers[0].env.LANG (server "docs"): contains the control character U+001B (ESC) at byte 2; control characters are not allowed (they can hide text on a terminal)`,
	},
	{
		"control character in an env key",
		`{"mcp": {"servers": [{"name": "docs", "type": "local", "command": ["npx"], "env": {"LD_PRELOAD\u001b[8m": "/tmp/x.so"}}]}}`,
		`c.json:1:84: mcp.servers[0].env["LD_PRELOAD\x1b[8m"] (server "docs"): the key contains the control character U+001B (ESC) at byte 11; control characters are not allowed (they can hide text on a terminal)`,
	},
	{
		"DEL in a header value",
		`{"mcp": {"servers": [{"name": "r", "type": "remote", "url": "https://h/mcp", "headers": {"X-Api-Key": "k\u007f"}}]}}`,
		`c.json:1:90: mcp.servers[0].headers.X-Api-Key (server "r"): contains the control character U+007F (DEL) at byte 2; control characters are not allowed (they can hide text on a terminal)`,
	},
	{
		"C1 control in a header key",
		`{"mcp": {"servers": [{"name": "r", "type": "remote", "url": "https://h/mcp", "headers": {"X\u009b2J": "v"}}]}}`,
		`c.json:1:90: mcp.servers[0].headers["X\u009b2J"] (server "r"): the key contains the control character U+009B (CSI) at byte 2; control characters are not allowed (they can hide text on a terminal)`,
	},
	{
		"bidi override in a url",
		`{"mcp": {"servers": [{"name": "r", "type": "remote", "url": "https://good.example/\u202etxt.lave/"}]}}`,
		`c.json:1:54: mcp.servers[0].url (server "r"): contains the bidirectional control U+202E (RLO) at byte 22; bidirectional overrides and isolates are not allowed (they can reorder what a terminal shows)`,
	},
	{
		"bidi isolate in an env value",
		`{"mcp": {"servers": [{"name": "l", "type": "local", "command": ["x"], "env": {"A": "\u2066b\u2069"}}]}}`,
		`c.json:1:79: mcp.servers[0].env.A (server "l"): contains the bidirectional control U+2066 (LRI) at byte 1; bidirectional overrides and isolates are not allowed (they can reorder what a terminal shows)`,
	},
	{
		"control character in a server name",
		`{"mcp": {"servers": [{"name": "docs\u001b[2K", "type": "local", "command": ["x"]}]}}`,
		`c.json:1:23: mcp.servers[0].name (server "docs\x1b[2K"): contains the control character U+001B (ESC) at byte 5; control characters are not allowed (they can hide text on a terminal)`,
	},
	{
		"tab in a permission rule",
		`{"permission": {"allow": ["mcp__docs\t"]}}`,
		`c.json:1:27: permission.allow[0]: contains the control character U+0009 (HT) at byte 10; control characters are not allowed (they can hide text on a terminal)`,
	},
}

func TestControlCharactersRefused(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, tc := range controlCases {
		t.Run(tc.name, func(t *testing.T) {
			require.NotContains(t, tc.doc, "\x1b", "the test file itself is plain")
			for _, opts := range []LoadOptions{{}, {NoExpand: true}} {
				_, err := v.Parse("c.json", []byte(tc.doc), opts)
				var errs Errors
				require.ErrorAs(t, err, &errs)
				require.Equal(t, tc.want, errs.Error(), "one plain-words error, nothing from CUE about the same value")
				for _, r := range errs.Error() {
					require.False(t, r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0x2066, "no raw control character in the message: %q", errs.Error())
				}
			}
		})
	}
}

// config.cue refuses the same files on its own, so `cue vet` does too.
func TestControlCharactersRefusedByCUE(t *testing.T) {
	ctx := cuecontext.New()
	schema := ctx.CompileString(freecode.ConfigSchema(), cue.Filename("config.cue"))
	require.NoError(t, schema.Err())
	def := schema.LookupPath(cue.ParsePath("#Config"))
	check := func(doc string) error {
		expr, err := cuejson.Extract("c.json", []byte(doc))
		require.NoError(t, err)
		return def.Unify(ctx.BuildExpr(expr)).Validate(cue.Concrete(true))
	}
	for _, tc := range controlCases {
		t.Run(tc.name, func(t *testing.T) {
			require.Error(t, check(tc.doc))
		})
	}
	// Every refused character, in every field that holds text; and the
	// characters next to them pass.
	fields := []string{
		`{"name": "l", "type": "local", "command": ["x", %s]}`,
		`{"name": "l", "type": "local", "command": ["x"], "env": {"K": %s}}`,
		`{"name": "l", "type": "local", "command": ["x"], "env": {%s: "v"}}`,
		`{"name": "r", "type": "remote", "url": "https://h/" + %s}`,
		`{"name": "r", "type": "remote", "url": "https://h/", "headers": {"K": %s}}`,
		`{"name": "r", "type": "remote", "url": "https://h/", "headers": {%s: "v"}}`,
	}
	for _, f := range fields {
		for _, r := range []rune{0, '\t', '\n', '\r', 0x1b, 0x1f, 0x7f, 0x80, 0x9b, 0x9f, 0x202a, 0x202e, 0x2066, 0x2069} {
			val := fmt.Sprintf(`"a\u%04xb"`, r)
			doc := `{"mcp": {"servers": [` + strings.Replace(f, "%s", val, 1) + `]}}`
			doc = strings.Replace(doc, `"https://h/" + "`, `"https://h/`, 1)
			require.Error(t, check(doc), doc)
		}
		for _, r := range []rune{' ', '~', 0xa0, 0x200b, 0x2029, 0x202f, 0x2065, 0x206a, 0xe9} {
			val := fmt.Sprintf(`"a\u%04xb"`, r)
			doc := `{"mcp": {"servers": [` + strings.Replace(f, "%s", val, 1) + `]}}`
			doc = strings.Replace(doc, `"https://h/" + "`, `"https://h/`, 1)
			require.NoError(t, check(doc), doc)
		}
	}
}

func TestEditRefusesControlCharacters(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	path := t.TempDir() + "/config.json"
	err = v.Edit(t.Context(), path, func(d *Doc) error {
		return d.AddServer([]Field{{"name", "docs"}, {"type", "local"}, {"command", []string{"npx", "docs\r\x1b[2Ktouch /tmp/p"}}})
	})
	require.ErrorContains(t, err, `new server "docs": command[1]: contains the control character U+000D (CR) at byte 5`)
	require.NotContains(t, err.Error(), "\x1b")
	require.NoFileExists(t, path, "nothing was written")
}

func TestDescribeShowsWhatRuns(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	// Valid (no control character), but not all of it shows as it reads.
	doc := `{"mcp": {"servers": [
  {"name": "docs", "type": "local", "command": ["npx", "-y", "pkg\u200b", "a b", "\"q\""],
   "env": {"LANG": "C\u00a0LD_PRELOAD=/tmp/x.so", "PLAIN": "v", "MARK\u200e": "x"}},
  {"name": "r", "type": "remote", "url": "https://h/\u200bmcp", "headers": {"X": "y"}}
]}, "permission": {"allow": ["mcp__docs"]}}`
	cfg, err := v.Parse("c.json", []byte(doc), LoadOptions{NoExpand: true})
	require.NoError(t, err)
	require.Equal(t, `  server "docs"
    program:  npx
    arg 1:    -y
    arg 2:    "pkg\u200b"
    arg 3:    'a b'
    arg 4:    '"q"'
    env:      "LANG=C\u00a0LD_PRELOAD=/tmp/x.so"
    env:      "MARK\u200e=x"
    env:      PLAIN=v
  server "r"
    url:      "https://h/\u200bmcp" (auto)
    header:   X=y
  permission.allow: mcp__docs
`, Describe(cfg))
	require.Equal(t, `npx -y "pkg\u200b" 'a b' '"q"'`, cfg.MCP.Servers[0].Shown)
	require.Equal(t, `"https://h/\u200bmcp"`, cfg.MCP.Servers[1].Shown)
}
