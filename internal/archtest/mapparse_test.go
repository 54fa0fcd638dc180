// Package archtest checks that the import graph is the architecture. The
// architecture is one document, docs/architecture.md: its "Package map"
// section holds a table (package | owns | imports of ours) and, under it,
// the rules that go with the table (leaves, who speaks mcp-go, test and
// bench support). This package parses that section (ParseMap); its test
// compares it with `go list` of the module, so the page cannot drift from
// the code without failing the build.
package archtest

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// MapHeading is the heading of the section of docs/architecture.md that
// holds the package map.
const MapHeading = "## Package map"

// The labels of the rules listed under the table, as written in bold at
// the start of their bullet.
const (
	ruleLeaves  = "Leaves"
	ruleMCPGo   = "mcp-go"
	ruleSupport = "Test and bench support"
)

// Map is the package map as the document states it. Packages are named
// relative to the module, the root package as ".".
type Map struct {
	// Rows holds one entry per row of the table.
	Rows map[string]Row
	// Leaves import nothing of ours and may be imported by any package.
	Leaves []string
	// MCPGo are the only packages that may import mcp-go.
	MCPGo []string
	// Support are the test and bench support packages, which no product
	// package imports.
	Support []string
}

// Row is what one row of the table allows its package to import.
type Row struct {
	// Any is set by "anything" (or "*"): any package of ours.
	Any bool
	// Imports are the packages of ours it may import; nil with Any unset
	// means none ("—").
	Imports []string
	// Line is the row's line in the document (1-based), for messages.
	Line int
}

// Allows reports whether package from may import package to: its row says
// anything or names to, or to is a leaf. A package without a row may
// import nothing.
func (m Map) Allows(from, to string) bool {
	row, ok := m.Rows[from]
	if !ok {
		return false
	}
	return row.Any || slices.Contains(row.Imports, to) || slices.Contains(m.Leaves, to)
}

// Product reports whether name is a product package: neither a tool under
// cmd/ nor test or bench support.
func (m Map) Product(name string) bool {
	return !strings.HasPrefix(name, "cmd/") && !slices.Contains(m.Support, name)
}

// pkgPath is a package path relative to the module, or "." for the root.
var pkgPath = regexp.MustCompile(`^(\.|[a-z0-9][a-z0-9_-]*(/[a-z0-9][a-z0-9_-]*)*)$`)

// ParseMap reads the package map from doc, the text of
// docs/architecture.md: the section under MapHeading (up to the next
// heading of level 1 or 2), its first table, and the rule bullets after
// the table. It is strict so that a typo cannot quietly allow an import:
// every row has three cells, a package cell is one package in backquotes,
// an imports cell is "—", "anything", "*" or a comma-separated list of
// packages that have rows; the three rules are each present once and name
// packages that have rows; a leaf's row is "—"; a product package's row
// neither says anything nor names test or bench support. Every problem
// found is reported, each with its line.
func ParseMap(doc string) (Map, error) {
	lines := strings.Split(doc, "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == MapHeading })
	if start < 0 {
		return Map{}, fmt.Errorf("no %q section", MapHeading)
	}
	end := len(lines)
	for i := start + 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "# ") || strings.HasPrefix(lines[i], "## ") {
			end = i
			break
		}
	}
	p := parser{lines: lines, m: Map{Rows: map[string]Row{}}}
	i := start + 1
	for i < end && !strings.HasPrefix(strings.TrimSpace(lines[i]), "|") {
		i++
	}
	if i == end {
		return Map{}, fmt.Errorf("line %d: the %q section has no table", start+1, MapHeading)
	}
	i = p.table(i, end)
	p.rules(i, end)
	p.check()
	if err := errors.Join(p.errs...); err != nil {
		return Map{}, err
	}
	return p.m, nil
}

type parser struct {
	lines []string
	m     Map
	errs  []error
	// ruleLine is the line of each rule found (1-based).
	ruleLine map[string]int
}

func (p *parser) errorf(i int, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("line %d: "+format, append([]any{i + 1}, args...)...))
}

// table parses the table that starts at line i and returns the index of
// the first line after it.
func (p *parser) table(i, end int) int {
	head := cells(p.lines[i])
	if want := []string{"package", "owns", "imports of ours"}; !slices.EqualFunc(head, want, strings.EqualFold) {
		p.errorf(i, "the table's header is %q; want %q", head, want)
	}
	i++
	if i >= end || !isSeparator(p.lines[i]) {
		p.errorf(i, "the table's header is not followed by a | --- | --- | --- | line")
	} else {
		i++
	}
	for ; i < end && strings.HasPrefix(strings.TrimSpace(p.lines[i]), "|"); i++ {
		c := cells(p.lines[i])
		if len(c) != 3 {
			p.errorf(i, "a row has %d cells; want 3 (package | owns | imports of ours)", len(c))
			continue
		}
		name, ok := backquoted(c[0])
		if !ok || !pkgPath.MatchString(name) {
			p.errorf(i, "the package cell %q is not one package path in backquotes", c[0])
			continue
		}
		if prev, dup := p.m.Rows[name]; dup {
			p.errorf(i, "package %s has a second row (the first is on line %d)", name, prev.Line)
			continue
		}
		row := Row{Line: i + 1}
		switch imports := strings.TrimSpace(c[2]); imports {
		case "—":
		case "anything", "*":
			row.Any = true
		case "":
			p.errorf(i, "the imports cell of %s is empty; write — for none", name)
		default:
			for _, item := range strings.Split(imports, ",") {
				item = strings.TrimSpace(item)
				if unquoted, ok := backquoted(item); ok {
					item = unquoted
				}
				switch {
				case !pkgPath.MatchString(item) || item == "anything":
					p.errorf(i, "the imports cell of %s holds %q, which is not a package path (—, anything and * stand alone)", name, item)
				case item == name:
					p.errorf(i, "the imports cell of %s names itself", name)
				case slices.Contains(row.Imports, item):
					p.errorf(i, "the imports cell of %s names %s twice", name, item)
				default:
					row.Imports = append(row.Imports, item)
				}
			}
		}
		p.m.Rows[name] = row
	}
	if len(p.m.Rows) == 0 {
		p.errorf(i, "the table has no rows")
	}
	return i
}

// rules parses the bullets "- **<label>**: `a`, `b`. Prose…" between
// line i and end; a bullet continues on the indented lines after it.
func (p *parser) rules(i, end int) {
	p.ruleLine = map[string]int{}
	for ; i < end; i++ {
		if !strings.HasPrefix(p.lines[i], "- **") {
			continue
		}
		at := i
		text := p.lines[i]
		for i+1 < end && strings.HasPrefix(p.lines[i+1], "  ") {
			i++
			text += " " + strings.TrimSpace(p.lines[i])
		}
		label, rest, ok := strings.Cut(strings.TrimPrefix(text, "- **"), "**:")
		if !ok {
			p.errorf(at, "a rule bullet does not start with - **<rule>**:")
			continue
		}
		var dst *[]string
		switch label {
		case ruleLeaves:
			dst = &p.m.Leaves
		case ruleMCPGo:
			dst = &p.m.MCPGo
		case ruleSupport:
			dst = &p.m.Support
		default:
			p.errorf(at, "unknown rule %q; the rules are %q, %q and %q", label, ruleLeaves, ruleMCPGo, ruleSupport)
			continue
		}
		if prev, dup := p.ruleLine[label]; dup {
			p.errorf(at, "rule %q is given twice (first on line %d)", label, prev)
			continue
		}
		p.ruleLine[label] = at + 1
		list, ok := firstSentence(rest)
		if !ok {
			p.errorf(at, "rule %q: its list of packages does not end with a full stop", label)
			continue
		}
		for _, item := range strings.Split(list, ",") {
			name, ok := backquoted(strings.TrimSpace(item))
			if !ok || !pkgPath.MatchString(name) {
				p.errorf(at, "rule %q: %q is not a package path in backquotes", label, strings.TrimSpace(item))
				continue
			}
			*dst = append(*dst, name)
		}
	}
}

// check cross-checks the table and the rules once both are read.
func (p *parser) check() {
	for _, label := range []string{ruleLeaves, ruleMCPGo, ruleSupport} {
		if _, ok := p.ruleLine[label]; !ok {
			p.errs = append(p.errs, fmt.Errorf("no rule %q under the table (a bullet - **%s**: `pkg`, …. Why.)", label, label))
		}
	}
	names := make([]string, 0, len(p.m.Rows))
	for name := range p.m.Rows {
		names = append(names, name)
	}
	slices.Sort(names) // so that messages come in a stable order
	for _, name := range names {
		row := p.m.Rows[name]
		for _, dep := range row.Imports {
			if _, ok := p.m.Rows[dep]; !ok {
				p.errorf(row.Line-1, "%s may import %s, which has no row", name, dep)
			}
		}
		if slices.Contains(p.m.Leaves, name) && (row.Any || len(row.Imports) > 0) {
			p.errorf(row.Line-1, "%s is a leaf but its row allows imports; a leaf's row is —", name)
		}
		if !p.m.Product(name) {
			continue
		}
		if row.Any {
			p.errorf(row.Line-1, "%s is a product package and may not import anything: list what it imports", name)
		}
		for _, dep := range row.Imports {
			if slices.Contains(p.m.Support, dep) {
				p.errorf(row.Line-1, "%s is a product package and may not import %s, which is test or bench support", name, dep)
			}
		}
	}
	for label, list := range map[string][]string{ruleLeaves: p.m.Leaves, ruleMCPGo: p.m.MCPGo, ruleSupport: p.m.Support} {
		for _, name := range list {
			if _, ok := p.m.Rows[name]; !ok {
				p.errorf(p.ruleLine[label]-1, "rule %q names %s, which has no row", label, name)
			}
		}
	}
	slices.SortFunc(p.errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
}

// cells splits a table line into its trimmed cells; an escaped \| stays
// in its cell.
func cells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	if strings.HasSuffix(line, "|") && !strings.HasSuffix(line, `\|`) {
		line = line[:len(line)-1]
	}
	var out []string
	var cur strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cur.WriteByte('|')
			i++
		case line[i] == '|':
			out = append(out, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(line[i])
		}
	}
	return append(out, strings.TrimSpace(cur.String()))
}

var separatorCell = regexp.MustCompile(`^:?-{3,}:?$`)

func isSeparator(line string) bool {
	c := cells(line)
	return len(c) == 3 && !slices.ContainsFunc(c, func(s string) bool { return !separatorCell.MatchString(s) })
}

// backquoted returns s without its enclosing backquotes, if it is one
// code span.
func backquoted(s string) (string, bool) {
	if len(s) < 3 || s[0] != '`' || s[len(s)-1] != '`' || strings.Contains(s[1:len(s)-1], "`") {
		return "", false
	}
	return s[1 : len(s)-1], true
}

// firstSentence returns s up to the first full stop outside backquotes.
func firstSentence(s string) (string, bool) {
	inCode := false
	for i, r := range s {
		switch {
		case r == '`':
			inCode = !inCode
		case r == '.' && !inCode:
			return s[:i], true
		}
	}
	return "", false
}
