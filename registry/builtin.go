package registry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/freecode/freecode/wire"
)

// Limits of the read tool.
const (
	ReadDefaultLimit = 2000      // lines returned when limit is not given
	ReadMaxBytes     = 256 << 10 // output is cut at this many bytes
)

const readSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to read, relative to the workspace root (or absolute inside it)."},
    "offset": {"type": "integer", "minimum": 1, "description": "Line number to start from (1 = first line). Default 1."},
    "limit": {"type": "integer", "minimum": 1, "description": "Maximum number of lines to return. Default 2000."}
  },
  "required": ["path"],
  "additionalProperties": false
}`

const writeSchema = `{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to write, relative to the workspace root (or absolute inside it). Parent directories are created."},
    "content": {"type": "string", "description": "The complete new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

// BuiltinOptions configure Builtins.
type BuiltinOptions struct {
	// Root is the workspace the file tools work in (required).
	Root string
	// Protected are files and directories that read and write touch only
	// with the user's approval, even inside Root and whatever the
	// permission rules allow: FreeCode's home (its config holds provider
	// keys, trust.json the trust decisions) and the config file in use.
	Protected []string
	// Outputs is a directory read may also read, by absolute path, without
	// approval: where the orchestrator keeps tool results over their cap
	// (orchestrator.OutputsDirName under FreeCode's home). Only FreeCode
	// writes there; write never does. "" means none.
	Outputs string
	// Extra are built-ins made elsewhere (tool_search, by registry/defs),
	// registered with read and write.
	Extra []Tool
}

// Builtins returns FreeCode's own tools operating on files under opts.Root:
//
//   - read (read-only): {path, offset?, limit?} returns up to limit lines
//     (default 2000) starting at line offset (1-based), at most 256 KiB;
//   - write (mutating): {path, content} replaces the file's content,
//     creating it and its parent directories.
//
// Paths are relative to the root, or absolute inside it; nothing outside it
// (including through symlinks) can be read or written. Arguments are
// validated against the tools' JSON Schemas.
//
// A call whose file is inside one of opts.Protected — as written, after
// following symlinks, or as another name (hard link) of a file there — is
// Sensitive: the orchestrator asks the user whatever the rules say. The
// tools check again on the file they open (read) or are about to write
// (write), and refuse a protected file unless the call was approved
// (registry.Approved), so a symlink swapped in after the check changes
// nothing.
func Builtins(opts BuiltinOptions) ([]Tool, error) {
	abs, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("builtin tools: root %s: %w", opts.Root, err)
	}
	readValidate, err := compileValidator(json.RawMessage(readSchema))
	if err != nil {
		return nil, fmt.Errorf("builtin tools: read schema: %w", err)
	}
	writeValidate, err := compileValidator(json.RawMessage(writeSchema))
	if err != nil {
		return nil, fmt.Errorf("builtin tools: write schema: %w", err)
	}
	ft := fileTools{root: abs}
	if opts.Outputs != "" {
		if ft.outputs, err = filepath.Abs(opts.Outputs); err != nil {
			return nil, fmt.Errorf("builtin tools: outputs %s: %w", opts.Outputs, err)
		}
	}
	for _, p := range opts.Protected {
		if p == "" {
			continue
		}
		pa, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("builtin tools: protected path %s: %w", p, err)
		}
		ft.protected = append(ft.protected, pa)
	}
	return []Tool{
		{
			ID:          "read",
			Source:      SourceBuiltin,
			Title:       "Read file",
			Description: "Read a text file from the workspace. Returns up to `limit` lines starting at line `offset` (1-based).",
			InputSchema: json.RawMessage(readSchema),
			Annotations: json.RawMessage(`{"readOnlyHint":true}`),
			ReadOnly:    true,
			Validate:    readValidate,
			Sensitive:   ft.readSensitive,
			Call:        ft.read,
		},
		{
			ID:          "write",
			Source:      SourceBuiltin,
			Title:       "Write file",
			Description: "Write a file in the workspace, replacing its content. Parent directories are created.",
			InputSchema: json.RawMessage(writeSchema),
			Annotations: json.RawMessage(`{"readOnlyHint":false,"destructiveHint":true,"idempotentHint":true}`),
			ReadOnly:    false,
			Validate:    writeValidate,
			Sensitive:   ft.sensitive,
			Call:        ft.write,
		},
	}, nil
}

// RegisterBuiltins registers Builtins(opts) as source "builtin", exactly as
// an MCP server's tools are registered.
func RegisterBuiltins(r *Registry, opts BuiltinOptions) error {
	tools, err := Builtins(opts)
	if err != nil {
		return err
	}
	tools = append(tools, opts.Extra...)
	if _, err := r.ReplaceSource(SourceBuiltin, tools); err != nil {
		return fmt.Errorf("register builtin tools: %w", err)
	}
	return nil
}

type fileTools struct {
	root      string   // absolute
	protected []string // absolute; see BuiltinOptions.Protected
	outputs   string   // absolute or ""; see BuiltinOptions.Outputs
}

// inOutputs returns p's name inside the outputs directory when p is an
// absolute path below it.
func (f fileTools) inOutputs(p string) (string, bool) {
	if f.outputs == "" || !filepath.IsAbs(p) {
		return "", false
	}
	r, err := filepath.Rel(f.outputs, p)
	if err != nil || r == "." || !filepath.IsLocal(r) {
		return "", false
	}
	return r, true
}

// rel turns a user path into a name relative to the root.
func (f fileTools) rel(p string) (string, error) {
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(f.root, p)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("path %s is outside the workspace %s", p, f.root)
		}
		return r, nil
	}
	return filepath.Clean(p), nil
}

// open decodes raw into args and opens the workspace with the tool's path
// (path, read after decoding) resolved in it. A failure the model should
// see comes back as fail; err is for failures of the call itself.
func (f fileTools) open(ctx context.Context, tool string, raw json.RawMessage, args any, path func() string) (root *os.Root, name string, fail *wire.CallResult, err error) {
	if err := json.Unmarshal(raw, args); err != nil {
		return nil, "", nil, fmt.Errorf("%s: decode arguments: %w", tool, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, "", nil, err
	}
	if tool == "read" {
		if name, ok := f.inOutputs(path()); ok {
			root, err = os.OpenRoot(f.outputs)
			if err != nil {
				r := wire.ErrorResult(fmt.Sprintf("outputs directory %s cannot be opened: %v", f.outputs, err))
				return nil, "", &r, nil
			}
			return root, name, nil, nil
		}
	}
	name, err = f.rel(path())
	if err != nil {
		r := wire.ErrorResult(err.Error())
		return nil, "", &r, nil
	}
	root, err = os.OpenRoot(f.root)
	if err != nil {
		r := wire.ErrorResult(fmt.Sprintf("workspace %s cannot be opened: %v", f.root, err))
		return nil, "", &r, nil
	}
	return root, name, nil, nil
}

func (f fileTools) read(ctx context.Context, raw json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
	var a readArgs
	root, name, fail, err := f.open(ctx, "read", raw, &a, func() string { return a.Path })
	if fail != nil || err != nil {
		return deref(fail), err
	}
	defer root.Close()
	file, err := root.Open(name)
	if err != nil {
		return wire.ErrorResult(fmt.Sprintf("cannot read %s: %v", a.Path, err)), nil
	}
	defer file.Close()
	_, fromOutputs := f.inOutputs(a.Path)
	switch {
	case fromOutputs:
		// Read without a question, so only what FreeCode wrote there: one
		// name per file. A hard link planted there may be another name of
		// a protected file (the config and its provider keys).
		if n := links(file); n > 1 {
			return wire.ErrorResult(fmt.Sprintf("refusing to read %s: it has %d names (hard links), and the files FreeCode keeps in %s have one; "+
				"it may be another name of a protected file", a.Path, n, f.outputs)), nil
		}
	case !Approved(ctx):
		if what := f.protectedOpen(file); what != "" {
			return wire.ErrorResult(fmt.Sprintf("refusing to read %s without approval: it is %s", a.Path, what)), nil
		}
	}
	if st, err := file.Stat(); err == nil && st.IsDir() {
		return wire.ErrorResult(fmt.Sprintf("%s is a directory", a.Path)), nil
	}
	offset, limit := max(a.Offset, 1), a.Limit
	if limit <= 0 {
		limit = ReadDefaultLimit
	}
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 64<<10), ReadMaxBytes)
	var out bytes.Buffer
	line, returned, truncated := 0, 0, false
	for sc.Scan() {
		line++
		if line < offset {
			continue
		}
		if returned == limit {
			truncated = true
			break
		}
		if out.Len()+len(sc.Bytes())+1 > ReadMaxBytes {
			truncated = true
			break
		}
		out.Write(sc.Bytes())
		out.WriteByte('\n')
		returned++
		if returned%1024 == 0 && ctx.Err() != nil {
			return wire.CallResult{}, ctx.Err()
		}
	}
	if err := sc.Err(); err != nil {
		return wire.ErrorResult(fmt.Sprintf("cannot read %s: %v", a.Path, err)), nil
	}
	if !utf8.Valid(out.Bytes()) {
		return wire.ErrorResult(fmt.Sprintf("%s is not a text file", a.Path)), nil
	}
	text := out.String()
	switch {
	case line < offset && line > 0:
		text = fmt.Sprintf("(%s has %d lines; offset %d is past the end)", a.Path, line, offset)
	case truncated:
		text += fmt.Sprintf("(output truncated after line %d; continue with offset %d)\n", offset+returned-1, offset+returned)
	}
	return wire.TextResult(text), nil
}

func (f fileTools) write(ctx context.Context, raw json.RawMessage, _ func(wire.Progress)) (wire.CallResult, error) {
	var a writeArgs
	root, name, fail, err := f.open(ctx, "write", raw, &a, func() string { return a.Path })
	if fail != nil || err != nil {
		return deref(fail), err
	}
	defer root.Close()
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return wire.ErrorResult(fmt.Sprintf("cannot create directory for %s: %v", a.Path, err)), nil
		}
	}
	if !Approved(ctx) {
		if what := f.protectedName(name); what != "" {
			return wire.ErrorResult(fmt.Sprintf("refusing to write %s without approval: it is %s", a.Path, what)), nil
		}
	}
	if err := root.WriteFile(name, []byte(a.Content), 0o644); err != nil {
		return wire.ErrorResult(fmt.Sprintf("cannot write %s: %v", a.Path, err)), nil
	}
	return wire.TextResult(fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path)), nil
}

func deref(r *wire.CallResult) wire.CallResult {
	if r == nil {
		return wire.CallResult{}
	}
	return *r
}

// readSensitive is read's Tool.Sensitive: a file of the outputs directory
// is not (read opens it there), any other is as sensitive says.
func (f fileTools) readSensitive(raw json.RawMessage) string {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &a) == nil {
		if _, ok := f.inOutputs(a.Path); ok {
			return ""
		}
	}
	return f.sensitive(raw)
}

// sensitive is the tools' Tool.Sensitive: the file named by args' path is
// protected.
func (f fileTools) sensitive(raw json.RawMessage) string {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(raw, &a) != nil || a.Path == "" {
		return ""
	}
	name, err := f.rel(a.Path)
	if err != nil {
		return "" // outside the workspace: the call fails anyway
	}
	if what := f.protectedName(name); what != "" {
		return fmt.Sprintf("%s is %s; it is read or written only with your approval", a.Path, what)
	}
	return ""
}

// protectedName says what protects name (relative to the root), or "".
// It looks at the path as written, at the path its existing part resolves
// to through symlinks (as os.Root would follow them inside the root), and
// at the file's other names when it has hard links.
func (f fileTools) protectedName(name string) string {
	if len(f.protected) == 0 {
		return ""
	}
	full := filepath.Join(f.root, name)
	if what := f.inside(full); what != "" {
		return what
	}
	if what := f.inside(resolveExisting(full)); what != "" {
		return what
	}
	if st, err := os.Stat(full); err == nil {
		return f.hardLinked(st)
	}
	return ""
}

// protectedOpen says what protects the opened file, or "": its path as the
// kernel knows it (which no later symlink swap can change) and its other
// names.
func (f fileTools) protectedOpen(file *os.File) string {
	if len(f.protected) == 0 {
		return ""
	}
	if p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(file.Fd()))); err == nil {
		if what := f.inside(p); what != "" {
			return what
		}
	}
	if st, err := file.Stat(); err == nil {
		return f.hardLinked(st)
	}
	return ""
}

// inside says which protected path contains p (itself or below), or "".
// Protected paths are compared both as given and resolved.
func (f fileTools) inside(p string) string {
	for _, prot := range f.protected {
		for _, q := range []string{prot, resolveExisting(prot)} {
			if r, err := filepath.Rel(q, p); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				return fmt.Sprintf("inside FreeCode's %s", describeProtected(prot))
			}
		}
	}
	return ""
}

func describeProtected(p string) string {
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		return "home " + p + " (its config holds provider keys)"
	}
	return "config " + p
}

// maxLinkScan bounds the files of protected directories compared with a
// hard-linked file.
const maxLinkScan = 1000

// hardLinked says which protected file st is another name of, or "". Only
// files with more than one name are compared, so ordinary reads cost one
// stat.
func (f fileTools) hardLinked(st os.FileInfo) string {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok || sys.Nlink < 2 || st.IsDir() {
		return ""
	}
	seen := 0
	for _, prot := range f.protected {
		found := ""
		_ = filepath.WalkDir(prot, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if seen++; seen > maxLinkScan {
				return filepath.SkipAll
			}
			if d.Type().IsRegular() {
				if info, err := d.Info(); err == nil && os.SameFile(info, st) {
					found = p
					return filepath.SkipAll
				}
			}
			return nil
		})
		if found != "" {
			return fmt.Sprintf("another name of %s, inside FreeCode's %s", found, describeProtected(prot))
		}
	}
	return ""
}

// links is how many names (hard links) the opened regular file has; 1
// when that cannot be told, 0 for anything but a regular file.
func links(file *os.File) uint64 {
	st, err := file.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Nlink)
	}
	return 1
}

// resolveExisting returns p with symlinks resolved in its longest existing
// prefix; the rest (a file about to be created) is appended as it is.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; {
		if r, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(r, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}
