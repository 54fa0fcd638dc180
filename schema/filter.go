package schema

import (
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ToolFilter is a server's "tools" object: which of its tools FreeCode
// registers, by the server's own tool names. Patterns use the syntax of
// path.Match and must match the whole name. An empty Include keeps every
// tool; Exclude wins over Include. The zero value hides nothing.
//
// A filter is not part of Server.SpecHash: a changed filter re-registers
// the tools of the running session instead of restarting the server.
type ToolFilter struct {
	Include []string `json:"include,omitempty"`
	Exclude []string `json:"exclude,omitempty"`
}

// IsZero reports whether f hides nothing by construction.
func (f ToolFilter) IsZero() bool { return len(f.Include) == 0 && len(f.Exclude) == 0 }

// Key identifies what f does: two filters with one Key hide the same
// tools. Its empty value is the zero filter's.
func (f ToolFilter) Key() string {
	if f.IsZero() {
		return ""
	}
	var b strings.Builder
	for _, p := range f.Include {
		b.WriteString("+" + strconv.Quote(p))
	}
	for _, p := range f.Exclude {
		b.WriteString("-" + strconv.Quote(p))
	}
	return b.String()
}

// Hides reports whether f hides the tool called name, and why, in the
// words `mcp tools --all` shows: `tools.exclude "delete_*"` or
// `tools.include, no pattern matches`. Patterns were checked when the
// config was loaded (CheckGlob); one that is malformed anyway matches
// nothing.
func (f ToolFilter) Hides(name string) (reason string, hidden bool) {
	for _, p := range f.Exclude {
		if ok, _ := path.Match(p, name); ok {
			return "tools.exclude " + strconv.Quote(p), true
		}
	}
	if len(f.Include) == 0 {
		return "", false
	}
	for _, p := range f.Include {
		if ok, _ := path.Match(p, name); ok {
			return "", false
		}
	}
	return "tools.include, no pattern matches", true
}

// CheckGlob says what is wrong with pattern p of a tools filter, or nil.
func CheckGlob(p string) error {
	if _, err := path.Match(p, ""); err != nil {
		return fmt.Errorf("%q is not a valid pattern (%w); patterns use Go's path.Match syntax: * any run of characters but /, ? one character, [a-z] a class, \\* a literal *", p, err)
	}
	return nil
}

// toolFilterErrors checks the patterns of server i's filter f.
func toolFilterErrors(file string, lines *lineIndex, root *node, i int, f ToolFilter) Errors {
	var errs Errors
	for _, list := range []struct {
		key  string
		pats []string
	}{{"include", f.Include}, {"exclude", f.Exclude}} {
		for j, p := range list.pats {
			if err := CheckGlob(p); err != nil {
				e := &Error{File: file, Path: []string{"mcp", "servers", strconv.Itoa(i), "tools", list.key, strconv.Itoa(j)}, Msg: err.Error()}
				locate(e, lines, root)
				errs = append(errs, e)
			}
		}
	}
	return errs
}
