package schema

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestExpand(t *testing.T) {
	lookup := env(map[string]string{"A": "x", "EMPTY": ""})
	for _, tc := range []struct {
		name, in, want string
		missing        []string
		malformed      string
	}{
		{"plain", "no refs", "no refs", nil, ""},
		{"set", "a=${A}", "a=x", nil, ""},
		{"default unused", "${A:-d}", "x", nil, ""},
		{"default used", "${B:-d e}", "d e", nil, ""},
		{"empty uses default", "${EMPTY:-d}", "d", nil, ""},
		{"empty without default", "[${EMPTY}]", "[]", nil, ""},
		{"unset", "${B}/${C}", "/", []string{"B", "C"}, ""},
		{"dollar dollar", "$${A}", "${A}", nil, ""},
		{"lone dollar", "cost $5 $", "cost $5 $", nil, ""},
		{"unterminated", "${A", "${A", nil, "${A"},
		{"bad name", "${1A}", "${1A}", nil, "${1A}"},
		{"nested default", "${B:-${A}}", "${B:-${A}}", nil, "${B:-${A}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, missing, malformed := Expand(tc.in, lookup)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.missing, missing)
			require.Equal(t, tc.malformed, malformed)
		})
	}
}

func TestParseDefaultsAndExpansion(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	data := []byte(`{"mcp": {"servers": [
		{"name": "l", "type": "local", "command": ["run", "${DIR:-/tmp}"], "env": {"T": "${TOK}"}},
		{"name": "r", "type": "remote", "url": "https://h/mcp", "enabled": false, "timeout": 250, "headers": {"X": "${UNSET}"}}
	]}, "other": {"kept": true}}`)
	cfg, err := v.Parse("c.json", data, LoadOptions{LookupEnv: env(map[string]string{"TOK": "t"})})
	require.NoError(t, err, "an unset variable of a disabled server is not an error")
	require.Equal(t, DefaultPollInterval, cfg.MCP.PollInterval)
	l, r := cfg.MCP.Servers[0], cfg.MCP.Servers[1]
	require.Equal(t, []string{"run", "/tmp"}, l.Command)
	require.Equal(t, "t", l.Env["T"])
	require.True(t, l.Enabled)
	require.Equal(t, DefaultTimeout, l.Timeout)
	require.Equal(t, SourceUser, l.Source)
	require.False(t, r.Enabled)
	require.Equal(t, 250*time.Millisecond, r.Timeout)
	require.Equal(t, TransportAuto, r.Transport)

	_, err = v.Parse("c.json", []byte(`{"mcp":{"servers":[{"name":"r","type":"remote","url":"https://${H}/"}]}}`), LoadOptions{LookupEnv: env(nil)})
	var errs Errors
	require.ErrorAs(t, err, &errs)
	require.Len(t, errs, 1)
	require.Equal(t, "r", errs[0].Server)
	require.Equal(t, []string{"mcp", "servers", "0", "url"}, errs[0].Path)
}

func TestSpecHash(t *testing.T) {
	a := Server{Name: "a", Type: Local, Command: []string{"x"}, Env: map[string]string{"K": "1", "J": "2"}, Timeout: time.Second, Enabled: true, Source: SourceUser}
	b := a
	b.Enabled, b.Source = false, "project:/x"
	require.Equal(t, a.SpecHash(), b.SpecHash(), "enabled and source are not part of the spec")
	c := a
	c.Env = map[string]string{"K": "1", "J": "3"}
	require.NotEqual(t, a.SpecHash(), c.SpecHash())
	d := a
	d.Timeout = 2 * time.Second
	require.NotEqual(t, a.SpecHash(), d.SpecHash())
}

func TestLoadMissingFileIsEmpty(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	cfg, err := v.Load(filepath.Join(t.TempDir(), "none.json"), LoadOptions{})
	require.NoError(t, err)
	require.Empty(t, cfg.MCP.Servers)
}

func TestEditConcurrentInProcess(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "home", "config.json")
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for i := range 10 {
		wg.Go(func() {
			name := string(rune('a' + i))
			errs <- v.Edit(context.Background(), path, func(d *Doc) error {
				return d.AddServer([]Field{{"name", name}, {"type", "local"}, {"command", []string{"echo"}}})
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	cfg, err := v.Load(path, LoadOptions{})
	require.NoError(t, err)
	require.Len(t, cfg.MCP.Servers, 10)
}

func TestEditFollowsSymlink(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	dir := t.TempDir()
	real := filepath.Join(dir, "real.json")
	require.NoError(t, os.WriteFile(real, []byte("{\"model\": \"m\"}\n"), 0o600))
	link := filepath.Join(dir, "config.json")
	require.NoError(t, os.Symlink(real, link))
	require.NoError(t, v.Edit(context.Background(), link, func(d *Doc) error {
		return d.AddServer([]Field{{"name", "s"}, {"type", "local"}, {"command", []string{"echo"}}})
	}))
	fi, err := os.Lstat(link)
	require.NoError(t, err)
	require.Equal(t, os.ModeSymlink, fi.Mode().Type(), "the link stays a link")
	data, err := os.ReadFile(real)
	require.NoError(t, err)
	require.Contains(t, string(data), `"name": "s"`)
	require.Contains(t, string(data), `"model": "m"`)
}

func FuzzParseTree(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":[1,2,{"b":"c\u0041"}]}`, `[`, `{"a" 1}`, `"x"`, `-1.5e3`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseTree([]byte(s))
		// The tree parser accepts exactly what encoding/json accepts.
		require.Equal(t, json.Valid([]byte(s)), err == nil, "input %q: err %v", s, err)
		if err == nil {
			require.Equal(t, len(strings.TrimRight(s, " \t\r\n")), n.end)
		}
	})
}

func TestEditKeepsCRLFAndBOM(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	orig := "\xef\xbb\xbf{\r\n  \"model\": \"m\",\r\n  \"mcp\": {\r\n    \"servers\": [\r\n      {\"name\": \"a\", \"type\": \"local\", \"command\": [\"x\"]}\r\n    ]\r\n  }\r\n}\r\n"
	require.NoError(t, os.WriteFile(path, []byte(orig), 0o600))
	cfg, err := v.Load(path, LoadOptions{})
	require.NoError(t, err, "a byte order mark is accepted")
	require.Len(t, cfg.MCP.Servers, 1)
	require.NoError(t, v.Edit(context.Background(), path, func(d *Doc) error {
		return d.AddServer([]Field{{"name", "b"}, {"type", "local"}, {"command", []string{"y"}}})
	}))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), "\xef\xbb\xbf{\r\n"), "the mark is kept")
	require.NotRegexp(t, `[^\r]\n`, string(data), "every line still ends with CRLF")
	require.Contains(t, string(data), "\"name\": \"b\"")
	require.NoError(t, v.Edit(context.Background(), path, func(d *Doc) error { return d.RemoveServer("b") }))
	data, err = os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, orig, string(data), "add then remove gives the file back byte for byte")
}

func TestLookalikeTopLevelKeys(t *testing.T) {
	v, err := NewValidator()
	require.NoError(t, err)
	for _, doc := range []string{
		`{"Mcp": {"servers": [{"name": "a__b", "type": "local", "command": [""]}]}}`,
		`{"mcp": {"servers": []}, "MCP": 5}`,
		`{"Permission": {"allow": ["*"]}}`,
		`{"permiſſion": {"allow": ["write"]}}`,
	} {
		_, err := v.Parse("c.json", []byte(doc), LoadOptions{})
		var errs Errors
		require.ErrorAs(t, err, &errs, doc)
		require.Contains(t, errs[0].Msg, "is too close to", doc)
		require.Equal(t, 1, errs[0].Line, doc)
	}
	// Another tool's key that merely contains ours is fine.
	_, err = v.Parse("c.json", []byte(`{"mcpServers": {}, "permissions": []}`), LoadOptions{})
	require.NoError(t, err)
}
