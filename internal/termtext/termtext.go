// Package termtext makes text safe to print on a terminal.
//
// A terminal acts on some characters instead of showing them: ESC starts
// sequences that clear the screen, hide text (ESC[8m), erase a line
// (ESC[2K) or write the clipboard (OSC 52, ESC]52;…); a carriage return
// moves back to overwrite what was shown; C1 controls (U+0080–U+009F, e.g.
// U+009B CSI) act like ESC sequences on some terminals; and the Unicode
// bidirectional overrides and isolates reorder what is shown. Text a user
// is asked to judge (a command line they trust) or that a server chose (a
// tool description, a call result, stderr) must not be able to do that.
//
// Text can also hide without any control character: some characters that
// Unicode counts as printable show as a blank or as nothing at all (U+2800
// BRAILLE PATTERN BLANK, U+3164 HANGUL FILLER, variation selectors), and
// combining marks without a base character, or stacked by the dozen, draw
// over their neighbours. A few thousand blanks push what follows off the
// screen, and aligned with spaces they draw any text the sender likes.
// [IsHidden] and the rule on combining marks (see [Printable]) name them.
//
// Two renderings, both using the escapes of Go string literals (\r, \x1b,
// \u202e, \u2800, \U000e0041; an invalid UTF-8 byte as \xNN):
//
//   - [Quote] is for one configured value: text that shows as it reads is
//     shown as is, anything else as a double-quoted Go string literal, so
//     whatever was hidden is in plain sight. [QuoteCut] also bounds it.
//   - [Neutralize] is for multi-line text from a server: newlines and tabs
//     stay, every [IsControl] or [IsHidden] character, every combining mark
//     without a base (or past the fourth on one) and each invalid byte is
//     replaced by its escape, everything else is shown as is.
//
// [EscapeJSON] does the same for JSON output without changing what the JSON
// means.
package termtext

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// IsControl reports whether r is a character a terminal may act on instead
// of showing, or that reorders the text around it: a C0 control (U+0000–
// U+001F), DEL (U+007F), a C1 control (U+0080–U+009F), or a bidirectional
// override or isolate (U+202A–U+202E, U+2066–U+2069).
func IsControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || IsBidi(r)
}

// IsBidi reports whether r is a bidirectional override or isolate
// (U+202A–U+202E LRE RLE PDF LRO RLO, U+2066–U+2069 LRI RLI FSI PDI): the
// controls that make a terminal show text in another order than it is read.
func IsBidi(r rune) bool {
	return (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
}

var c0Names = [...]string{
	"NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS", "HT", "LF", "VT", "FF", "CR", "SO", "SI",
	"DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB", "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
}

var c1Names = [...]string{
	"PAD", "HOP", "BPH", "NBH", "IND", "NEL", "SSA", "ESA", "HTS", "HTJ", "VTS", "PLD", "PLU", "RI", "SS2", "SS3",
	"DCS", "PU1", "PU2", "STS", "CCH", "MW", "SPA", "EPA", "SOS", "SGCI", "SCI", "CSI", "ST", "OSC", "PM", "APC",
}

var bidiNames = map[rune]string{
	0x202a: "LRE", 0x202b: "RLE", 0x202c: "PDF", 0x202d: "LRO", 0x202e: "RLO",
	0x2066: "LRI", 0x2067: "RLI", 0x2068: "FSI", 0x2069: "PDI",
}

// Name returns the usual abbreviation of an [IsControl] character ("ESC",
// "CR", "DEL", "CSI", "RLO", …), or "" for any other rune.
func Name(r rune) string {
	switch {
	case r >= 0 && r < 0x20:
		return c0Names[r]
	case r == 0x7f:
		return "DEL"
	case r >= 0x80 && r <= 0x9f:
		return c1Names[r-0x80]
	}
	return bidiNames[r]
}

// blanks are printable characters (letters and symbols to
// [strconv.IsPrint]) that show as an empty cell: U+2800 BRAILLE PATTERN
// BLANK, U+16FE4 KHITAN SMALL SCRIPT FILLER, U+1D159 MUSICAL SYMBOL NULL
// NOTEHEAD. (The Hangul fillers U+115F, U+1160, U+3164 and U+FFA0 are
// default-ignorable, so listed by Unicode.) Never modified.
var blanks = &unicode.RangeTable{
	R16: []unicode.Range16{{Lo: 0x2800, Hi: 0x2800, Stride: 1}},
	R32: []unicode.Range32{{Lo: 0x16fe4, Hi: 0x16fe4, Stride: 1}, {Lo: 0x1d159, Hi: 0x1d159, Stride: 1}},
}

// IsHidden reports whether r shows as a blank or as nothing, so that text
// holding it does not read as what it is: every space but U+0020 (U+00A0,
// U+2000–U+200A, U+3000, …), the line and paragraph separators, every
// format character (U+00AD soft hyphen, U+180E, U+200B–U+200F zero-width
// space, joiners and marks, U+2060–U+2064, U+FEFF, tags U+E0000–U+E007F),
// every other default-ignorable code point (U+034F, U+115F, U+1160, U+3164,
// U+FFA0 Hangul fillers, …), the variation selectors (U+180B–U+180F,
// U+FE00–U+FE0F, U+E0100–U+E01EF) and printable blanks such as U+2800
// BRAILLE PATTERN BLANK. (The bidirectional controls are format characters
// too.)
func IsHidden(r rune) bool {
	if r < utf8.RuneSelf {
		return false
	}
	return unicode.In(r, unicode.Zs, unicode.Zl, unicode.Zp, unicode.Cf,
		unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector, blanks)
}

// maxMarks is how many combining marks one base character may carry and
// still be shown as is: enough for any language (a Vietnamese or Hebrew
// letter carries two or three), too few to stack over the lines around.
const maxMarks = 4

// zwj is U+200D ZERO WIDTH JOINER, which joins pictographs into one emoji.
const zwj = 0x200d

// shower decides, character by character, what a rendering shows as is. It
// remembers what the characters shown so far allow next: a combining mark
// needs a base, one of at most maxMarks; a variation selector U+FE0E or
// U+FE0F (text or emoji style) may follow a pictograph, and a zero-width
// joiner may stand between two, so that emoji stay readable.
type shower struct {
	// keepUnprintable shows private-use and unassigned code points as is
	// (Neutralize); Quote escapes every rune strconv.IsPrint refuses.
	keepUnprintable bool
	marks           int  // marks on the last base character shown; -1 when there is none
	pict            bool // the last character shown ends a pictograph: a joiner may follow
	vsAfter         bool // the last character shown is a pictograph: a variation selector may follow
}

func newShower(keepUnprintable bool) shower {
	return shower{keepUnprintable: keepUnprintable, marks: -1}
}

// isPict reports whether r can start or end an emoji: a symbol (So) or a
// skin-tone modifier.
func isPict(r rune) bool {
	return unicode.Is(unicode.So, r) || (r >= 0x1f3fb && r <= 0x1f3ff)
}

// show reports whether r, followed by next (-1 at the end), is shown as is,
// and records it. For any other rune the caller shows an escape.
func (sh *shower) show(r, next rune) bool {
	switch {
	case (r == 0xfe0e || r == 0xfe0f) && sh.vsAfter:
		sh.vsAfter = false
		return true
	case r == zwj && sh.pict && isPict(next):
		sh.reset()
		return true
	case IsControl(r) || IsHidden(r) || !sh.keepUnprintable && !strconv.IsPrint(r):
		sh.reset()
		return false
	case unicode.IsMark(r):
		if sh.marks < 0 || sh.marks >= maxMarks {
			sh.reset() // what follows an escape has no base either
			return false
		}
		sh.marks++
		sh.pict, sh.vsAfter = false, false
		return true
	}
	sh.base(isPict(r))
	return true
}

// base records a base character shown; pict says it is a pictograph.
func (sh *shower) base(pict bool) {
	sh.marks, sh.pict, sh.vsAfter = 0, pict, pict
}

// reset records that no base character precedes: the start of a line, or
// an escape.
func (sh *shower) reset() {
	sh.marks, sh.pict, sh.vsAfter = -1, false, false
}

// nextRune is the rune starting s, or -1 when s is empty.
func nextRune(s string) rune {
	if s == "" {
		return -1
	}
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

// Printable reports whether s is shown on a terminal exactly as it reads:
// valid UTF-8 whose every rune is printable by [strconv.IsPrint] — letters,
// marks, numbers, punctuation, symbols and the ASCII space — and not
// [IsHidden], and whose every combining mark follows a base character that
// carries at most four. Controls, tabs, other spaces (U+00A0, U+2000…),
// format characters (zero-width space and joiners, U+200E LRM, U+00AD soft
// hyphen, U+FEFF), printable blanks (U+2800, U+3164), variation selectors,
// separators, private-use and unassigned code points are not; a variation
// selector U+FE0F after a pictograph and a zero-width joiner between two
// (emoji such as ❤️ and 👩‍💻) are.
func Printable(s string) bool {
	sh := newShower(false)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		if !sh.show(r, nextRune(s[i+size:])) {
			return false
		}
		i += size
	}
	return true
}

// Quote renders one configured value (a command argument, an env or header
// entry, a url) for display. It returns s itself when s is [Printable] and
// does not begin with a double quote; otherwise s as a double-quoted Go
// string literal (\r, \t, \x1b, \u200b, \u2800, \U000e0041, \xNN for
// an invalid byte) in which every character that would not show as it
// reads is escaped, not only those [strconv.Quote] escapes. So a shown
// value that begins with `"` is always such a literal, strconv.Unquote
// gives back the exact value, and text a terminal would hide or reorder is
// visible as escapes: "LANG=C\x1b[8m…", "\u2800\u2800…".
func Quote(s string) string {
	if Printable(s) && (s == "" || s[0] != '"') {
		return s
	}
	b, _ := appendQuoted(make([]byte, 0, len(s)+16), s, -1)
	return string(b)
}

// QuoteCut is [Quote] bounded: at most limit characters of the rendering
// are shown (an escape counts as the characters it is written with, the
// quotes too), and what is left out of s is counted after it:
// `abc…(2400 more characters)`, `"\u2800\u2800"…(2398 more characters)`. A
// quoted rendering keeps its closing quote, so it decodes to the part shown.
func QuoteCut(s string, limit int) string {
	if Printable(s) && (s == "" || s[0] != '"') {
		n, i := 0, 0
		for i < len(s) && n < limit {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			n++
		}
		return s[:i] + CutNote(s[i:])
	}
	b, rest := appendQuoted(make([]byte, 0, min(len(s), limit)+24), s, limit)
	return string(b) + CutNote(rest)
}

// CutNote says how much of a value was left out, rest: "" for nothing.
func CutNote(rest string) string {
	if rest == "" {
		return ""
	}
	return "…(" + strconv.Itoa(utf8.RuneCountInString(rest)) + " more characters)"
}

// appendQuoted appends s as a double-quoted Go string literal with every
// character escaped that would not show as it reads. With limit >= 0 it
// stops before the rendering would pass limit characters and returns the
// part of s left out.
func appendQuoted(b []byte, s string, limit int) ([]byte, string) {
	b = append(b, '"')
	n := 2 // characters of the rendering, with both quotes
	sh := newShower(false)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		mark, w := len(b), 0 // w: characters r is rendered with
		switch {
		case r == utf8.RuneError && size == 1:
			b = appendByteEscape(b, s[i])
			sh.reset()
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
			sh.reset()
		case sh.show(r, nextRune(s[i+size:])):
			b = append(b, s[i:i+size]...)
			w = 1
		default:
			b = appendRuneEscape(b, r)
		}
		if w == 0 {
			w = len(b) - mark // escapes are ASCII
		}
		if limit >= 0 && n+w > limit {
			return append(b[:mark], '"'), s[i:]
		}
		n += w
		i += size
	}
	return append(b, '"'), ""
}

// Neutralize renders text a server chose (a tool title or description, a
// call result, a stderr line, an error that quotes one) so that no terminal
// acts on it and nothing in it hides. Newlines and tabs are kept, and so is
// the CR of a CRLF line ending (a CR directly before a LF cannot overwrite
// anything); every other [IsControl] character and every [IsHidden] one
// becomes its Go escape (\r, \x1b, \x7f, \u009b, \u202e, \u2800,
// \U000e0041), and so does a combining mark with no base character before
// it or past the fourth on one; every invalid UTF-8 byte becomes \xNN.
// Everything else, including non-ASCII text, emoji, private-use and
// unassigned code points, is kept as is. The result is for display: a
// backslash in the text is not escaped, so it does not always decode back.
func Neutralize(s string) string {
	var b []byte // nil until something changes
	last := 0    // s[last:i] is not yet in b
	sh := newShower(true)
	for i := 0; i < len(s); {
		if c := s[i]; c > ' ' && c < 0x7f || c == ' ' {
			sh.base(false)
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		invalid := r == utf8.RuneError && size == 1
		crlf := r == '\r' && i+1 < len(s) && s[i+1] == '\n'
		switch {
		case invalid || crlf:
			sh.reset()
		case r == '\n' || r == '\t':
			sh.reset()
			i += size
			continue
		case sh.show(r, nextRune(s[i+size:])):
			i += size
			continue
		}
		if b == nil {
			b = make([]byte, 0, len(s)+16)
		}
		b = append(b, s[last:i]...)
		switch {
		case invalid:
			b = appendByteEscape(b, s[i])
		case crlf:
			// A CRLF line ending: the LF alone ends the line.
		default:
			b = appendRuneEscape(b, r)
		}
		i += size
		last = i
	}
	if b == nil {
		return s
	}
	return string(append(b, s[last:]...))
}

// EscapeJSON returns the JSON text b with every DEL, C1 control and
// bidirectional override or isolate inside its strings written as a \uXXXX
// escape, and every invalid UTF-8 byte as \ufffd (what encoding/json makes
// of one). A JSON reader gets the same value; a terminal showing the text
// gets nothing to act on. (encoding/json already escapes C0 controls.) b
// must be valid JSON apart from its encoding; it is returned unchanged when
// nothing needs escaping.
func EscapeJSON(b []byte) []byte {
	var out []byte
	last := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf && c != 0x7f {
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		invalid := r == utf8.RuneError && size == 1 // written as \ufffd
		if !invalid && !IsControl(r) {
			i += size
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b)+16)
		}
		out = append(out, b[last:i]...)
		out = append(out, `\u`...)
		out = appendHex(out, uint32(r), 4)
		i += size
		last = i
	}
	if out == nil {
		return b
	}
	return append(out, b[last:]...)
}

const hexDigits = "0123456789abcdef"

func appendHex(b []byte, v uint32, digits int) []byte {
	for shift := (digits - 1) * 4; shift >= 0; shift -= 4 {
		b = append(b, hexDigits[v>>uint(shift)&0xf])
	}
	return b
}

func appendByteEscape(b []byte, c byte) []byte {
	return appendHex(append(b, `\x`...), uint32(c), 2)
}

// appendRuneEscape writes r as strconv.Quote would.
func appendRuneEscape(b []byte, r rune) []byte {
	switch r {
	case '\a':
		return append(b, `\a`...)
	case '\b':
		return append(b, `\b`...)
	case '\f':
		return append(b, `\f`...)
	case '\r':
		return append(b, `\r`...)
	case '\v':
		return append(b, `\v`...)
	case '\n':
		return append(b, `\n`...)
	case '\t':
		return append(b, `\t`...)
	}
	if r < utf8.RuneSelf {
		return appendByteEscape(b, byte(r))
	}
	if r > 0xffff {
		return appendHex(append(b, `\U`...), uint32(r), 8)
	}
	return appendHex(append(b, `\u`...), uint32(r), 4)
}

// Elide returns s when it is at most n bytes long; otherwise its first
// and last bytes (about three fifths and two fifths of n, cut at rune
// boundaries) around a marker that says how much was left out:
//
//	{"path":"a.txt","pad":"xxxx…(12,345 bytes; 11,845 not shown)…","cmd":"touch /tmp/x"}
//
// so a shortened text is never taken for the whole: whatever was hidden
// between padding is announced, and the end of the text is always shown.
// n below 16 is taken as 16.
func Elide(s string, n int) string {
	n = max(n, 16)
	if len(s) <= n {
		return s
	}
	head := n * 3 / 5
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	tail := len(s) - (n - head)
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	hidden := tail - head
	return s[:head] + "…(" + GroupDigits(len(s)) + " bytes; " + GroupDigits(hidden) + " not shown)…" + s[tail:]
}

// GroupDigits writes n in decimal with a comma between groups of three
// digits: 12345 is "12,345".
func GroupDigits(n int) string {
	s := strconv.Itoa(n)
	neg := ""
	if n < 0 {
		neg, s = "-", s[1:]
	}
	var b []byte
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return neg + string(b)
}

// ShellWord renders s as one word of a POSIX shell command line that reads
// back as s: as it is when it holds only characters no shell acts on
// (letters, digits and _ . / : = @ % + , -), else in single quotes, where
// each single quote of s ends the quoted part, is written \' and starts
// the next one. Nothing in a single-quoted word is
// expanded, so a command printed for pasting (a resource's URI, a path)
// runs nothing of what it holds. Controls stay as they are: show the
// command line through Neutralize.
func ShellWord(s string) string {
	if s != "" && strings.Trim(s, shellSafe) == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

const shellSafe = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:=@%+,-"

// ShellCommand renders words as a POSIX shell command line, each word as
// ShellWord renders it.
func ShellCommand(words ...string) string {
	out := make([]string, len(words))
	for i, w := range words {
		out[i] = ShellWord(w)
	}
	return strings.Join(out, " ")
}
