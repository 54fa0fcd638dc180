package hosts

import (
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
)

// syntax is how a host writes references in its config's strings.
type syntax int

const (
	// literalText: the host expands nothing (Claude Desktop, Codex).
	literalText syntax = iota
	// dollarBrace: ${VAR} and ${VAR:-default}, as FreeCode (Claude Code).
	dollarBrace
	// vscodeVars: ${env:VAR}, ${input:id}, ${userHome},
	// ${workspaceFolder}, ${workspaceFolderBasename}, ${pathSeparator} and
	// ${/} (VS Code, Cursor).
	vscodeVars
	// geminiVars: $VAR, ${VAR} and ${VAR:-default} (Gemini CLI).
	geminiVars
	// opencodeVars: {env:VAR} and {file:path} (OpenCode).
	opencodeVars
	// genericVars: FreeCode's own ${VAR} and ${VAR:-default}, and
	// ${env:VAR} (a snippet of any host, given to add-json).
	genericVars
)

// translator rewrites one server's strings into FreeCode's syntax: the
// host's references as ${VAR}, every other "$" that FreeCode would read
// as the start of a reference escaped as "$$".
type translator struct {
	syn syntax
	// workspace is the directory ${workspaceFolder} stands for; "" when
	// the file belongs to no workspace (a user-level file).
	workspace string
	// inputs are VS Code's input descriptions by id.
	inputs map[string]string
	// notes collects what was translated; unsupported, the first
	// reference FreeCode has no equivalent for (the server is skipped).
	notes       []string
	unsupported string
}

// text translates s.
func (t *translator) text(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if t.syn == opencodeVars && c == '{' {
			if out, n, ok := t.opencodeRef(s[i:]); ok {
				b.WriteString(out)
				i += n - 1
				continue
			}
		}
		if c != '$' {
			b.WriteByte(c)
			continue
		}
		if i+1 < len(s) && s[i+1] == '{' {
			if end := strings.IndexByte(s[i:], '}'); end > 0 {
				if out, ok := t.braced(s[i+2 : i+end]); ok {
					b.WriteString(out)
					i += end
					continue
				}
			}
		}
		if t.syn == geminiVars && i+1 < len(s) && isVarStart(s[i+1]) {
			j := i + 1
			for j < len(s) && isVarChar(s[j]) {
				j++
			}
			b.WriteString("${" + s[i+1:j] + "}")
			i = j - 1
			continue
		}
		// A literal "$": FreeCode reads "${" and "$$" specially.
		if i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '$') {
			b.WriteString("$$")
		} else {
			b.WriteByte('$')
		}
	}
	return b.String()
}

// braced translates the reference ${inner}; ok is false when the host
// reads it as literal text.
func (t *translator) braced(inner string) (string, bool) {
	switch t.syn {
	case dollarBrace, geminiVars, genericVars:
		name, def, hasDef := strings.Cut(inner, ":-")
		if validVar(name) && (!hasDef || !strings.ContainsAny(def, "${}")) {
			return "${" + inner + "}", true
		}
		if kind, arg, _ := strings.Cut(inner, ":"); t.syn == genericVars && kind == "env" {
			if name, def, hasDef := strings.Cut(arg, ":-"); validVar(name) && (!hasDef || !strings.ContainsAny(def, "${}")) {
				return "${" + arg + "}", true
			}
		}
		return "", false
	case vscodeVars:
		kind, arg, _ := strings.Cut(inner, ":")
		switch {
		case kind == "env" && validVar(arg):
			return "${" + arg + "}", true
		case kind == "input" && arg != "":
			v := inputVar(arg)
			what := ""
			if d := t.inputs[arg]; d != "" {
				what = fmt.Sprintf(" (%s)", quote(d))
			}
			t.note(fmt.Sprintf("${input:%s}%s, which VS Code asks for, became ${%s}: set %s where freecode runs", arg, what, v, v))
			return "${" + v + "}", true
		case inner == "userHome":
			return "${HOME}", true
		case inner == "pathSeparator" || inner == "/":
			return "/", true
		case (inner == "workspaceFolder" || inner == "workspaceFolderBasename") && t.workspace != "":
			dir := t.workspace
			if inner == "workspaceFolderBasename" {
				dir = filepath.Base(dir)
			}
			return escapeLiteral(dir), true
		}
		t.unsupport(fmt.Sprintf("it uses ${%s}, which FreeCode cannot resolve here", inner))
		return "${" + inner + "}", true
	}
	return "", false
}

// opencodeRef translates an OpenCode reference at the start of s: n is
// how many bytes it took.
func (t *translator) opencodeRef(s string) (out string, n int, ok bool) {
	end := strings.IndexByte(s, '}')
	if end < 0 {
		return "", 0, false
	}
	kind, arg, _ := strings.Cut(s[1:end], ":")
	switch {
	case kind == "env" && validVar(arg):
		return "${" + arg + "}", end + 1, true
	case kind == "file":
		t.unsupport("it reads a value from a file ({file:...}), which FreeCode does not; put the value in an environment variable and write ${VAR}")
		return s[:end+1], end + 1, true
	}
	return "", 0, false
}

func (t *translator) note(n string) {
	for _, have := range t.notes {
		if have == n {
			return
		}
	}
	t.notes = append(t.notes, n)
}

func (t *translator) unsupport(why string) {
	if t.unsupported == "" {
		t.unsupported = why
	}
}

// escapeLiteral escapes text that no host expands for FreeCode.
func escapeLiteral(s string) string {
	return (&translator{syn: literalText}).text(s)
}

// inputVar is the environment variable a VS Code input id becomes:
// "api-key" is API_KEY.
func inputVar(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToUpper(r))
		default:
			b.WriteByte('_')
		}
	}
	v := b.String()
	if v == "" || !isVarStart(v[0]) {
		v = "INPUT_" + v
	}
	return v
}

func validVar(n string) bool {
	if n == "" || !isVarStart(n[0]) {
		return false
	}
	for i := 1; i < len(n); i++ {
		if !isVarChar(n[i]) {
			return false
		}
	}
	return true
}

func isVarStart(c byte) bool { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') }
func isVarChar(c byte) bool  { return isVarStart(c) || (c >= '0' && c <= '9') }
