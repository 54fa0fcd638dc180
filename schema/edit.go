package schema

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	// added are the names of the servers AddServer added, for the errors
	// of a refused edit.
	added []string
}

// RefusedEdit is the error of an edit whose result would have errors the
// file did not have; nothing was written. Its Errors are those new ones,
// positioned in no file (File is the config, Line and Col are 0: the lines
// they were on were never written); Error names each by the new server
// it belongs to, or by its path.
type RefusedEdit struct {
	Path   string
	Errors Errors
	// added are the servers the edit added, by name.
	added []string
}

func (e *RefusedEdit) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the change would make %s invalid, so it was not written:", e.Path)
	for _, x := range e.Errors {
		b.WriteString("\n")
		b.WriteString(e.describe(x))
	}
	return b.String()
}

// Unwrap returns the new errors.
func (e *RefusedEdit) Unwrap() error { return e.Errors }

// describe says where x is without a position: in "the new server" it
// belongs to, at its path within it, or at its path in the file.
func (e *RefusedEdit) describe(x *Error) string {
	if x.Server != "" && slices.Contains(e.added, x.Server) && len(x.Path) >= 3 {
		where := "new server " + quote(x.Server)
		if p := FormatPath(x.Path[3:]); p != "" {
			where += ": " + p
		}
		return where + ": " + x.Msg
	}
	where := FormatPath(x.Path)
	if x.Server != "" {
		where += fmt.Sprintf(" (server %q)", x.Server)
	}
	if where == "" {
		return x.Msg
	}
	return where + ": " + x.Msg
}

// unwritten returns errs of the edited document as a RefusedEdit holds
// them: without positions.
func (d *Doc) unwritten(errs Errors) Errors {
	out := make(Errors, len(errs))
	for i, e := range errs {
		c := *e
		c.Line, c.Col = 0, 0
		out[i] = &c
	}
	return out
}

// Bytes returns the document's current contents.
func (d *Doc) Bytes() []byte { return d.data }

// ErrNoServer is returned (wrapped) when a named server is not configured.
var ErrNoServer = errors.New("no such server")

// ErrServerExists is returned (wrapped) by AddServer when the name is
// configured already.
var ErrServerExists = errors.New("a server of that name exists")

// Edit applies fn to the config file at path under an exclusive lock held
// across read, modify and write, then writes the result atomically (temp
// file in the same directory, fsync, rename, fsync of the directory).
//
// A missing file (and its directory, 0700) is created; a new file is 0600,
// an existing one keeps its mode. A symlink is followed and the file it
// points at edited, the link kept — also a dangling one, whose target is
// then created. A file with a file-level error (invalid JSON, see
// partition.go) is refused untouched, with every positioned error. Errors
// of one server's entry, which hold only that server, do not stop an edit
// — that server can be removed or disabled, another added — but an edit
// whose result has errors the file did not have is refused with them
// (*RefusedEdit; nothing is written). ${VAR} references are not expanded
// here: an unset variable does not block an unrelated edit.
//
// Others do not take the lock: an editor saving the file by hand. So just
// before the rename Edit checks that the file is still the one it read
// (same file, size, modification time and content); if it is not, the
// whole read-modify-write starts again on the new contents, up to
// maxEditAttempts times, after which the error wraps ErrKeptChanging. fn
// may thus run more than once, each time on a fresh Doc; it must not act
// outside it. (The check and the rename are two steps: a save landing
// between them, a window of microseconds, is still lost.)
//
// A read-only file system is reported as such (the error wraps
// ErrReadOnly), and so is a missing write permission (os.ErrPermission).
func (v *Validator) Edit(ctx context.Context, path string, fn func(*Doc) error) error {
	path, err := editTarget(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fileError(path, "create config directory", err)
	}
	lock := flock.New(filepath.Join(dir, "."+filepath.Base(path)+".lock"))
	lctx, cancel := context.WithTimeout(ctx, LockTimeout)
	defer cancel()
	locked, err := lock.TryLockContext(lctx, 10*time.Millisecond)
	switch {
	case locked:
	case err != nil && lctx.Err() == nil:
		return fileError(path, "lock "+path, err)
	case ctx.Err() != nil:
		return fmt.Errorf("lock %s: %w", path, ctx.Err())
	default:
		return fmt.Errorf("lock %s: another process holds it: %w", path, errors.Join(err, lctx.Err()))
	}
	defer func() { _ = lock.Unlock() }()

	for attempt := 1; ; attempt++ {
		err := v.editOnce(path, fn, false)
		if !errors.Is(err, errFileChanged) {
			return err
		}
		if attempt == maxEditAttempts {
			return fmt.Errorf("edit %s: %w (it changed during each of %d attempts); retry once it has been saved", path, ErrKeptChanging, maxEditAttempts)
		}
	}
}

// TryEdit is Edit without the write (and without the lock): it runs fn on
// the file at path as Edit would and returns the error Edit would, so a
// command can show what an edit will do (a dry run). A missing file is
// edited as an empty one.
func (v *Validator) TryEdit(path string, fn func(*Doc) error) error {
	path, err := editTarget(path)
	if err != nil {
		return err
	}
	return v.editOnce(path, fn, true)
}

// CheckEntry checks fields as one server entry on its own, as AddServer
// would write it into a file that holds nothing else: nil, or a
// *RefusedEdit with its errors (a command adding many servers can tell
// which one FreeCode would refuse).
func (v *Validator) CheckEntry(fields []Field) error {
	data := []byte("{\n}\n")
	root, err := parseTree(data)
	if err != nil {
		return err
	}
	doc := &Doc{data: data, root: root}
	if err := doc.AddServer(fields); err != nil {
		return err
	}
	if errs := v.checkTree("", doc.data, doc.root); len(errs) > 0 {
		return &RefusedEdit{Errors: doc.unwritten(errs), added: doc.added}
	}
	return nil
}

// maxEditAttempts bounds how often Edit redoes its read-modify-write when
// the file changes under it.
const maxEditAttempts = 5

// ErrKeptChanging is wrapped by Edit's error when the file changed under
// every attempt to edit it.
var ErrKeptChanging = errors.New("the file kept changing while it was being edited")

// ErrReadOnly is wrapped by an edit's error when the file system holding
// the file is mounted read-only.
var ErrReadOnly = errors.New("the file system is read-only")

// errFileChanged says the file is not the one read any more.
var errFileChanged = errors.New("the file changed since it was read")

// editOnce is one read-modify-write of path, under its lock; with dry,
// everything but the write.
func (v *Validator) editOnce(path string, fn func(*Doc) error, dry bool) error {
	state, data, err := readState(path)
	if err != nil {
		return fileError(path, "read config", err)
	}
	mode := fs.FileMode(0o600)
	if state.exists {
		mode = state.mode
	} else {
		data = []byte("{\n}\n") // multi-line, so new files get two-space indentation
	}
	data, bom := stripBOM(data) // kept, and written back
	root, errs := v.check(path, data)
	keys := serverKeys(root)
	if fileErrs, _ := splitErrors(errs, keys); root == nil || len(fileErrs) > 0 {
		return fmt.Errorf("%s is not valid, so it was left untouched:\n%w", path, errs)
	}
	doc := &Doc{file: path, data: data, root: root, crlf: bytes.Contains(data, []byte("\r\n"))}
	if err := fn(doc); err != nil {
		return err
	}
	// The tree is the one the edit's splices already parsed. Errors the
	// file had already (of servers held for them) do not stop an edit:
	// removing or disabling such a server, or adding another, must work.
	if bad := newErrors(errs, keys, v.checkTree(path, doc.data, doc.root), serverKeys(doc.root)); len(bad) > 0 {
		return &RefusedEdit{Path: path, Errors: doc.unwritten(bad), added: doc.added}
	}
	if dry {
		return nil
	}
	out := doc.data
	if bom {
		out = append([]byte(utf8BOM), out...)
	}
	return writeAtomic(path, out, mode, func() error {
		now, _, err := readState(path)
		if err != nil {
			return fileError(path, "read config", err)
		}
		if now != state {
			return errFileChanged
		}
		return nil
	})
}

// fileState identifies what a path held when it was read: which file
// (device and inode), its mode, size, modification time and a hash of its
// content — or that there was none.
type fileState struct {
	exists   bool
	dev, ino uint64
	mode     fs.FileMode
	size     int64
	mtime    int64 // UnixNano
	sum      [sha256.Size]byte
}

// readState reads path and says what it read; a missing file is the zero
// state and no error.
func readState(path string) (fileState, []byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return fileState{}, nil, nil
	}
	if err != nil {
		return fileState{}, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fileState{}, nil, err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fileState{}, nil, err
	}
	s := fileState{exists: true, mode: st.Mode().Perm(), size: st.Size(), mtime: st.ModTime().UnixNano(), sum: sha256.Sum256(data)}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(sys.Dev), sys.Ino
	}
	return s, data, nil
}

// editTarget returns the file path names, following symlinks — a dangling
// one too, so that the edit creates the file it points at instead of
// replacing the link with a regular file.
func editTarget(path string) (string, error) {
	if target, err := filepath.EvalSymlinks(path); err == nil {
		return target, nil
	}
	p := path
	for range maxSymlinks {
		fi, err := os.Lstat(p)
		if errors.Is(err, os.ErrNotExist) {
			return p, nil // the file to create
		}
		if err != nil {
			return "", fmt.Errorf("config %s: %w", path, err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			return p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", fmt.Errorf("config %s: %w", path, err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(p), target)
		}
		p = target
	}
	return "", fmt.Errorf("config %s: more than %d symbolic links to follow", path, maxSymlinks)
}

// maxSymlinks is how many links editTarget follows, as Linux does.
const maxSymlinks = 40

// fileError wraps err of step on path; a read-only file system and a
// missing permission are said in words, since a user can act on them.
func fileError(path, step string, err error) error {
	switch {
	case errors.Is(err, syscall.EROFS):
		return fmt.Errorf("cannot edit %s: %w", path, classified{ErrReadOnly, err})
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("cannot edit %s: %w", path, classified{
			fmt.Errorf("no permission to write it or its directory %s: %w", filepath.Dir(path), os.ErrPermission), err})
	}
	return fmt.Errorf("%s: %w", step, err)
}

// classified is an error shown as kind, matching both kind and cause.
type classified struct{ kind, cause error }

func (e classified) Error() string   { return e.kind.Error() }
func (e classified) Unwrap() []error { return []error{e.kind, e.cause} }

// staleTempAge is how old a temporary file of a writer must be to be
// removed although the process its name gives still runs (a reused pid,
// or one of another pid namespace): no writer holds the lock that long.
const staleTempAge = 10 * time.Minute

// tempPrefix starts the names of the temporary files writeAtomic makes for
// path; the writer's pid follows.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// removeStaleTemps removes the temporary files that writers killed
// mid-write left beside path: those whose writer (the pid in the name) is
// gone, and any older than staleTempAge — among them those of the older
// ".<name>.tmp-<random>" form, which name no process. The caller holds
// path's lock, which every writer holds while its temporary file exists;
// removal is best effort.
func removeStaleTemps(path string) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || !e.Type().IsRegular() {
			continue
		}
		stale := false
		if pid, _, ok := strings.Cut(rest, "-"); ok && processGone(pid) {
			stale = true
		} else if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > staleTempAge {
			stale = true
		}
		if stale {
			_ = os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// processGone reports whether pid (decimal text) names no running process.
func processGone(pid string) bool {
	n, err := strconv.Atoi(pid)
	if err != nil || n <= 0 {
		return false
	}
	return errors.Is(syscall.Kill(n, 0), syscall.ESRCH)
}

// writeAtomic replaces path with data: a temporary file in the same
// directory named after this process, fsynced, renamed over path, and the
// directory fsynced. Stale temporary files of killed writers are removed
// first. Right before the rename it calls unchanged, if set; an error from
// it leaves path alone and is returned as is. The caller holds path's lock.
func writeAtomic(path string, data []byte, mode fs.FileMode, unchanged func() error) (err error) {
	removeStaleTemps(path)
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, tempPrefix(path)+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return fileError(path, "write config", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		_ = tmp.Close()
		return fileError(path, "write config", err)
	}
	if err = tmp.Chmod(mode); err != nil {
		_ = tmp.Close()
		return fileError(path, "write config", err)
	}
	if err = tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fileError(path, "write config", err)
	}
	if err = tmp.Close(); err != nil {
		return fileError(path, "write config", err)
	}
	if unchanged != nil {
		if err = unchanged(); err != nil {
			return err
		}
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fileError(path, "write config", err)
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
	Value any // string, bool, int64, []string, map[string]string, map[string][]string, map[string]int64
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
		return classified{fmt.Errorf("server %q already exists (%s:%d:%d); remove it first or pick another name", name, d.file, l, c), ErrServerExists}
	}
	d.added = append(d.added, name)
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

// SetServerFields sets each of fields in the named server's entry (a
// member's value replaced where it is, a missing one added last) and
// removes the members named in drop, leaving every other member — and
// the rest of the file — as it was: what a user wrote by hand in the
// entry survives an update of the fields FreeCode owns.
func (d *Doc) SetServerFields(name string, fields []Field, drop []string) error {
	el := func() (*node, error) {
		i := d.serverIndex(name)
		if i < 0 {
			return nil, fmt.Errorf("server %q: %w in %s", name, ErrNoServer, d.file)
		}
		return d.servers().elems[i], nil
	}
	if _, err := el(); err != nil {
		return err
	}
	for _, key := range drop {
		e, err := el()
		if err != nil {
			return err
		}
		j := slices.IndexFunc(e.members, func(m member) bool { return m.key == key })
		switch {
		case j < 0:
			continue
		case len(e.members) == 1:
			err = d.splice(e.start, e.end, "{}")
		case j < len(e.members)-1:
			err = d.splice(e.members[j].keyStart, e.members[j+1].keyStart, "")
		default:
			err = d.splice(e.members[j-1].val.end, e.members[j].val.end, "")
		}
		if err != nil {
			return err
		}
	}
	style := detectIndent(d.data)
	for _, f := range fields {
		e, err := el()
		if err != nil {
			return err
		}
		val := renderValue(f.Value)
		if cur := e.member(f.Key); cur != nil {
			if string(d.data[cur.start:cur.end]) == val {
				continue
			}
			err = d.splice(cur.start, cur.end, val)
		} else {
			err = d.insertMember(e, f.Key, func(string) string { return val }, style)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
	case map[string][]string:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, quote(k)+": "+renderValue(v[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case map[string]int64:
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(v)) {
			parts = append(parts, quote(k)+": "+strconv.FormatInt(v[k], 10))
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
