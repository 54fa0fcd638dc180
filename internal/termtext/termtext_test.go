package termtext

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestIsControl(t *testing.T) {
	for _, tc := range []struct {
		r    rune
		want bool
		name string
	}{
		{0x00, true, "NUL"},
		{'\t', true, "HT"},
		{'\n', true, "LF"},
		{'\r', true, "CR"},
		{0x1b, true, "ESC"},
		{0x1f, true, "US"},
		{' ', false, ""},
		{'~', false, ""},
		{0x7f, true, "DEL"},
		{0x80, true, "PAD"},
		{0x85, true, "NEL"},
		{0x9b, true, "CSI"},
		{0x9d, true, "OSC"},
		{0x9f, true, "APC"},
		{0xa0, false, ""}, // NBSP: not a control, but not Printable either
		{0x200e, false, ""},
		{0x2029, false, ""},
		{0x202a, true, "LRE"},
		{0x202c, true, "PDF"},
		{0x202e, true, "RLO"},
		{0x202f, false, ""},
		{0x2065, false, ""},
		{0x2066, true, "LRI"},
		{0x2068, true, "FSI"},
		{0x2069, true, "PDI"},
		{0x206a, false, ""},
		{'é', false, ""},
		{utf8.RuneError, false, ""},
		{-1, true, ""}, // not a rune at all
	} {
		require.Equal(t, tc.want, IsControl(tc.r), "IsControl(%U)", tc.r)
		require.Equal(t, tc.name, Name(tc.r), "Name(%U)", tc.r)
	}
	for r := rune(0); r < 0x3000; r++ {
		if IsControl(r) && r >= 0 {
			require.NotEmpty(t, Name(r), "every control has a name: %U", r)
		}
	}
}

func TestQuote(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "LANG=C", "LANG=C"},
		{"spaces and punctuation", "a b/c-d_e=f:'g'", "a b/c-d_e=f:'g'"},
		{"non-ASCII letters and symbols", "café ✓ 日本語 €", "café ✓ 日本語 €"},
		{"combining mark", "e\u0301", "e\u0301"},
		{"backslash alone stays", `C:\tools`, `C:\tools`},
		{"leading quote is quoted", `"x"`, `"\"x\""`},
		{"inner quote stays", `a"b`, `a"b`},
		// The attacks of the trust prompt: what hid text is now visible.
		{"hidden text", "LANG=C\x1b[8m LD_PRELOAD=/tmp/x.so", `"LANG=C\x1b[8m LD_PRELOAD=/tmp/x.so"`},
		{"erase line", "x\x1b[2Ktouch /tmp/p", `"x\x1b[2Ktouch /tmp/p"`},
		{"carriage return", "innocent\rtouch /tmp/p", `"innocent\rtouch /tmp/p"`},
		{"newline", "a\nb", `"a\nb"`},
		{"tab", "a\tb", `"a\tb"`},
		{"NUL", "a\x00", `"a\x00"`},
		{"DEL", "a\x7f", `"a\x7f"`},
		{"C1 CSI", "a\u009b2J", `"a\u009b2J"`},
		{"bidi override", "a\u202eb", `"a\u202eb"`},
		{"bidi isolate", "a\u2066b\u2069", `"a\u2066b\u2069"`},
		// Valid in a config (no control character), but not shown as it reads.
		{"zero-width space", "LANG=C\u200b", `"LANG=C\u200b"`},
		{"zero-width joiner", "a\u200db", `"a\u200db"`},
		{"left-to-right mark", "a\u200eb", `"a\u200eb"`},
		{"arabic letter mark", "a\u061cb", `"a\u061cb"`},
		{"no-break space", "LANG=C\u00a0X=1", `"LANG=C\u00a0X=1"`},
		{"ideographic space", "a\u3000b", `"a\u3000b"`},
		{"soft hyphen", "pass\u00adwd", `"pass\u00adwd"`},
		{"line separator", "a\u2028b", `"a\u2028b"`},
		{"byte order mark", "\ufeffx", `"\ufeffx"`},
		{"tag character", "a\U000e0041", `"a\U000e0041"`},
		{"private use", "a\ue000", `"a\ue000"`},
		{"unassigned", "a\U0010fffd", `"a\U0010fffd"`},
		{"invalid UTF-8", "a\xff\x9bb", `"a\xff\x9bb"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Quote(tc.in)
			require.Equal(t, tc.want, got)
			// A shown value that begins with a quote decodes back exactly;
			// any other is the value itself.
			if strings.HasPrefix(got, `"`) {
				back, err := strconv.Unquote(got)
				require.NoError(t, err)
				require.Equal(t, tc.in, back)
			} else {
				require.Equal(t, tc.in, got)
			}
			require.True(t, Printable(got), "the shown form is printable: %q", got)
		})
	}
}

func TestNeutralize(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "Returns its text argument.", "Returns its text argument."},
		{"newlines and tabs stay", "line 1\n\tline 2\n", "line 1\n\tline 2\n"},
		{"CRLF becomes LF", "a\r\nb\r\n", "a\nb\n"},
		{"lone CR is shown", "progress 10%\rprogress 100%", `progress 10%\rprogress 100%`},
		{"CR CR LF", "a\r\r\n", "a\\r\n"},
		{"trailing CR", "a\r", `a\r`},
		{"OSC 52 clipboard write", "x\x1b]52;c;dG91Y2ggL3RtcC9w\x07y", `x\x1b]52;c;dG91Y2ggL3RtcC9w\ay`},
		{"OSC 52 with ST", "\x1b]52;c;QQ==\x1b\\", `\x1b]52;c;QQ==\x1b\`},
		{"screen clear", "\x1b[2J\x1b[H", `\x1b[2J\x1b[H`},
		{"hidden text", "\x1b[8msecret\x1b[0m", `\x1b[8msecret\x1b[0m`},
		{"other C0", "\x00\x01\x08\x0b\x0c\x1f", `\x00\x01\b\v\f\x1f`},
		{"DEL", "a\x7fb", `a\x7fb`},
		{"C1 controls", "\u0080\u0085\u009b2J\u009d52;\u009c", `\u0080\u0085\u009b2J\u009d52;\u009c`},
		{"bidi override", "access\u202e\u2066 if admin\u2069\u2066", `access\u202e\u2066 if admin\u2069\u2066`},
		{"invalid UTF-8 (a raw 8-bit CSI)", "a\x9b2Jb\xff", `a\x9b2Jb\xff`},
		{"truncated rune", "a\xe2\x80", `a\xe2\x80`},
		{"non-ASCII text stays", "日本語 ✓ café \u200b \u00a0 \u200e", "日本語 ✓ café \u200b \u00a0 \u200e"},
		{"replacement character stays", "a\ufffdb", "a\ufffdb"},
		{"backslash stays", `C:\x1b`, `C:\x1b`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Neutralize(tc.in)
			require.Equal(t, tc.want, got)
			requireSafe(t, got)
			require.Equal(t, got, Neutralize(got), "idempotent")
		})
	}
}

// requireSafe fails if s holds anything a terminal could act on.
func requireSafe(t *testing.T, s string) {
	t.Helper()
	require.True(t, utf8.ValidString(s), "valid UTF-8: %q", s)
	for i, r := range s {
		if r != '\n' && r != '\t' {
			require.False(t, IsControl(r), "%U at byte %d of %q", r, i, s)
		}
	}
}

func TestNeutralizeEveryRune(t *testing.T) {
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue
		}
		s := "a" + string(r) + "b"
		got := Neutralize(s)
		if r == '\n' || r == '\t' || !IsControl(r) {
			if got != s {
				t.Fatalf("Neutralize(%q) = %q, want it unchanged", s, got)
			}
			continue
		}
		if want := strconv.Quote(s); `"`+got+`"` != want {
			t.Fatalf("Neutralize(%q) = %q, want the escape of strconv.Quote %s", s, got, want)
		}
	}
}

func TestNeutralizeNoCopy(t *testing.T) {
	s := strings.Repeat("plain text\n", 100)
	require.Zero(t, testing.AllocsPerRun(10, func() { _ = Neutralize(s) }))
}

func TestEscapeJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"plain", `{"a": "b"}`, `{"a": "b"}`},
		{"indentation stays", "{\n  \"a\": [\n    1\n  ]\n}\n", "{\n  \"a\": [\n    1\n  ]\n}\n"},
		{"C0 already escaped", `"\u001b[2J"`, `"\u001b[2J"`},
		{"DEL", "\"a\x7fb\"", `"a\u007fb"`},
		{"C1", "\"\u009b2J \u0085\"", `"\u009b2J \u0085"`},
		{"bidi", "{\"k\u202e\": \"v\u2066\"}", `{"k\u202e": "v\u2066"}`},
		{"non-ASCII stays", `"日本語 ✓ ` + "\u200b" + `"`, `"日本語 ✓ ` + "\u200b" + `"`},
		{"invalid byte", "\"a\x9bb\"", `"a\ufffdb"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(EscapeJSON([]byte(tc.in)))
			require.Equal(t, tc.want, got)
			var before, after any
			if json.Unmarshal([]byte(tc.in), &before) == nil {
				require.NoError(t, json.Unmarshal([]byte(got), &after))
				require.Equal(t, before, after, "the same value to a JSON reader")
			}
			requireSafe(t, strings.NewReplacer("\n", "", " ", "").Replace(got))
		})
	}
}

func TestEscapeJSONMarshalled(t *testing.T) {
	// Everything encoding/json leaves raw comes out escaped; the value stays.
	var b strings.Builder
	for r := rune(0); r < 0x2100; r++ {
		b.WriteRune(r)
	}
	in := map[string]string{"all": b.String()}
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	out := EscapeJSON(raw)
	requireSafe(t, string(out))
	var back map[string]string
	require.NoError(t, json.Unmarshal(out, &back))
	require.Equal(t, in, back)
}

func FuzzNeutralize(f *testing.F) {
	for _, s := range []string{"", "a\r\nb", "\x1b]52;c;QQ==\a", "\u202e\u009b\x7f", "\xff\xe2\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Neutralize(s)
		requireSafe(t, got)
		if got != Neutralize(got) {
			t.Fatalf("not idempotent: %q -> %q -> %q", s, got, Neutralize(got))
		}
		q := Quote(s)
		if !Printable(q) {
			t.Fatalf("Quote(%q) = %q is not printable", s, q)
		}
		if strings.HasPrefix(q, `"`) {
			if back, err := strconv.Unquote(q); err != nil || back != s {
				t.Fatalf("Quote(%q) = %q does not decode back (%q, %v)", s, q, back, err)
			}
		} else if q != s {
			t.Fatalf("Quote(%q) = %q changed a value it did not quote", s, q)
		}
		js, _ := json.Marshal(s)
		out := EscapeJSON(js)
		requireSafe(t, string(out))
		var a, b string
		if err := json.Unmarshal(js, &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &b); err != nil || a != b {
			t.Fatalf("EscapeJSON(%s) = %s changed the value (%v)", js, out, err)
		}
	})
}

func TestElide(t *testing.T) {
	short := `{"path":"a.txt"}`
	require.Equal(t, short, Elide(short, 500))

	// Padding, then what matters: the end is shown and the size announced.
	long := `{"pad":"` + strings.Repeat("x", 12000) + `","cmd":"touch /tmp/pwned"}`
	got := Elide(long, 500)
	require.True(t, strings.HasSuffix(got, `","cmd":"touch /tmp/pwned"}`), got)
	require.True(t, strings.HasPrefix(got, `{"pad":"xxx`), got)
	require.Contains(t, got, "…(12,035 bytes; 11,535 not shown)…")

	// Cuts at rune boundaries only.
	runes := strings.Repeat("é", 100)
	got = Elide(runes, 21)
	require.True(t, utf8.ValidString(got), got)
	head, rest, ok := strings.Cut(got, "…(")
	require.True(t, ok)
	_, tail, ok := strings.Cut(rest, ")…")
	require.True(t, ok)
	require.Contains(t, got, "(200 bytes; "+GroupDigits(200-len(head)-len(tail))+" not shown)")
}

func TestGroupDigits(t *testing.T) {
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 12345: "12,345", 1234567: "1,234,567", -4500: "-4,500"} {
		require.Equal(t, want, GroupDigits(n))
	}
}

func TestShellWord(t *testing.T) {
	for in, want := range map[string]string{
		"test://text/0":       "test://text/0",
		"a-b_c.d,e+f=g@h%i":   "a-b_c.d,e+f=g@h%i",
		"":                    "''",
		"a b":                 "'a b'",
		"x;touch /tmp/pwned":  "'x;touch /tmp/pwned'",
		"$(id)":               "'$(id)'",
		"it's":                `'it'\''s'`,
		"file:///tmp/a`id`":   "'file:///tmp/a`id`'",
		"~/x":                 "'~/x'",
		"*":                   "'*'",
		"test://x';touch y;'": `'test://x'\'';touch y;'\'''`,
	} {
		require.Equal(t, want, ShellWord(in), in)
	}
	require.Equal(t, "freecode mcp read ts 'a b'", ShellCommand("freecode", "mcp", "read", "ts", "a b"))
}
