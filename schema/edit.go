package schema

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// LockTimeout bounds how long an edit waits for another writer's lock.
const LockTimeout = 30 * time.Second

// Doc is a config file being edited. Its methods splice bytes in place, so
// everything an edit does not touch keeps its bytes, order and indentation.
type Doc struct {
	file string
	data []byte
	root *node
	crlf bool // the file ends its lines with \r\n: so do inserted lines
}

// Bytes returns the document's current contents.
func (d *Doc) Bytes() []byte { return d.data }

// ErrNoServer is returned (wrapped) when a named server is not configured.
var ErrNoServer = errors.New("no such server")

// Edit applies fn to the config file at path under an exclusive lock held
// across read, modify and write, then writes the result atomically (temp
// file in the same directory, fsync, rename, fsync of the directory).
//
// A missing file (and its directory, 0700) is created; a new file is 0600,
// an existing one keeps its mode. A file that is not valid JSON or fails
// validation is refused untouched, with every positioned error; so is an
// edit whose result would not validate. ${VAR} references are not expanded
// here: an unset variable does not block an unrelated edit.
func (v *Validator) Edit(ctx context.Context, path string, fn func(*Doc) error) error {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target // edit the file a symlink points at, keep the link
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create config directory: %w", err)
	}
	lock := flock.New(filepath.Join(dir, "."+filepath.Base(path)+".lock"))
	lctx, cancel := context.WithTimeout(ctx, LockTimeout)
	defer cancel()
	locked, err := lock.TryLockContext(lctx, 10*time.Millisecond)
	if err != nil || !locked {
		return fmt.Errorf("lock %s: another process holds it: %w", path, errors.Join(err, lctx.Err()))
	}
	defer func() { _ = lock.Unlock() }()

	mode := fs.FileMode(0o600)
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		data = []byte("{\n}\n") // multi-line, so new files get two-space indentation
	case err != nil:
		return fmt.Errorf("read config: %w", err)
	default:
		if st, err := os.Stat(path); err == nil {
			mode = st.Mode().Perm()
		}
	}
	data, bom := stripBOM(data) // kept, and written back
	root, errs := v.check(path, data)
	if len(errs) > 0 {
		return fmt.Errorf("%s is not valid, so it was left untouched:\n%w", path, errs)
	}
	doc := &Doc{file: path, data: data, root: root, crlf: bytes.Contains(data, []byte("\r\n"))}
	if err := fn(doc); err != nil {
		return err
	}
	if _, errs := v.check(path, doc.data); len(errs) > 0 {
		return fmt.Errorf("the change would make %s invalid, so it was not written:\n%w", path, errs)
	}
	out := doc.data
	if bom {
		out = append([]byte(utf8BOM), out...)
	}
	return writeAtomic(path, out, mode)
}

func writeAtomic(path string, data []byte, mode fs.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if err = tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if err = tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync() // make the rename durable; not fatal where unsupported
		_ = d.Close()
	}
	return nil
}

// splice replaces data[start:end] with repl and refreshes the tree. Lines
// that repl inserts end as the file's lines do.
func (d *Doc) splice(start, end int, repl string) error {
	if d.crlf {
		repl = strings.ReplaceAll(repl, "\n", "\r\n")
	}
	out := make([]byte, 0, len(d.data)-(end-start)+len(repl))
	out = append(out, d.data[:start]...)
	out = append(out, repl...)
	out = append(out, d.data[end:]...)
	root, err := parseTree(out)
	if err != nil {
		return fmt.Errorf("edit produced invalid JSON: %w", err)
	}
	d.data, d.root = out, root
	return nil
}

func (d *Doc) servers() *node { return d.root.member("mcp").member("servers") }

func (d *Doc) serverIndex(name string) int {
	if s := d.servers(); s != nil {
		for i, el := range s.elems {
			if n := el.member("name"); n != nil && n.str == name {
				return i
			}
		}
	}
	return -1
}

// HasServer reports whether a server with name is configured.
func (d *Doc) HasServer(name string) bool { return d.serverIndex(name) >= 0 }

// ServerNames lists configured names in file order.
func (d *Doc) ServerNames() []string {
	var out []string
	if s := d.servers(); s != nil {
		for _, el := range s.elems {
			if n := el.member("name"); n != nil {
				out = append(out, n.str)
			}
		}
	}
	return out
}

// Field is one member of a JSON object to write, in order.
type Field struct {
	Key   string
	Value any // string, bool, int64, []string, map[string]string
}

// AddServer appends a server entry, creating mcp and mcp.servers as needed.
func (d *Doc) AddServer(fields []Field) error {
	var name string
	for _, f := range fields {
		if f.Key == "name" {
			name, _ = f.Value.(string)
		}
	}
	if i := d.serverIndex(name); i >= 0 {
		l, c := lineCol(d.data, d.servers().elems[i].start)
		return fmt.Errorf("server %q already exists (%s:%d:%d); remove it first or pick another name", name, d.file, l, c)
	}
	style := detectIndent(d.data)
	mcpNode := d.root.member("mcp")
	switch {
	case mcpNode == nil:
		return d.insertMember(d.root, "mcp", func(ind string) string {
			u := string(style)
			inner := ind + u
			return "{" + style.nl() + inner + `"servers": [` + style.nl() + inner + u + render(fields, inner+u, style) + style.nl() + inner + "]" + style.nl() + ind + "}"
		}, style)
	case d.servers() == nil:
		return d.insertMember(mcpNode, "servers", func(ind string) string {
			u := string(style)
			return "[" + style.nl() + ind + u + render(fields, ind+u, style) + style.nl() + ind + "]"
		}, style)
	default:
		return d.appendElem(d.servers(), func(ind string) string { return render(fields, ind, style) }, style)
	}
}

// RemoveServer deletes the named server's entry.
func (d *Doc) RemoveServer(name string) error {
	i := d.serverIndex(name)
	if i < 0 {
		return fmt.Errorf("server %q: %w in %s", name, ErrNoServer, d.file)
	}
	arr := d.servers()
	el := arr.elems[i]
	switch {
	case len(arr.elems) == 1:
		return d.splice(arr.start, arr.end, "[]")
	case i < len(arr.elems)-1:
		return d.splice(el.start, arr.elems[i+1].start, "")
	default:
		return d.splice(arr.elems[i-1].end, el.end, "")
	}
}

// SetEnabled sets the named server's "enabled" field. It reports whether
// the file changed. Enabling a server with no "enabled" field (default true)
// changes nothing.
func (d *Doc) SetEnabled(name string, enabled bool) (bool, error) {
	i := d.serverIndex(name)
	if i < 0 {
		return false, fmt.Errorf("server %q: %w in %s", name, ErrNoServer, d.file)
	}
	el := d.servers().elems[i]
	val := strconv.FormatBool(enabled)
	if cur := el.member("enabled"); cur != nil {
		if string(d.data[cur.start:cur.end]) == val {
			return false, nil
		}
		return true, d.splice(cur.start, cur.end, val)
	}
	if enabled {
		return false, nil
	}
	return true, d.insertMember(el, "enabled", func(string) string { return val }, detectIndent(d.data))
}

// indentStyle is one level of indentation; "" means a compact file.
type indentStyle string

func (s indentStyle) nl() string {
	if s == "" {
		return ""
	}
	return "\n"
}

// detectIndent returns the indentation unit of the first indented line.
func detectIndent(data []byte) indentStyle {
	for _, line := range strings.Split(string(data), "\n")[1:] {
		trimmed := strings.TrimLeft(line, " \t")
		if trimmed == "" || len(trimmed) == len(line) {
			continue
		}
		return indentStyle(line[:len(line)-len(trimmed)])
	}
	if strings.Contains(strings.TrimSpace(string(data)), "\n") {
		return "  " // multi-line but nothing indented: use two spaces
	}
	return "" // one line: stay compact
}

// lineIndent returns the whitespace that starts the line containing off.
func (d *Doc) lineIndent(off int) string {
	start := off
	for start > 0 && d.data[start-1] != '\n' {
		start--
	}
	end := start
	for end < len(d.data) && (d.data[end] == ' ' || d.data[end] == '\t') {
		end++
	}
	return string(d.data[start:end])
}

// insertMember adds "key": value as the last member of obj. value receives
// the indentation of the member's line.
func (d *Doc) insertMember(obj *node, key string, value func(ind string) string, style indentStyle) error {
	k := quote(key)
	if len(obj.members) == 0 {
		outer := d.lineIndent(obj.start)
		ind := outer + string(style)
		if style == "" {
			return d.splice(obj.start, obj.end, "{"+k+": "+value("")+"}")
		}
		return d.splice(obj.start, obj.end, "{\n"+ind+k+": "+value(ind)+"\n"+outer+"}")
	}
	last := obj.members[len(obj.members)-1]
	sep, ind := ", ", ""
	if style != "" && d.sameLine(obj.start, last.keyStart) {
		sep = ", "
	} else if style != "" {
		ind = d.lineIndent(last.keyStart)
		sep = ",\n" + ind
	}
	return d.splice(last.val.end, last.val.end, sep+k+": "+value(ind))
}

// appendElem adds an element at the end of arr.
func (d *Doc) appendElem(arr *node, value func(ind string) string, style indentStyle) error {
	if len(arr.elems) == 0 {
		outer := d.lineIndent(arr.start)
		if style == "" {
			return d.splice(arr.start, arr.end, "["+value("")+"]")
		}
		ind := outer + string(style)
		return d.splice(arr.start, arr.end, "[\n"+ind+value(ind)+"\n"+outer+"]")
	}
	last := arr.elems[len(arr.elems)-1]
	if style == "" || d.sameLine(arr.start, last.start) {
		return d.splice(last.end, last.end, ", "+value(d.lineIndent(last.start)))
	}
	ind := d.lineIndent(last.start)
	return d.splice(last.end, last.end, ",\n"+ind+value(ind))
}

func (d *Doc) sameLine(a, b int) bool {
	return !slices.Contains(d.data[a:b], '\n')
}

// render writes a server object: one member per line (or compact), lists
// and maps of strings inline.
func render(fields []Field, ind string, style indentStyle) string {
	var b strings.Builder
	b.WriteByte('{')
	inner := ind + string(style)
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
			if style == "" {
				b.WriteByte(' ')
			}
		}
		if style != "" {
			b.WriteString("\n" + inner)
		}
		b.WriteString(quote(f.Key) + ": " + renderValue(f.Value))
	}
	if style != "" {
		b.WriteString("\n" + ind)
	}
	b.WriteByte('}')
	return b.String()
}

func renderValue(v any) string {
	switch v := v.(type) {
	case string:
		return quote(v)
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case []string:
		parts := make([]string, len(v))
		for i, s := range v {
			parts[i] = quote(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]string:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, quote(k)+": "+quote(v[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	default:
		panic(fmt.Sprintf("schema: cannot render %T", v))
	}
}

// quote writes a JSON string without HTML escaping (strconv.Quote would use
// Go escapes that JSON does not have).
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
