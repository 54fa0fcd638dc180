package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// The reference of every command is docs/commands.md: one section per
// command, headed "### <command path>" (### freecode mcp tools) with the
// usage line first, in backticks. These tests keep it in step with the
// commands cobra really has, and keep the links between the documents
// pointing somewhere.

const commandsDoc = "docs/commands.md"

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// docSection is one "### freecode ..." section of docs/commands.md.
type docSection struct {
	line int      // of the heading, 1-based
	body []string // the lines after the heading, up to the next heading of level 3 or less
}

// fenceLine reports whether a line opens or closes a fenced code block.
func fenceLine(l string) bool {
	return strings.HasPrefix(strings.TrimSpace(l), "```")
}

var headingRE = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// commandSections reads the "### freecode ..." sections of doc. A heading
// inside a code block is not one.
func commandSections(t *testing.T, doc string) map[string]*docSection {
	t.Helper()
	sections := map[string]*docSection{}
	var cur *docSection
	fence := false
	for i, l := range strings.Split(doc, "\n") {
		if fenceLine(l) {
			fence = !fence
		}
		if !fence {
			if m := headingRE.FindStringSubmatch(l); m != nil && len(m[1]) <= 3 {
				cur = nil
				if len(m[1]) == 3 && (m[2] == "freecode" || strings.HasPrefix(m[2], "freecode ")) {
					if prev, ok := sections[m[2]]; ok {
						t.Errorf("%s:%d: a second section %q (the first is at line %d): merge them", commandsDoc, i+1, "### "+m[2], prev.line)
						continue
					}
					cur = &docSection{line: i + 1}
					sections[m[2]] = cur
				}
				continue
			}
		}
		if cur != nil {
			cur.body = append(cur.body, l)
		}
	}
	return sections
}

// mentions reports whether text names the flag spelled opt (--json, -v) as
// a whole word: --json does not count for --json-lines, nor -v for --verbose.
func mentions(text, opt string) bool {
	re := regexp.MustCompile(`(^|[^A-Za-z0-9-])` + regexp.QuoteMeta(opt) + `([^A-Za-z0-9-]|$)`)
	return re.MatchString(text)
}

// documentedCommands is every command the docs must describe: all but the
// hidden ones, cobra's own help and completion commands, and groups that
// run nothing and take no flags of their own (freecode mcp).
func documentedCommands(root *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || (c.HasParent() && (c.Name() == "help" || c.Name() == "completion")) {
			return
		}
		if c == root || c.Runnable() || len(docFlags(c)) > 0 {
			out = append(out, c)
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return out
}

// docFlags is the flags a command's section must name: its own (persistent
// ones it defines included, inherited ones not), without hidden ones and
// without --help.
func docFlags(c *cobra.Command) []*pflag.Flag {
	var out []*pflag.Flag
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		out = append(out, f)
	})
	return out
}

func TestDocsCommands(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, commandsDoc))
	if err != nil {
		t.Fatal(err)
	}
	sections := commandSections(t, string(raw))
	a := &app{}
	root := a.rootCmd()
	known := map[string]bool{}
	for _, c := range documentedCommands(root) {
		path := c.CommandPath()
		known[path] = true
		sec, ok := sections[path]
		if !ok {
			t.Errorf("%s has no section for %q: add a heading %q with the usage line below it (%q) and what the command does", commandsDoc, path, "### "+path, "`"+c.UseLine()+"`")
			continue
		}
		where := fmt.Sprintf("%s:%d (section %q)", commandsDoc, sec.line, "### "+path)
		first := ""
		for _, l := range sec.body {
			if strings.TrimSpace(l) != "" {
				first = l
				break
			}
		}
		if !strings.HasPrefix(first, "`"+path) {
			t.Errorf("%s: the first line under the heading must be the usage line, starting with %q; write e.g. %q", where, "`"+path, "`"+c.UseLine()+"`")
		}
		body := strings.Join(sec.body, "\n")
		for _, f := range docFlags(c) {
			if !mentions(body, "--"+f.Name) {
				t.Errorf("%s does not mention --%s (%s): add it to the usage line and say what it does", where, f.Name, f.Usage)
			}
			if f.Shorthand != "" && !mentions(body, "-"+f.Shorthand) {
				t.Errorf("%s does not mention -%s, the short form of --%s: add it beside --%s (e.g. `-%s|--%s` in the usage line)", where, f.Shorthand, f.Name, f.Name, f.Shorthand, f.Name)
			}
		}
		if c.HasParent() {
			for _, alias := range c.Aliases {
				full := c.Parent().CommandPath() + " " + alias
				if !strings.Contains(body, full) {
					t.Errorf("%s does not name the alias %q: add it beside the usage line, e.g. (alias `%s`)", where, full, full)
				}
			}
		}
	}
	var stale []string
	for path := range sections {
		if !known[path] {
			stale = append(stale, path)
		}
	}
	sort.Strings(stale)
	for _, path := range stale {
		t.Errorf("%s:%d: section %q names no command of freecode: remove it or fix the command path", commandsDoc, sections[path].line, "### "+path)
	}
}

// TestDocsCommandsCheck makes sure the check above catches what it is for:
// a command whose flag the section leaves out, and a command with no section.
func TestDocsCommandsCheck(t *testing.T) {
	doc := "# Commands\n\n### freecode mcp tools\n\n`freecode mcp tools <name> [--all] [-v|--verbose]`\n\n```\n### freecode mcp call\n```\n\n## Next\n\n--json is not in the section.\n"
	sections := commandSections(t, doc)
	sec, ok := sections["freecode mcp tools"]
	if !ok || len(sections) != 1 {
		t.Fatalf("sections = %v, want only freecode mcp tools (a heading in a code block is no section)", sections)
	}
	body := strings.Join(sec.body, "\n")
	for opt, want := range map[string]bool{"--all": true, "-v": true, "--verbose": true, "--json": false, "--al": false} {
		if got := mentions(body, opt); got != want {
			t.Errorf("mentions(section, %q) = %v, want %v", opt, got, want)
		}
	}
}

var linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// slug is the anchor GitHub makes of a heading: markup dropped, lower case,
// letters, digits, _ and - kept, spaces made -, anything else dropped.
func slug(heading string) string {
	heading = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsNumber(r), r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// anchors is every heading anchor of a Markdown file, the repeats numbered
// as GitHub numbers them (x, x-1, x-2).
func anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	fence := false
	for _, l := range strings.Split(doc, "\n") {
		if fenceLine(l) {
			fence = !fence
			continue
		}
		m := headingRE.FindStringSubmatch(l)
		if fence || m == nil {
			continue
		}
		s := slug(m[2])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// TestDocsLinks checks every relative link of README.md and docs/*.md: the
// file it names exists and, for a Markdown file, so does the heading its
// #anchor names.
func TestDocsLinks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(repoRoot, "README.md")}, files...)
	cache := map[string]map[string]bool{}
	anchorsOf := func(file string) (map[string]bool, error) {
		if a, ok := cache[file]; ok {
			return a, nil
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		cache[file] = anchors(string(raw))
		return cache[file], nil
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(repoRoot, file)
		fence := false
		for i, l := range strings.Split(string(raw), "\n") {
			if fenceLine(l) {
				fence = !fence
			}
			if fence {
				continue
			}
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: the link %q points at %s, which does not exist", name, i+1, target, path)
						continue
					}
				}
				if anchor == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				a, err := anchorsOf(dest)
				if err != nil {
					t.Errorf("%s:%d: %v", name, i+1, err)
					continue
				}
				if !a[anchor] {
					destName, _ := filepath.Rel(repoRoot, dest)
					t.Errorf("%s:%d: the link %q names #%s, which is no heading of %s", name, i+1, target, anchor, destName)
				}
			}
		}
	}
}
