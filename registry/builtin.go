package registry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
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

// Builtins returns FreeCode's own tools operating on files under root:
//
//   - read (read-only): {path, offset?, limit?} returns up to limit lines
//     (default 2000) starting at line offset (1-based), at most 256 KiB;
//   - write (mutating): {path, content} replaces the file's content,
//     creating it and its parent directories.
//
// Paths are relative to root, or absolute inside it; nothing outside root
// (including through symlinks) can be read or written. Arguments are
// validated against the tools' JSON Schemas.
func Builtins(root string) ([]Tool, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("builtin tools: root %s: %w", root, err)
	}
	readValidate, err := compileValidator(json.RawMessage(readSchema))
	if err != nil {
		return nil, fmt.Errorf("builtin tools: read schema: %w", err)
	}
	writeValidate, err := compileValidator(json.RawMessage(writeSchema))
	if err != nil {
		return nil, fmt.Errorf("builtin tools: write schema: %w", err)
	}
	fs := fileTools{root: abs}
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
			Call:        fs.read,
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
			Call:        fs.write,
		},
	}, nil
}

// RegisterBuiltins registers Builtins(root) as source "builtin", exactly as
// an MCP server's tools are registered.
func RegisterBuiltins(r *Registry, root string) error {
	tools, err := Builtins(root)
	if err != nil {
		return err
	}
	if _, err := r.ReplaceSource(SourceBuiltin, tools); err != nil {
		return fmt.Errorf("register builtin tools: %w", err)
	}
	return nil
}

type fileTools struct {
	root string // absolute
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
func (f fileTools) open(ctx context.Context, tool string, raw json.RawMessage, args any, path func() string) (root *os.Root, name string, fail *Result, err error) {
	if err := json.Unmarshal(raw, args); err != nil {
		return nil, "", nil, fmt.Errorf("%s: decode arguments: %w", tool, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, "", nil, err
	}
	name, err = f.rel(path())
	if err != nil {
		r := ErrorResult(err.Error())
		return nil, "", &r, nil
	}
	root, err = os.OpenRoot(f.root)
	if err != nil {
		r := ErrorResult(fmt.Sprintf("workspace %s cannot be opened: %v", f.root, err))
		return nil, "", &r, nil
	}
	return root, name, nil, nil
}

func (f fileTools) read(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a readArgs
	root, name, fail, err := f.open(ctx, "read", raw, &a, func() string { return a.Path })
	if fail != nil || err != nil {
		return deref(fail), err
	}
	defer root.Close()
	file, err := root.Open(name)
	if err != nil {
		return ErrorResult(fmt.Sprintf("cannot read %s: %v", a.Path, err)), nil
	}
	defer file.Close()
	if st, err := file.Stat(); err == nil && st.IsDir() {
		return ErrorResult(fmt.Sprintf("%s is a directory", a.Path)), nil
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
			return Result{}, ctx.Err()
		}
	}
	if err := sc.Err(); err != nil {
		return ErrorResult(fmt.Sprintf("cannot read %s: %v", a.Path, err)), nil
	}
	if !utf8.Valid(out.Bytes()) {
		return ErrorResult(fmt.Sprintf("%s is not a text file", a.Path)), nil
	}
	text := out.String()
	switch {
	case line < offset && line > 0:
		text = fmt.Sprintf("(%s has %d lines; offset %d is past the end)", a.Path, line, offset)
	case truncated:
		text += fmt.Sprintf("(output truncated after line %d; continue with offset %d)\n", offset+returned-1, offset+returned)
	}
	return TextResult(text), nil
}

func (f fileTools) write(ctx context.Context, raw json.RawMessage) (Result, error) {
	var a writeArgs
	root, name, fail, err := f.open(ctx, "write", raw, &a, func() string { return a.Path })
	if fail != nil || err != nil {
		return deref(fail), err
	}
	defer root.Close()
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return ErrorResult(fmt.Sprintf("cannot create directory for %s: %v", a.Path, err)), nil
		}
	}
	if err := root.WriteFile(name, []byte(a.Content), 0o644); err != nil {
		return ErrorResult(fmt.Sprintf("cannot write %s: %v", a.Path, err)), nil
	}
	return TextResult(fmt.Sprintf("wrote %d bytes to %s", len(a.Content), a.Path)), nil
}

func deref(r *Result) Result {
	if r == nil {
		return Result{}
	}
	return *r
}
