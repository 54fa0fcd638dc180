package mcp

import (
	"unicode/utf8"

	"github.com/freecode/freecode/internal/termtext"
)

// MaxInstructionsBytes bounds the server instructions a session keeps
// (the instructions of the initialize result, or of server/discover on
// 2026-07-28): a server chooses them, and hosts put them in front of a
// model and a user, so a longer text is cut there, marked with "…".
const MaxInstructionsBytes = 2048

// cleanInstructions is what a session keeps of a server's instructions:
// cut to MaxInstructionsBytes on a character boundary, then made safe to
// show (termtext.Neutralize: newlines and tabs kept, every other control
// character and bidirectional override escaped).
func cleanInstructions(s string) string {
	if len(s) > MaxInstructionsBytes {
		n := MaxInstructionsBytes
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return termtext.Neutralize(s)
}

// Instructions are the server's instructions of how to use it, as the
// session keeps them (see cleanInstructions); "" when it sent none.
func (s *Session) Instructions() string { return s.instructions }
