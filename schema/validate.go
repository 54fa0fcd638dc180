package schema

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	cuejson "cuelang.org/go/encoding/json"

	freecode "github.com/freecode/freecode"
)

// Error is one problem in a config file, positioned at the offending value.
type Error struct {
	File      string
	Line, Col int      // 1-based; 0 when unknown
	Path      []string // JSON path, e.g. ["mcp", "servers", "0", "comand"]
	Server    string   // the server the problem belongs to, if any
	Msg       string   // plain-words reason
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if p := FormatPath(e.Path); p != "" {
		b.WriteString(p)
		if e.Server != "" {
			fmt.Fprintf(&b, " (server %q)", e.Server)
		}
		b.WriteString(": ")
	} else if e.Server != "" {
		fmt.Fprintf(&b, "server %q: ", e.Server)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one file, in file order.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// FormatPath renders a JSON path as mcp.servers[0].command[1].
func FormatPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			fmt.Fprintf(&b, "[%s]", p)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p)
	}
	return b.String()
}

// Validator checks documents against the embedded config.cue. It is safe for
// concurrent use; the CUE runtime behind it is not, so mu serializes it.
type Validator struct {
	mu     sync.Mutex
	ctx    *cue.Context
	def    cue.Value // #Config
	server cue.Value // #Server
}

// NewValidator compiles the embedded schema.
func NewValidator() (*Validator, error) {
	ctx := cuecontext.New()
	v := ctx.CompileString(freecode.ConfigSchema(), cue.Filename("config.cue"))
	if err := v.Err(); err != nil {
		return nil, fmt.Errorf("compile config.cue: %w", err)
	}
	def := v.LookupPath(cue.ParsePath("#Config"))
	if err := def.Err(); err != nil {
		return nil, fmt.Errorf("config.cue: #Config: %w", err)
	}
	return &Validator{ctx: ctx, def: def, server: v.LookupPath(cue.ParsePath("#Server"))}, nil
}

// check parses data and validates it against the schema. It returns the
// syntax tree (nil on a syntax error) and every problem found, positioned.
func (v *Validator) check(file string, data []byte) (*node, Errors) {
	root, err := parseTree(data)
	if err != nil {
		var se *SyntaxError
		if errors.As(err, &se) {
			return nil, Errors{{File: file, Line: se.Line, Col: se.Col, Msg: "invalid JSON: " + se.Msg}}
		}
		return nil, Errors{{File: file, Msg: "invalid JSON: " + err.Error()}}
	}
	if root.kind != '{' {
		return nil, Errors{{File: file, Line: 1, Col: 1, Msg: "the config must be a JSON object"}}
	}
	errs := duplicateKeys(file, data, root, nil)
	errs = append(errs, lookalikeKeys(file, data, root)...)
	// CUE reports duplicate names as a conflict in a hidden field; ours name
	// both entries.
	errs = append(errs, duplicateServers(file, data, root)...)

	expr, err := cuejson.Extract(file, data)
	if err != nil {
		return nil, Errors{{File: file, Msg: "invalid JSON: " + err.Error()}}
	}
	type located struct {
		prefix []string
		err    cueerrors.Error
	}
	var cerrs []located
	v.mu.Lock()
	doc := v.ctx.BuildExpr(expr)
	if err := v.def.Unify(doc).Validate(cue.Concrete(true), cue.All()); err != nil {
		for _, ce := range cueerrors.Errors(err) {
			cerrs = append(cerrs, located{nil, ce})
		}
	}
	// CUE stops at some errors per struct; checking each server on its own
	// as well finds the rest. Duplicates are dropped below.
	if servers := root.member("mcp").member("servers"); servers != nil && servers.kind == '[' {
		for i := range servers.elems {
			prefix := []string{"mcp", "servers", strconv.Itoa(i)}
			el := doc.LookupPath(cue.MakePath(cue.Str("mcp"), cue.Str("servers"), cue.Index(i)))
			if err := v.server.Unify(el).Validate(cue.Concrete(true), cue.All()); err != nil {
				for _, ce := range cueerrors.Errors(err) {
					cerrs = append(cerrs, located{prefix, ce})
				}
			}
		}
	}
	v.mu.Unlock()

	seen := map[string]bool{}
	for _, lc := range cerrs {
		ce := lc.err
		path := ce.Path()
		if len(path) > 0 && (path[0] == "#Config" || path[0] == "#Server") {
			path = path[1:]
		}
		path = append(slices.Clone(lc.prefix), path...)
		if slices.Contains(path, "_byName") {
			continue // reported by duplicateServers
		}
		format, args := ce.Msg()
		e := explain(root, path, fmt.Sprintf(format, args...))
		key := strings.Join(e.Path, "\x00") + "\x00" + e.Msg
		if seen[key] {
			continue
		}
		seen[key] = true
		e.File = file
		locate(e, data, root)
		errs = append(errs, e)
	}
	sortErrors(errs)
	return root, errs
}

func sortErrors(errs Errors) {
	slices.SortStableFunc(errs, func(a, b *Error) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
}

// locate sets the position and server name of e from its path.
func locate(e *Error, data []byte, root *node) {
	n, _ := lookup(root, e.Path)
	if n != nil {
		off := n.start
		// Point at the key when the path ends in an object member.
		if len(e.Path) > 0 {
			if parent, _ := lookup(root, e.Path[:len(e.Path)-1]); parent != nil && parent.kind == '{' {
				last := e.Path[len(e.Path)-1]
				for _, m := range parent.members {
					if m.key == last {
						off = m.keyStart
					}
				}
			}
		}
		e.Line, e.Col = lineCol(data, off)
	}
	if len(e.Path) >= 3 && e.Path[0] == "mcp" && e.Path[1] == "servers" {
		if s, _ := lookup(root, e.Path[:3]); s != nil {
			if nm := s.member("name"); nm != nil && nm.kind == '"' {
				e.Server = nm.str
			}
		}
	}
}

// lookup returns the deepest node along path and how many steps it took.
func lookup(root *node, path []string) (*node, int) {
	n := root
	for i, p := range path {
		var next *node
		switch n.kind {
		case '{':
			next = n.member(p)
		case '[':
			if idx, err := strconv.Atoi(p); err == nil && idx >= 0 && idx < len(n.elems) {
				next = n.elems[idx]
			}
		}
		if next == nil {
			return n, i
		}
		n = next
	}
	return n, len(path)
}

var (
	reNotAllowed = regexp.MustCompile(`field not allowed`)
	reRequired   = regexp.MustCompile(`field is required but not present`)
	reConflict   = regexp.MustCompile(`conflicting values (.+) and (.+)`)
	reListLen    = regexp.MustCompile(`incompatible list lengths \(0 and`)
)

// knownFields are suggested when an unknown field looks like a typo.
var knownFields = []string{"name", "type", "command", "url", "headers", "env", "enabled", "timeout",
	"transport", "servers", "pollInterval", "allow", "ask", "deny",
	"limits", "maxMessageBytes", "maxListItems", "maxListPages", "maxListBytes"}

// explain turns a CUE message into a plain-words reason.
func explain(root *node, path []string, msg string) *Error {
	e := &Error{Path: slices.Clone(path)}
	last := ""
	if len(path) > 0 {
		last = path[len(path)-1]
	}
	inServer := len(path) >= 3 && path[0] == "mcp" && path[1] == "servers"
	serverType := ""
	if inServer {
		if s, _ := lookup(root, path[:3]); s != nil {
			if t := s.member("type"); t != nil {
				serverType = t.str
			}
		}
	}
	field := last
	if inServer && len(path) >= 4 {
		field = path[3]
	}
	limitsName, limitsPath, inLimits := limitsField(path)
	switch {
	case inLimits && limitsName != "" && reNotAllowed.MatchString(msg):
		e.Path = slices.Clone(limitsPath)
		e.Msg = fmt.Sprintf("unknown field %q in limits", limitsName)
		if s := suggest(limitsName); s != "" {
			e.Msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
	case reNotAllowed.MatchString(msg):
		// CUE reports a disallowed list as its first element; point at the field.
		if inServer && len(path) > 4 {
			e.Path = path[:4]
		}
		f := e.Path[len(e.Path)-1]
		switch {
		case inServer && serverType == "local" && (f == "url" || f == "headers" || f == "transport"):
			e.Msg = fmt.Sprintf("%q is only for remote servers; a local server runs a command", f)
		case inServer && serverType == "remote" && f == "command":
			e.Msg = `"command" is only for local servers; a remote server has a url`
		default:
			e.Msg = fmt.Sprintf("unknown field %q", f)
			if s := suggest(f); s != "" {
				e.Msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
		}
	case reRequired.MatchString(msg):
		switch {
		case field == "command":
			e.Msg = `missing "command": a local server needs the command to run, e.g. ["npx", "-y", "pkg"]`
		case field == "url":
			e.Msg = `missing "url": a remote server needs an http:// or https:// url`
		default:
			e.Msg = fmt.Sprintf("missing required field %q", last)
		}
		e.Path = path[:len(path)-1]
	case inLimits:
		e.Path = slices.Clone(limitsPath)
		e.Msg = limitMessage(limitsName)
	case inServer && field == "type":
		e.Msg = `type must be "local" or "remote"`
		if n, _ := lookup(root, path); n != nil && n.kind == '"' {
			e.Msg += fmt.Sprintf(", not %q", n.str)
		}
	case inServer && field == "name":
		e.Msg = `server name must start with a letter, contain only letters, digits, "_" and "-", be at most 48 characters and not contain "__"`
	case inServer && field == "url":
		e.Msg = "url must be an http:// or https:// address with a host"
	case inServer && field == "timeout":
		e.Msg = "timeout must be a whole number of milliseconds greater than 0"
	case inServer && field == "transport":
		e.Msg = `transport must be "auto", "streamable-http" or "sse"`
	case inServer && field == "command":
		if reListLen.MatchString(msg) {
			e.Msg = "command must name at least the program to run"
		} else {
			e.Msg = "command must be a list of non-empty strings"
		}
	case inServer && (field == "env" || field == "headers"):
		e.Msg = field + " must map names to string values"
	case inServer && field == "enabled":
		e.Msg = "enabled must be true or false"
	case len(path) == 2 && path[0] == "mcp" && path[1] == "pollInterval":
		e.Msg = "pollInterval must be a whole number of milliseconds, at least 100"
	case len(path) >= 2 && path[0] == "permission":
		e.Msg = `permission rules are tool ids or id prefixes made of letters, digits, "_" and "-" (e.g. "write", "mcp__github")`
		if len(path) == 2 {
			e.Msg = fmt.Sprintf("permission.%s must be a list of rules", path[1])
		}
	case reConflict.MatchString(msg):
		e.Msg = "wrong type: " + msg
	default:
		e.Msg = msg
	}
	return e
}

func suggest(f string) string {
	best, bestD := "", 3
	for _, k := range knownFields {
		if d := editDistance(strings.ToLower(f), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// duplicateKeys reports an object key given twice: JSON readers disagree on
// which copy wins, so the file is ambiguous.
func duplicateKeys(file string, data []byte, n *node, path []string) Errors {
	var errs Errors
	switch n.kind {
	case '{':
		first := map[string]int{}
		for _, m := range n.members {
			if off, dup := first[m.key]; dup {
				l, c := lineCol(data, off)
				p := append(slices.Clone(path), m.key)
				e := &Error{File: file, Path: p, Msg: fmt.Sprintf("key %q appears twice (first at line %d, column %d)", m.key, l, c)}
				e.Line, e.Col = lineCol(data, m.keyStart)
				errs = append(errs, e)
				continue
			}
			first[m.key] = m.keyStart
			errs = append(errs, duplicateKeys(file, data, m.val, append(slices.Clone(path), m.key))...)
		}
	case '[':
		for i, el := range n.elems {
			errs = append(errs, duplicateKeys(file, data, el, append(slices.Clone(path), strconv.Itoa(i)))...)
		}
	}
	return errs
}

// duplicateServers reports each server whose name an earlier entry already has.
func duplicateServers(file string, data []byte, root *node) Errors {
	servers := root.member("mcp").member("servers")
	if servers == nil || servers.kind != '[' {
		return nil
	}
	var errs Errors
	first := map[string]int{}
	for i, s := range servers.elems {
		nm := s.member("name")
		if nm == nil || nm.kind != '"' {
			continue
		}
		j, dup := first[nm.str]
		if !dup {
			first[nm.str] = i
			continue
		}
		fl, _ := lineCol(data, servers.elems[j].start)
		e := &Error{File: file, Path: []string{"mcp", "servers", strconv.Itoa(i), "name"}, Server: nm.str,
			Msg: fmt.Sprintf("duplicate server name %q: entries mcp.servers[%d] (line %d) and mcp.servers[%d] have the same name", nm.str, j, fl, i)}
		e.Line, e.Col = lineCol(data, nm.start)
		errs = append(errs, e)
	}
	return errs
}

// lookalikeKeys reports top-level keys that differ from "mcp" or
// "permission" only in case. The top level is open, so the schema accepts
// them as keys of other tools, but JSON readers that match keys without
// regard to case (Go's among them) would take them for ours.
func lookalikeKeys(file string, data []byte, root *node) Errors {
	var errs Errors
	for _, m := range root.members {
		for _, ours := range []string{"mcp", "permission"} {
			if m.key != ours && strings.EqualFold(m.key, ours) {
				e := &Error{File: file, Path: []string{m.key},
					Msg: fmt.Sprintf("key %q is too close to %q: write %q exactly (or rename it if it belongs to another tool)", m.key, ours, ours)}
				e.Line, e.Col = lineCol(data, m.keyStart)
				errs = append(errs, e)
			}
		}
	}
	return errs
}
