package schema

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/literal"
	cuejson "cuelang.org/go/encoding/json"

	freecode "github.com/freecode/freecode"
	"github.com/freecode/freecode/internal/termtext"
)

// Error is one problem in a config file, positioned at the offending value.
type Error struct {
	File      string
	Line, Col int      // 1-based; 0 when unknown
	Path      []string // JSON path, e.g. ["mcp", "servers", "0", "comand"]
	Server    string   // the server the problem belongs to, if any
	Msg       string   // plain-words reason
	// Var is the variable of an unset ${VAR} ("" for any other problem).
	Var string
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

// FormatPath renders a JSON path as mcp.servers[0].command[1]. A key that
// is not printable as it is (see termtext.Printable) is shown quoted, with
// escapes: mcp.servers[0].env["LANG\x1b[8m"].
func FormatPath(path []string) string {
	var b strings.Builder
	for _, p := range path {
		if _, err := strconv.Atoi(p); err == nil {
			fmt.Fprintf(&b, "[%s]", p)
			continue
		}
		if !termtext.Printable(p) {
			fmt.Fprintf(&b, "[%s]", termtext.Quote(p))
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
			msg := "invalid JSON: " + se.Msg
			if strings.HasSuffix(file, ".toml") {
				msg += "; this is TOML (Codex's config.toml?), not FreeCode's JSON: " + importHint(file)
			}
			return nil, Errors{{File: file, Line: se.Line, Col: se.Col, Msg: msg}}
		}
		return nil, Errors{{File: file, Msg: "invalid JSON: " + err.Error()}}
	}
	return root, v.checkTree(file, data, root)
}

// checkTree validates root, the syntax tree of data (the contents of file).
//
// Only the "mcp" and "permission" members reach CUE: the top level is open,
// so nothing else can be wrong there, and CUE's cost grows faster than the
// size of what it is given — a large key of another tool must not make
// validation slow. Everything else done here (duplicate and lookalike keys,
// positions) is linear in the size of the document. Positions come from the
// tree, never from CUE, so giving CUE the members alone loses none.
func (v *Validator) checkTree(file string, data []byte, root *node) Errors {
	if root.kind != '{' {
		return Errors{{File: file, Line: 1, Col: 1, Msg: "the config must be a JSON object"}}
	}
	lines := newLineIndex(data)
	// What CUE says of a key given twice is about the two values unified
	// ("type must be local or remote, not remote" of "local" and
	// "remote"): the duplicate is what to fix, and is said instead.
	dups := duplicateKeys(file, lines, root, root, nil)
	errs := slices.Clone(dups)
	errs = append(errs, lookalikeKeys(file, lines, root)...)
	// CUE reports duplicate names as a conflict in a hidden field; ours name
	// both entries.
	errs = append(errs, duplicateServers(file, lines, root)...)
	// A control character is reported in plain words by controlChars; what
	// CUE says about the same value (or a key below it) adds nothing.
	ctrl := controlChars(file, lines, root)
	errs = append(errs, ctrl...)
	// A config of another host says so, and what CUE says of its members
	// adds nothing.
	ferrs, foreign := foreignFormat(file, lines, root)
	errs = append(errs, ferrs...)

	var fields []any
	budget := MaxCheckedValues
	for _, key := range []string{"mcp", "permission"} {
		n := root.member(key)
		if n == nil {
			continue
		}
		if budget = countValues(n, budget); budget < 0 {
			e := &Error{File: file, Path: []string{key}, Msg: fmt.Sprintf(
				`"mcp" and "permission" hold more than %d values together; no configuration needs that many, so the file is refused as it is`, MaxCheckedValues)}
			locate(e, lines, root)
			errs = append(errs, e)
			sortErrors(errs)
			return errs
		}
		// The servers are checked one by one below: CUE stops at some
		// errors per struct, so an error in a server could hide one of
		// the file's own fields (a typo beside "servers").
		b := data[n.start:n.end]
		if s := n.member("servers"); key == "mcp" && s != nil && s.kind == '[' {
			b = slices.Concat(data[n.start:s.start], []byte("[]"), data[s.end:n.end])
		}
		expr, err := cuejson.Extract(file, b)
		if err != nil {
			return Errors{{File: file, Msg: "invalid JSON: " + err.Error()}}
		}
		fields = append(fields, key, expr)
	}
	type located struct {
		prefix []string
		err    cueerrors.Error
	}
	var cerrs []located
	var entries []*node
	if servers := root.member("mcp").member("servers"); servers != nil && servers.kind == '[' {
		entries = servers.elems
	}
	exprs := make([]ast.Expr, len(entries))
	for i, el := range entries {
		expr, err := cuejson.Extract(file, data[el.start:el.end])
		if err != nil {
			return Errors{{File: file, Msg: "invalid JSON: " + err.Error()}}
		}
		exprs[i] = expr
	}
	v.mu.Lock()
	doc := v.ctx.BuildExpr(ast.NewStruct(fields...))
	if err := v.def.Unify(doc).Validate(cue.Concrete(true), cue.All()); err != nil {
		for _, ce := range cueerrors.Errors(err) {
			cerrs = append(cerrs, located{nil, ce})
		}
	}
	for i, expr := range exprs {
		prefix := []string{"mcp", "servers", strconv.Itoa(i)}
		if err := v.server.Unify(v.ctx.BuildExpr(expr)).Validate(cue.Concrete(true), cue.All()); err != nil {
			for _, ce := range cueerrors.Errors(err) {
				cerrs = append(cerrs, located{prefix, ce})
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
		path = append(slices.Clone(lc.prefix), unquoteLabels(path)...)
		if slices.Contains(path, "_byName") {
			continue // reported by duplicateServers
		}
		if slices.ContainsFunc(ctrl, func(e *Error) bool { return hasPrefix(path, e.Path) }) {
			continue
		}
		if slices.ContainsFunc(dups, func(e *Error) bool { return hasPrefix(path, e.Path) }) {
			continue
		}
		if slices.ContainsFunc(foreign, func(p []string) bool { return hasPrefix(path, p) }) {
			continue // the whole member is of another host's format
		}
		format, args := ce.Msg()
		e := explain(root, path, fmt.Sprintf(format, args...))
		if e == nil {
			continue
		}
		key := strings.Join(e.Path, "\x00") + "\x00" + e.Msg
		if seen[key] {
			continue
		}
		seen[key] = true
		e.File = file
		locate(e, lines, root)
		errs = append(errs, e)
	}
	sortErrors(errs)
	return errs
}

// MaxCheckedValues bounds how many JSON values (objects, arrays, strings,
// numbers, ...) the "mcp" and "permission" members may hold together. CUE's
// cost grows with the square of a list's or an object's length, so this
// keeps validating a hostile file (a project's, say) to a fraction of a
// second; real configurations hold a few hundred values.
const MaxCheckedValues = 10000

// countValues returns budget less the number of values in n, or a
// negative number as soon as the budget is exceeded.
func countValues(n *node, budget int) int {
	budget--
	for _, m := range n.members {
		if budget < 0 {
			return budget
		}
		budget = countValues(m.val, budget)
	}
	for _, el := range n.elems {
		if budget < 0 {
			return budget
		}
		budget = countValues(el, budget)
	}
	return budget
}

// unquoteLabels turns CUE's quoted labels ("X-Api-Key", "K\u001b") back
// into the JSON keys they stand for, so that paths match the file.
func unquoteLabels(path []string) []string {
	out := slices.Clone(path)
	for i, p := range out {
		if strings.HasPrefix(p, `"`) {
			if u, err := literal.Unquote(p); err == nil {
				out[i] = u
			}
		}
	}
	return out
}

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

// controlChars reports every key and string inside "mcp" and "permission"
// that holds a control character (termtext.IsControl: C0, DEL, C1, a
// bidirectional override or isolate). Such text can show a user something
// other than what runs: "\r" or ESC[2K can hide part of a command on the
// trust prompt, ESC[8m an env entry, a bidi control can reorder a line.
// config.cue refuses the same characters in the fields that hold text.
func controlChars(file string, lines *lineIndex, root *node) Errors {
	var errs Errors
	report := func(path []string, s string, key bool) {
		i := strings.IndexFunc(s, termtext.IsControl)
		if i < 0 {
			return
		}
		r, _ := utf8.DecodeRuneInString(s[i:])
		what := "contains"
		if key {
			what = "the key contains"
		}
		var msg string
		if termtext.IsBidi(r) {
			msg = fmt.Sprintf("%s the bidirectional control U+%04X (%s) at byte %d; bidirectional overrides and isolates are not allowed (they can reorder what a terminal shows)", what, r, termtext.Name(r), i+1)
		} else {
			msg = fmt.Sprintf("%s the control character U+%04X (%s) at byte %d; control characters are not allowed (they can hide text on a terminal)", what, r, termtext.Name(r), i+1)
		}
		e := &Error{File: file, Path: path, Msg: msg}
		locate(e, lines, root)
		errs = append(errs, e)
	}
	var walk func(n *node, path []string)
	walk = func(n *node, path []string) {
		switch n.kind {
		case '"':
			report(path, n.str, false)
		case '{':
			for _, m := range n.members {
				p := append(slices.Clone(path), m.key)
				report(p, m.key, true)
				walk(m.val, p)
			}
		case '[':
			for i, el := range n.elems {
				walk(el, append(slices.Clone(path), strconv.Itoa(i)))
			}
		}
	}
	for _, m := range root.members {
		if m.key == "mcp" || m.key == "permission" {
			walk(m.val, []string{m.key})
		}
	}
	return errs
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
func locate(e *Error, lines *lineIndex, root *node) {
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
		e.Line, e.Col = lines.lineCol(off)
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
	// reRequiredType is what CUE says of a server without "type" when
	// nothing else in it depends on the type.
	reRequiredType = regexp.MustCompile(`required field missing: type$`)
)

const missingType = `missing "type": "local" for a command to run, or "remote" for a url`

// knownFields are suggested when an unknown field looks like a typo.
var knownFields = []string{"name", "type", "command", "url", "headers", "env", "enabled", "timeout",
	"transport", "servers", "pollInterval", "allow", "ask", "deny", "callTimeout", "maxArgumentBytes",
	"maxOutputTokens", "toolBudget", "alwaysLoad", "lifecycle", "idleTimeout",
	"limits", "maxMessageBytes", "maxListItems", "maxListPages", "maxListBytes",
	"oauth", "clientId", "clientSecret", "scopes", "grant", "callbackPort", "clientMetadataUrl",
	"roots", "protocol", "logLevel", "tools", "include", "exclude", "telemetry", "endpoint", "serviceName",
	"recordArguments", "registries", "registry"}

// timeoutRule and pollIntervalRule say the allowed ranges of the duration
// fields (config.cue has the same bounds: MaxTimeout, MinPollInterval,
// MaxPollInterval).
func timeoutRule() string {
	return fmt.Sprintf("timeout must be a whole number of milliseconds from 1 to %d (1 hour)", MaxTimeout.Milliseconds())
}

func callTimeoutRule() string {
	return fmt.Sprintf("callTimeout must be a whole number of milliseconds from 1 to %d (a day)", MaxCallTimeout.Milliseconds())
}

func idleTimeoutRule() string {
	return fmt.Sprintf("idleTimeout must be a whole number of milliseconds from 1 to %d (a day)", MaxIdleTimeout.Milliseconds())
}

const lifecycleRule = `lifecycle must be "always" (the server runs while configured) or "on-demand" (started by its first use, stopped when idle)`

func maxOutputTokensRule() string {
	return fmt.Sprintf("maxOutputTokens must be a whole number of estimated tokens (bytes / 4) from %d to %d", MinOutputTokensLimit, MaxOutputTokensLimit)
}

func toolBudgetRule() string {
	return fmt.Sprintf("toolBudget must be a whole number of estimated tokens (bytes / 4) from 0 (never defer tools) to %d", MaxToolBudget)
}

func maxArgumentBytesRule() string {
	return fmt.Sprintf("maxArgumentBytes must be a whole number of bytes from %d to %d (4 MiB, what the local API reads of a request)", MinArgumentBytesLimit, MaxArgumentBytesLimit)
}

func pollIntervalRule() string {
	return fmt.Sprintf("pollInterval must be a whole number of milliseconds from %d to %d (24 hours)",
		MinPollInterval.Milliseconds(), MaxPollInterval.Milliseconds())
}

// explain turns a CUE message into a plain-words reason; nil when the
// message only repeats another error (a field CUE refuses because the
// server's type is wrong: the type error says what to fix).
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
	oauthName, oauthPath, inOAuth := oauthField(path)
	switch {
	case inOAuth && oauthName != "" && reNotAllowed.MatchString(msg):
		e.Path = slices.Clone(oauthPath)
		e.Msg = fmt.Sprintf("unknown field %q in oauth", oauthName)
		if s := suggest(oauthName); s != "" {
			e.Msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
	case inOAuth && serverType == "remote" && !reNotAllowed.MatchString(msg):
		e.Path = slices.Clone(oauthPath)
		e.Msg = oauthMessage(oauthName)
	case inLimits && limitsName != "" && reNotAllowed.MatchString(msg):
		e.Path = slices.Clone(limitsPath)
		e.Msg = fmt.Sprintf("unknown field %q in limits", limitsName)
		if s := suggest(limitsName); s != "" {
			e.Msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
	case inServer && field == "tools" && len(path) >= 5 && reNotAllowed.MatchString(msg):
		// A disallowed list is reported as its first element.
		e.Path = slices.Clone(path[:5])
		e.Msg = fmt.Sprintf("unknown field %q in tools", path[4])
		if s := suggest(path[4]); s != "" && s != path[4] {
			e.Msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
	case reNotAllowed.MatchString(msg):
		// CUE reports a disallowed list as its first element; point at the field.
		if inServer && len(path) > 4 {
			e.Path = path[:4]
		}
		f := e.Path[len(e.Path)-1]
		typeFields := f == "command" || f == "url" || f == "headers" || f == "transport" || f == "oauth"
		switch {
		case inServer && len(e.Path) == 4 && typeFields && serverType != "local" && serverType != "remote":
			// Without a valid type no type-specific field is allowed: the
			// type is what to fix.
			if s, _ := lookup(root, path[:3]); s != nil && s.member("type") == nil {
				e.Path, e.Msg = path[:3], missingTypeOf(root, path[:3])
				return e
			}
			return nil
		case inServer && serverType == "local" && (f == "url" || f == "headers" || f == "transport" || f == "oauth"):
			e.Msg = fmt.Sprintf("%q is only for remote servers; a local server runs a command", f)
		case inServer && serverType == "remote" && f == "command":
			e.Msg = `"command" is only for local servers; a remote server has a url`
		case inServer && len(e.Path) == 4 && f == "args":
			// "command" and "args" as other hosts write them.
			entry, _ := lookup(root, path[:3])
			if msg, ok := commandShapeMessage(entry, "args"); ok {
				if msg == "" {
					return nil
				}
				e.Msg = msg
				return e
			}
			e.Msg = `FreeCode has no "args": the command is one list of the program and its arguments, e.g. "command": ["npx", "-y", "pkg"]`
		default:
			e.Msg = fmt.Sprintf("unknown field %q", f)
			if s := suggest(f); s == f && inServer {
				e.Msg = fmt.Sprintf("%q is not a field of a server entry", f)
			} else if s == f {
				e.Msg = fmt.Sprintf("%q does not belong here", f)
			} else if s != "" {
				e.Msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
		}
	case inServer && reRequiredType.MatchString(msg):
		e.Path, e.Msg = path[:3], missingTypeOf(root, path[:3])
	case reRequired.MatchString(msg):
		switch {
		case field == "type":
			e.Msg = missingTypeOf(root, path[:min(len(path), 3)])
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
	case inServer && field == "name" && isString(root, path, "builtin"):
		e.Msg = `the server name "builtin" is taken by FreeCode's own tools (read, write); pick another name`
	case inServer && field == "name":
		e.Msg = `server name must start with a letter, contain only letters, digits, "_" and "-", be at most 48 characters, and neither contain "__" nor end in "_" (tool ids are mcp__<server>__<tool>)`
	case inServer && field == "url":
		e.Msg = "url must be an http:// or https:// address with a host"
	case inServer && field == "timeout":
		e.Msg = timeoutRule()
	case (inServer && field == "callTimeout") || (len(path) == 2 && path[0] == "mcp" && path[1] == "callTimeout"):
		e.Msg = callTimeoutRule()
	case len(path) == 2 && path[0] == "mcp" && path[1] == "maxArgumentBytes":
		e.Msg = maxArgumentBytesRule()
	case (inServer && field == "maxOutputTokens") || (len(path) == 2 && path[0] == "mcp" && path[1] == "maxOutputTokens"):
		e.Msg = maxOutputTokensRule()
	case len(path) == 2 && path[0] == "mcp" && path[1] == "toolBudget":
		e.Msg = toolBudgetRule()
	case (inServer && field == "idleTimeout") || (len(path) == 2 && path[0] == "mcp" && path[1] == "idleTimeout"):
		e.Msg = idleTimeoutRule()
	case (inServer && field == "lifecycle") || (len(path) == 2 && path[0] == "mcp" && path[1] == "lifecycle"):
		e.Msg = lifecycleRule
		if n, _ := lookup(root, path); n != nil && n.kind == '"' {
			e.Msg += fmt.Sprintf(", not %q", n.str)
		}
	case inServer && field == "alwaysLoad":
		e.Msg = "alwaysLoad must be true or false"
	case inServer && field == "transport":
		e.Msg = `transport must be "auto", "streamable-http" or "sse"`
	case inServer && field == "protocol":
		e.Msg = `protocol must be "2025-11-25", "2026-07-28" or "auto"`
	case inServer && field == "logLevel":
		e.Msg = `logLevel must be "debug", "info", "notice", "warning", "error", "critical", "alert" or "emergency"`
	case inServer && field == "tools" && len(path) >= 6:
		e.Msg = fmt.Sprintf("each pattern of tools.%s must be a non-empty string (a glob in Go's path.Match syntax, matched on the server's own tool names)", path[4])
	case inServer && field == "tools":
		e.Msg = `tools must be an object {"include": [...], "exclude": [...]} of lists of non-empty glob patterns (Go's path.Match syntax) matched on the server's own tool names`
	case inServer && field == "roots":
		e.Msg = "roots must be a list of directories (non-empty paths without control characters)"
	case inServer && field == "command" && len(path) == 5 && path[4] == "0" && isURL(root, path):
		n, _ := lookup(root, path)
		e.Msg = fmt.Sprintf(`the command is a URL: a server reached at a URL is "remote"; did you mean "type": "remote", "url": %s?`, quote(n.str))
	case inServer && field == "command" && len(path) == 4 && commandShape(root, path[:3]) != "":
		e.Msg = commandShape(root, path[:3])
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
		e.Msg = pollIntervalRule()
	case len(path) >= 2 && path[0] == "permission":
		e.Msg = `a permission rule is a tool id ("write", "mcp__github__create_issue"), a server ("mcp__github") or "mcp", made of letters, digits, "_" and "-"`
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

// missingTypeOf is the error of the server entry at path without "type":
// for an entry written as other hosts write a local server (a string
// command, "args"), with the fields to write instead.
func missingTypeOf(root *node, path []string) string {
	entry, _ := lookup(root, path)
	if words, ok := hostStyleCommand(entry); ok && len(path) == 3 {
		msg := missingType + `; this entry is written as other hosts write a local server: write "type": "local", "command": ` + RenderCommand(words)
		if entry.member("args") != nil {
			msg += `, and delete "args"`
		}
		return msg
	}
	return missingType
}

// commandShape is the error of the server entry at path whose command is
// written as other hosts write it (commandShapeMessage), or "".
func commandShape(root *node, path []string) string {
	entry, _ := lookup(root, path)
	msg, _ := commandShapeMessage(entry, "command")
	return msg
}

// isURL reports whether the value at path is a string that starts with
// http:// or https:// (config.cue: a local command never does).
func isURL(root *node, path []string) bool {
	n, _ := lookup(root, path)
	return n != nil && n.kind == '"' && (strings.HasPrefix(n.str, "http://") || strings.HasPrefix(n.str, "https://"))
}

// isString reports whether the value at path is the JSON string want.
func isString(root *node, path []string, want string) bool {
	n, _ := lookup(root, path)
	return n != nil && n.kind == '"' && n.str == want
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
// which copy wins, so the file is ambiguous. path is shared between calls
// (each level appends to it) and copied only into an error, so a deep
// document costs no more than a flat one.
func duplicateKeys(file string, lines *lineIndex, root, n *node, path []string) Errors {
	var errs Errors
	switch n.kind {
	case '{':
		first := map[string]int{}
		for _, m := range n.members {
			if off, dup := first[m.key]; dup {
				l, c := lines.lineCol(off)
				p := append(slices.Clone(path), m.key)
				e := &Error{File: file, Path: p, Msg: fmt.Sprintf(
					"duplicate key %q (first at line %d, column %d): JSON readers disagree on which copy counts; keep one and delete the other", m.key, l, c)}
				locate(e, lines, root)
				// At this copy: locate finds the last one of a path, which
				// is another when a key above is given twice too.
				e.Line, e.Col = lines.lineCol(m.keyStart)
				errs = append(errs, e)
				continue
			}
			first[m.key] = m.keyStart
			errs = append(errs, duplicateKeys(file, lines, root, m.val, append(path, m.key))...)
		}
	case '[':
		for i, el := range n.elems {
			errs = append(errs, duplicateKeys(file, lines, root, el, append(path, strconv.Itoa(i)))...)
		}
	}
	return errs
}

// duplicateServers reports each server whose name an earlier entry already has.
func duplicateServers(file string, lines *lineIndex, root *node) Errors {
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
		fl, _ := lines.lineCol(servers.elems[j].start)
		e := &Error{File: file, Path: []string{"mcp", "servers", strconv.Itoa(i), "name"}, Server: nm.str,
			Msg: fmt.Sprintf("duplicate server name %q: entries mcp.servers[%d] (line %d) and mcp.servers[%d] have the same name", nm.str, j, fl, i)}
		e.Line, e.Col = lines.lineCol(nm.start)
		errs = append(errs, e)
	}
	return errs
}

// lookalikeKeys reports top-level keys that differ from "mcp" or
// "permission" only in case. The top level is open, so the schema accepts
// them as keys of other tools, but JSON readers that match keys without
// regard to case (Go's among them) would take them for ours.
func lookalikeKeys(file string, lines *lineIndex, root *node) Errors {
	var errs Errors
	for _, m := range root.members {
		for _, ours := range []string{"mcp", "permission"} {
			if m.key != ours && strings.EqualFold(m.key, ours) {
				e := &Error{File: file, Path: []string{m.key},
					Msg: fmt.Sprintf("key %q is too close to %q: write %q exactly (or rename it if it belongs to another tool)", m.key, ours, ours)}
				e.Line, e.Col = lines.lineCol(m.keyStart)
				errs = append(errs, e)
			}
		}
	}
	return errs
}
