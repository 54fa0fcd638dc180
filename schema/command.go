package schema

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/google/shlex"
)

// FreeCode's "command" is one list: the program, then its arguments. Other
// hosts (Claude Code, Claude Desktop, Cursor) write a string "command" and
// a list "args", and people write the whole command line as one string or
// as one item of the list. The functions here turn each of these shapes
// into the list to write instead, so that an error or a warning can show it.

// SplitCommand splits a command line written as one string into its words,
// as a shell would (quotes respected, no expansion). ok is false when the
// line cannot be split (an unterminated quote) or holds no word.
func SplitCommand(line string) (words []string, ok bool) {
	words, err := shlex.Split(line)
	if err != nil || len(words) == 0 {
		return nil, false
	}
	return words, true
}

// RenderCommand is a command list as JSON on one line, as the config file
// holds it: ["npx", "-y", "pkg"].
func RenderCommand(words []string) string { return renderValue(words) }

// stringsOf returns the strings of a list node, or ok false when n is no
// list of strings.
func stringsOf(n *node) (out []string, ok bool) {
	if n == nil || n.kind != '[' {
		return nil, false
	}
	for _, el := range n.elems {
		if el.kind != '"' {
			return nil, false
		}
		out = append(out, el.str)
	}
	return out, true
}

// hostStyleCommand is the command list a server entry means when it is
// written as other hosts write it: a string "command" (split when it holds
// the whole line) followed by the strings of "args". ok is false unless
// the entry has that shape: a string command, or an "args" list.
func hostStyleCommand(entry *node) (words []string, ok bool) {
	cmd, args := entry.member("command"), entry.member("args")
	switch {
	case cmd != nil && cmd.kind == '"':
		if words, ok = SplitCommand(cmd.str); !ok {
			return nil, false
		}
	case cmd != nil && cmd.kind == '[':
		if words, ok = stringsOf(cmd); !ok {
			return nil, false
		}
	default:
		return nil, false
	}
	if args == nil {
		return words, cmd.kind == '"'
	}
	rest, ok := stringsOf(args)
	if !ok {
		if args.kind != '"' {
			return nil, false
		}
		// "args": "-y pkg": a line, not a list.
		if rest, ok = SplitCommand(args.str); !ok {
			return nil, false
		}
	}
	return append(words, rest...), true
}

// commandShapeMessage is the error of a local server entry whose command
// is written as another host writes it (hostStyleCommand), at field
// ("command" or "args"); "" when the entry has no such shape. With both a
// string command and "args" only the command's error is said (nil
// message for args, ok true) so that the fix is given once.
func commandShapeMessage(entry *node, field string) (msg string, ok bool) {
	words, ok := hostStyleCommand(entry)
	if !ok {
		return "", false
	}
	cmd, args := entry.member("command"), entry.member("args")
	want := `"command": ` + RenderCommand(words)
	switch {
	case field == "args" && cmd.kind == '"':
		return "", true // said at command
	case args != nil:
		return fmt.Sprintf(`FreeCode has no "args": the command is one list of the program and its arguments; write it as one list, %s, and delete "args"`, want), true
	default:
		return fmt.Sprintf("command must be a list of the program and its arguments, not one string; write it as one list, %s", want), true
	}
}

// CommandWarning says when the program of a local server's command
// (command[0]) holds whitespace and names no file that exists: most likely
// the whole command line written as one item, ["npx -y pkg"], which passes
// the schema and then fails to start. It is a warning, not an error: a
// program's path may hold a space. A path whose first word is no file
// either is only a missing path (the start says so). lookPath finds a
// program without a "/" as the server's start would ($PATH); "" when
// there is nothing to say.
func CommandWarning(command []string, lookPath func(string) bool) string {
	if len(command) == 0 || !strings.ContainsFunc(command[0], unicode.IsSpace) {
		return ""
	}
	prog := command[0]
	if strings.ContainsRune(prog, '/') {
		if _, err := os.Stat(prog); err == nil {
			return ""
		}
	} else if lookPath(prog) {
		return ""
	}
	words, ok := SplitCommand(prog)
	if !ok || len(words) < 2 {
		return ""
	}
	if strings.ContainsRune(words[0], '/') {
		// "/opt/my tools/server" that is missing is a missing path, not
		// a command line: only split when the first word is a program.
		if _, err := os.Stat(words[0]); err != nil {
			return ""
		}
	}
	words = append(words, command[1:]...)
	return fmt.Sprintf("the program %s holds spaces and no such file exists: the whole command line seems to be one item; write each word as its own item, %s",
		quote(prog), `"command": `+RenderCommand(words))
}

// pathLookup returns a lookPath for CommandWarning that searches the PATH
// lookup gives.
func pathLookup(lookup func(string) (string, bool)) func(string) bool {
	return func(prog string) bool {
		path, _ := lookup("PATH")
		for _, dir := range filepath.SplitList(path) {
			if dir == "" {
				dir = "."
			}
			if fi, err := os.Stat(filepath.Join(dir, prog)); err == nil && !fi.IsDir() {
				return true
			}
		}
		return false
	}
}
