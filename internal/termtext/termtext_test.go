package termtext

import (
	"encoding/json"
	"fmt"
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
		{"non-ASCII letters and symbols", "café ✓ 日本語 € ñ Ελλάδα", "café ✓ 日本語 € ñ Ελλάδα"},
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
		// Printable to Unicode, but blank or invisible on a terminal.
		{"braille blank", "\u2800\u2800sh", `"\u2800\u2800sh"`},
		{"hangul filler", "a\u3164b", `"a\u3164b"`},
		{"hangul choseong and jungseong fillers", "\u115f\u1160", `"\u115f\u1160"`},
		{"halfwidth hangul filler", "a\uffa0", `"a\uffa0"`},
		{"en quad to hair space", "a\u2000\u2005\u200ab", `"a\u2000\u2005\u200ab"`},
		{"zero-width non-joiner and right-to-left mark", "a\u200c\u200fb", `"a\u200c\u200fb"`},
		{"word joiner and invisible operators", "a\u2060\u2062\u2064b", `"a\u2060\u2062\u2064b"`},
		{"mongolian vowel separator", "a\u180eb", `"a\u180eb"`},
		{"combining grapheme joiner", "a\u034fb", `"a\u034fb"`},
		{"khmer inherent vowel", "a\u17b4b", `"a\u17b4b"`},
		{"variation selector", "a\ufe0fb", `"a\ufe0fb"`},
		{"mongolian variation selector", "a\u180bb", `"a\u180bb"`},
		{"variation selector supplement", "a\U000e0100b", `"a\U000e0100b"`},
		{"tag space and cancel", "a\U000e0020\U000e007f", `"a\U000e0020\U000e007f"`},
		{"lone combining mark", "\u0301sh", `"\u0301sh"`},
		{"combining mark after a space stays", "a \u0301", "a \u0301"},
		{"four marks stay", "e\u0301\u0302\u0303\u0304", "e\u0301\u0302\u0303\u0304"},
		{"zalgo", "e" + strings.Repeat("\u0301", 30), `"e` + strings.Repeat("\u0301", 4) + strings.Repeat(`\u0301`, 26) + `"`},
		{"mark after an escape", "a\u2800\u0301", `"a\u2800\u0301"`},
		{"mark on a quote that is escaped", "\"\u0301x", `"\"\u0301x"`},
		{"mark on a quote that is not", "a\"\u0301", "a\"\u0301"},
		{"emoji", "😀 👍🏽", "😀 👍🏽"},
		{"emoji with variation selector", "❤\ufe0f ☺\ufe0e", "❤\ufe0f ☺\ufe0e"},
		{"emoji zero-width joiner sequence", "👩\u200d💻 👩🏽\u200d💻 ❤\ufe0f\u200d🔥", "👩\u200d💻 👩🏽\u200d💻 ❤\ufe0f\u200d🔥"},
		{"two variation selectors", "❤\ufe0f\ufe0f", `"❤` + "\ufe0f" + `\ufe0f"`},
		{"joiner at the end", "👩\u200d", `"👩\u200d"`},
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
		{"non-ASCII text stays", "日本語 ✓ café e\u0301 \ue000 \U0010fffd", "日本語 ✓ café e\u0301 \ue000 \U0010fffd"},
		{"emoji stay", "😀 ❤\ufe0f 👩\u200d💻 👍🏽 ☺\ufe0e", "😀 ❤\ufe0f 👩\u200d💻 👍🏽 ☺\ufe0e"},
		// Printable to Unicode, but blank or invisible on a terminal.
		{"braille blank", "a\u2800\u2800b", `a\u2800\u2800b`},
		{"hangul fillers", "\u3164\u115f\u1160\uffa0", `\u3164\u115f\u1160\uffa0`},
		{"spaces other than U+0020", "a\u00a0\u2000\u200a\u3000b", `a\u00a0\u2000\u200a\u3000b`},
		{"zero-width and format", "a\u200b\u200d\u200e\u2060\u2064\ufeff\u180e\u00adb", `a\u200b\u200d\u200e\u2060\u2064\ufeff\u180e\u00adb`},
		{"variation selectors", "a\ufe00\ufe0f\U000e0100 ☺\ufe0f\ufe0f", `a\ufe00\ufe0f\U000e0100 ☺` + "\ufe0f" + `\ufe0f`},
		{"tag characters", "a\U000e0001\U000e0041\U000e007f", `a\U000e0001\U000e0041\U000e007f`},
		{"lone combining mark", "\u0301x\n\u20dd", `\u0301x` + "\n" + `\u20dd`},
		{"stacked combining marks", "e" + strings.Repeat("\u0301", 6) + "f", "e" + strings.Repeat("\u0301", 4) + `\u0301\u0301f`},
		{"mark after an escape", "\u2800\u0301", `\u2800\u0301`},
		{"joiner not between pictographs", "👩\u200dx", `👩\u200dx`},
		{"replacement character stays", "a\ufffdb", "a\ufffdb"},
		{"backslash stays", `C:\x1b`, `C:\x1b`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Neutralize(tc.in)
			require.Equal(t, tc.want, got)
			requireSafe(t, got)
			requireShown(t, got)
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

// requireShown fails if s holds a character that shows blank or not at all
// (but in an emoji).
func requireShown(t *testing.T, s string) {
	t.Helper()
	for i, r := range s {
		if r != 0x200d && r != 0xfe0e && r != 0xfe0f {
			require.False(t, IsHidden(r), "%U at byte %d of %q", r, i, s)
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
		if r == '\n' || r == '\t' || !IsControl(r) && !IsHidden(r) {
			if got != s {
				t.Fatalf("Neutralize(%q) = %q, want it unchanged", s, got)
			}
			continue
		}
		if !IsControl(r) { // hidden
			want := fmt.Sprintf(`a\u%04xb`, r)
			if r > 0xffff {
				want = fmt.Sprintf(`a\U%08xb`, r)
			}
			if got != want {
				t.Fatalf("Neutralize(%q) = %q, want %s", s, got, want)
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

func TestIsHidden(t *testing.T) {
	for _, tc := range []struct {
		class string
		runes []rune
		want  bool
	}{
		{"ASCII", []rune{' ', 'a', '~', '\t'}, false},
		{"letters, symbols, marks", []rune{'é', '日', '✓', '€', 0x0301, 0x1f600, 0x2801}, false},
		{"braille pattern blank", []rune{0x2800}, true},
		{"hangul fillers", []rune{0x115f, 0x1160, 0x3164, 0xffa0}, true},
		{"other blanks", []rune{0x16fe4, 0x1d159}, true},
		{"spaces but U+0020", []rune{0xa0, 0x1680, 0x2000, 0x2005, 0x200a, 0x202f, 0x205f, 0x3000}, true},
		{"line and paragraph separators", []rune{0x2028, 0x2029}, true},
		{"zero-width and marks", []rune{0x200b, 0x200c, 0x200d, 0x200e, 0x200f}, true},
		{"word joiner and invisible operators", []rune{0x2060, 0x2061, 0x2062, 0x2063, 0x2064}, true},
		{"byte order mark, soft hyphen, arabic letter mark", []rune{0xfeff, 0xad, 0x61c}, true},
		{"mongolian vowel separator", []rune{0x180e}, true},
		{"default ignorable marks", []rune{0x034f, 0x17b4, 0x17b5}, true},
		{"variation selectors", []rune{0x180b, 0x180f, 0xfe00, 0xfe0f, 0xe0100, 0xe01ef}, true},
		{"tag characters", []rune{0xe0001, 0xe0020, 0xe0041, 0xe007f}, true},
		{"bidi controls", []rune{0x202e, 0x2066}, true},
	} {
		for _, r := range tc.runes {
			require.Equal(t, tc.want, IsHidden(r), "%s: IsHidden(%U)", tc.class, r)
			if tc.want {
				require.False(t, Printable(string(r)), "%s: Printable(%U)", tc.class, r)
				require.False(t, Printable("a"+string(r)), "%s: Printable(a%U)", tc.class, r)
			}
		}
	}
}

// TestPrintableMarks: a combining mark shows as it reads only on a base
// character, and only the first four on one.
func TestPrintableMarks(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"e\u0301", true},
		{"\u0301", false},
		{"\u0301e", false},
		{"a\u20dd", true},
		{"e\u0301\u0302\u0303\u0304", true},
		{"e\u0301\u0302\u0303\u0304\u0305", false},
		{"e\u0301 e\u0301\u0302\u0303\u0304", true},
		{"क्षि", true},    // Devanagari: virama and vowel sign on their consonants
		{"שָׁלוֹם", true}, // Hebrew points
		{"Tiếng Việt", true},
	} {
		require.Equal(t, tc.want, Printable(tc.in), "Printable(%q)", tc.in)
	}
}

// TestQuoteCut: what the user reads of one value is bounded, whatever it
// holds, and says how much was left out.
func TestQuoteCut(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		limit    int
		want     string
	}{
		{"short stays", "npx", 10, "npx"},
		{"exactly the limit", "abcde", 5, "abcde"},
		{"printable cut", "abcdefgh", 5, "abcde…(3 more characters)"},
		{"counts characters, not bytes", "日本語日本語", 2, "日本…(4 more characters)"},
		{"braille blanks", strings.Repeat("\u2800", 2400), 20, `"\u2800\u2800\u2800"…(2397 more characters)`},
		{"escape not split", "\u2800\u2800", 9, `"\u2800"…(1 more characters)`},
		{"quoted and short", "a\u200bb", 20, `"a\u200bb"`},
		{"quote counts", `"x"`, 20, `"\"x\""`},
		{"tiny limit", "\u2800", 1, `""…(1 more characters)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := QuoteCut(tc.in, tc.limit)
			require.Equal(t, tc.want, got)
			shown, _, _ := strings.Cut(got, "…(")
			require.LessOrEqual(t, utf8.RuneCountInString(shown), max(tc.limit, 2))
			if strings.HasPrefix(shown, `"`) {
				back, err := strconv.Unquote(shown)
				require.NoError(t, err)
				require.True(t, strings.HasPrefix(tc.in, back))
			}
		})
	}
	long := strings.Repeat("x", 5000)
	require.Equal(t, Quote(long), long)
	require.Equal(t, strings.Repeat("x", 200)+"…(4800 more characters)", QuoteCut(long, 200))
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
