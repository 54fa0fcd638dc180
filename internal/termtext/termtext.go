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
// Two renderings, both using the escapes of Go string literals (\r, \x1b,
// \u202e; an invalid UTF-8 byte as \xNN):
//
//   - [Quote] is for one configured value: printable text is shown as is,
//     anything else as a double-quoted Go string literal, so whatever was
//     hidden is in plain sight.
//   - [Neutralize] is for multi-line text from a server: newlines and tabs
//     stay, every [IsControl] character (and each invalid byte) is replaced
//     by its escape, everything else is shown as is.
//
// [EscapeJSON] does the same for JSON output without changing what the JSON
// means.
package termtext

import (
	"strconv"
	"strings"
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

// Printable reports whether s is shown on a terminal exactly as it reads:
// valid UTF-8 whose every rune is printable by [strconv.IsPrint] — letters,
// marks, numbers, punctuation, symbols and the ASCII space. Controls, tabs,
// other spaces (U+00A0, U+2000…), format characters (zero-width space and
// joiners, U+200E LRM, U+00AD soft hyphen, U+FEFF), separators, private-use
// and unassigned code points are not.
func Printable(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		if !strconv.IsPrint(r) {
			return false
		}
		i += size
	}
	return true
}

// Quote renders one configured value (a command argument, an env or header
// entry, a url) for display. It returns s itself when s is [Printable] and
// does not begin with a double quote; otherwise s as a double-quoted Go
// string literal ([strconv.Quote]: \r, \t, \x1b, \u200b, \xNN for an
// invalid byte). So a shown value that begins with `"` is always such a
// literal, strconv.Unquote gives back the exact value, and text a terminal
// would hide or reorder is visible as escapes: "LANG=C\x1b[8m…".
func Quote(s string) string {
	if Printable(s) && (s == "" || s[0] != '"') {
		return s
	}
	return strconv.Quote(s)
}

// Neutralize renders text a server chose (a tool title or description, a
// call result, a stderr line, an error that quotes one) so that no terminal
// acts on it. Newlines and tabs are kept, and so is the CR of a CRLF line
// ending (a CR directly before a LF cannot overwrite anything); every other
// [IsControl] character becomes its Go escape (\r, \x1b, \x7f, \u009b,
// \u202e) and every invalid UTF-8 byte \xNN. Everything else, including
// non-ASCII text, is kept as is. The result is for display: a backslash in
// the text is not escaped, so it does not always decode back.
func Neutralize(s string) string {
	i := firstUnsafe(s)
	if i < 0 {
		return s
	}
	b := make([]byte, 0, len(s)+16)
	b = append(b, s[:i]...)
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = appendByteEscape(b, s[i])
		case r == '\r' && i+1 < len(s) && s[i+1] == '\n':
			// A CRLF line ending: the LF alone ends the line.
		case r == '\n' || r == '\t' || !IsControl(r):
			b = append(b, s[i:i+size]...)
		default:
			b = appendRuneEscape(b, r)
		}
		i += size
	}
	return string(b)
}

// firstUnsafe returns the index of the first byte Neutralize changes, or -1.
func firstUnsafe(s string) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < ' ' && c != '\n' && c != '\t' || c == 0x7f {
				return i
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || IsControl(r) {
			return i
		}
		i += size
	}
	return -1
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
	}
	if r < utf8.RuneSelf {
		return appendByteEscape(b, byte(r))
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
