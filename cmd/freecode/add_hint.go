package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/freecode/freecode/internal/termtext"
)

// A local server's command typed unquoted after `mcp add <name> local`
// (npx -y pkg) is read by cobra: -y is taken for a flag of freecode's,
// and the words for too many arguments. The functions here rebuild the
// command line the user typed in the two forms that work, so that the
// error can show it to copy.

// addCommandHint is the advice for the `mcp add` command line args (as
// given to freecode, without the program name) whose words after the
// type were not taken as the server's command; "" when args is no such
// line. c is the add command, whose flags (and the inherited ones) are
// freecode's; every other word is the server's.
func addCommandHint(c *cobra.Command, args []string) string {
	at := -1
	for i := 1; i < len(args); i++ {
		if args[i] == "add" && args[i-1] == "mcp" {
			at = i
			break
		}
	}
	if at < 0 {
		return ""
	}
	var ours, words []string
	rest := args[at+1:]
	for i := 0; i < len(rest); i++ {
		w := rest[i]
		f := ownFlag(c, w)
		if f == nil {
			words = append(words, w)
			continue
		}
		ours = append(ours, w)
		if f.NoOptDefVal == "" && !strings.Contains(w, "=") && i+1 < len(rest) {
			i++
			ours = append(ours, rest[i])
		}
	}
	if len(words) < 3 || words[1] != "local" || slices.Contains(words, "--") {
		return ""
	}
	head := slices.Concat([]string{"freecode"}, args[:at+1], words[:2], ours)
	dashed := slices.Concat(head, []string{"--"}, words[2:])
	hint := fmt.Sprintf("the words after \"local\" are the server's command; put them after -- so that freecode reads none of them:\n  %s", termtext.ShellCommand(dashed...))
	// Quoted as one argument the command is split again (shlex): offered
	// only when no word needs quotes of its own, which would nest.
	line := strings.Join(words[2:], " ")
	if termtext.ShellCommand(words[2:]...) == line {
		hint += "\nor quote the command as one argument:\n  " + termtext.ShellCommand(slices.Concat(head, []string{line})...)
	}
	return hint
}

// ownFlag is the flag of c (its own or inherited) that the word w sets,
// or nil when w sets none: a flag freecode does not know is the server's.
func ownFlag(c *cobra.Command, w string) *pflag.Flag {
	switch {
	case strings.HasPrefix(w, "--") && len(w) > 2:
		name, _, _ := strings.Cut(w[2:], "=")
		return c.Flags().Lookup(name)
	case strings.HasPrefix(w, "-") && len(w) == 2:
		return c.Flags().ShorthandLookup(w[1:])
	}
	return nil
}
