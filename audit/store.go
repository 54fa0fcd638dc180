package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// Names in the home.
const (
	// DirName is the log's directory in the home (0700).
	DirName = "audit"
	// FileName is the file records are appended to; rotated files are
	// audit.1.jsonl (the newest) to audit.<MaxFiles>.jsonl.
	FileName = "audit.jsonl"
	headName = "audit.head"
	lockName = "audit.lock"
	keyName  = "key"
)

// Defaults of Options.
const (
	DefaultMaxBytes = 8 << 20
	DefaultMaxFiles = 4
	// LockTimeout bounds the wait for another process's append or read.
	LockTimeout = 5 * time.Second
)

// ErrLocked is the error of a lock another process held past LockTimeout.
var ErrLocked = errors.New("another process holds the audit log's lock")

// Dir is the log's directory in home.
func Dir(home string) string { return filepath.Join(home, DirName) }

// Options bound the files: the current file is rotated when a batch would
// take it past MaxBytes, and at most MaxFiles rotated files are kept (the
// oldest is removed).
type Options struct {
	MaxBytes int64
	MaxFiles int
}

// Store is the log of one home. Several processes may append to it at once
// (serve, one-shot commands, login): every append and read holds a file
// lock (audit.lock: exclusive to append, shared to read), and within this
// process mu. Store is safe for concurrent use.
type Store struct {
	dir  string
	opts Options
	key  Key

	mu   sync.Mutex // serializes this process's holders of lock
	lock *flock.Flock
}

// Open opens (making it, 0700, with its key) the log of home.
func Open(ctx context.Context, home string, opts Options) (*Store, error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	dir := Dir(home)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	s := &Store{dir: dir, opts: opts, lock: flock.New(filepath.Join(dir, lockName), flock.SetPermissions(0o600))}
	err := s.locked(ctx, true, func() error {
		var err error
		s.key, err = loadKey(filepath.Join(dir, keyName))
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Path is the file records are appended to.
func (s *Store) Path() string { return filepath.Join(s.dir, FileName) }

// Key is the home's digest key.
func (s *Store) Key() Key { return s.key }

// locked runs fn holding the file lock, exclusive or shared, waiting at
// most LockTimeout (or until ctx ends) for it.
func (s *Store) locked(ctx context.Context, exclusive bool, fn func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	lctx, cancel := context.WithTimeout(ctx, LockTimeout)
	defer cancel()
	try := s.lock.TryRLockContext
	if exclusive {
		try = s.lock.TryLockContext
	}
	ok, err := try(lctx, 10*time.Millisecond)
	switch {
	case ok:
	case err != nil && lctx.Err() == nil:
		return fmt.Errorf("audit log: lock: %w", err)
	default:
		return fmt.Errorf("audit log: %w (%s)", ErrLocked, s.lock.Path())
	}
	defer func() { _ = s.lock.Unlock() }()
	return fn()
}

// head is the hash and number of the last record appended, kept beside
// the files so that records cut from the end show (Verify).
type head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

// HashLine is a line's hash, as the next record's Prev holds it.
func HashLine(line []byte) string {
	h := sha256.Sum256(line)
	return "sha256:" + hex.EncodeToString(h[:])
}

// files are the log's files, oldest first: the rotated ones, then the
// current one (which may not exist).
func (s *Store) files() []string {
	var out []string
	for i := s.opts.MaxFiles; i >= 1; i-- {
		p := filepath.Join(s.dir, "audit."+strconv.Itoa(i)+".jsonl")
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return append(out, s.Path())
}

// Append appends recs in one write, each chained to the one before. It
// sets their Seq and Prev, and Time and PID when unset.
func (s *Store) Append(ctx context.Context, recs ...Record) error {
	if len(recs) == 0 {
		return nil
	}
	return s.locked(ctx, true, func() error { return s.append(recs) })
}

func (s *Store) append(recs []Record) error {
	h, err := s.readHead()
	if err != nil {
		// No head (the first record, or it was lost): chain to the last
		// line there is.
		if h, err = s.tail(); err != nil {
			return err
		}
	}
	var buf bytes.Buffer
	for _, r := range recs {
		r.clean()
		r.Seq, r.Prev = h.Seq+1, h.Hash
		if r.Time.IsZero() {
			r.Time = time.Now()
		}
		r.Time = r.Time.UTC()
		if r.PID == 0 {
			r.PID = os.Getpid()
		}
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
		h = head{Seq: r.Seq, Hash: HashLine(line)}
	}
	if err := s.rotateFor(int64(buf.Len())); err != nil {
		return err
	}
	f, err := os.OpenFile(s.Path(), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		_, err = f.Write(buf.Bytes())
		if err != nil {
			// A full disk leaves no half line: the next append starts
			// clean, chained to the head that was not moved.
			_ = f.Truncate(st.Size())
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("audit log: write %s: %w", s.Path(), err)
	}
	return s.writeHead(h)
}

// rotateFor rotates the current file when n more bytes would take it past
// MaxBytes (a file is never rotated empty, so one batch larger than
// MaxBytes still goes somewhere). The oldest file past MaxFiles goes.
func (s *Store) rotateFor(n int64) error {
	st, err := os.Stat(s.Path())
	if err != nil || st.Size() == 0 || st.Size()+n <= s.opts.MaxBytes {
		return nil
	}
	name := func(i int) string { return filepath.Join(s.dir, "audit."+strconv.Itoa(i)+".jsonl") }
	if err := os.Remove(name(s.opts.MaxFiles)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("audit log: rotate: %w", err)
	}
	for i := s.opts.MaxFiles - 1; i >= 1; i-- {
		if err := os.Rename(name(i), name(i+1)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("audit log: rotate: %w", err)
		}
	}
	if err := os.Rename(s.Path(), name(1)); err != nil {
		return fmt.Errorf("audit log: rotate: %w", err)
	}
	return nil
}

func (s *Store) readHead() (head, error) {
	data, err := os.ReadFile(filepath.Join(s.dir, headName))
	if err != nil {
		return head{}, err
	}
	var h head
	if err := json.Unmarshal(data, &h); err != nil || h.Hash == "" {
		return head{}, fmt.Errorf("audit head: malformed")
	}
	return h, nil
}

// writeHead replaces the head (a new file renamed over it). When that
// fails the head is removed, so that the next append chains to the file's
// last line rather than to an older head.
func (s *Store) writeHead(h head) error {
	path := filepath.Join(s.dir, headName)
	data, _ := json.Marshal(h)
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, append(data, '\n'), 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		_ = os.Remove(path)
		return fmt.Errorf("audit log: head: %w", err)
	}
	return nil
}

// tail is the head the files end with: the last line of the newest file
// that has one (zero when there is none).
func (s *Store) tail() (head, error) {
	files := s.files()
	for i := len(files) - 1; i >= 0; i-- {
		line, err := lastLine(files[i])
		if err != nil {
			return head{}, err
		}
		if line == nil {
			continue
		}
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return head{}, fmt.Errorf("audit log: the last line of %s is not a record: %w", files[i], err)
		}
		return head{Seq: r.Seq, Hash: HashLine(line)}, nil
	}
	return head{}, nil
}

// maxLine bounds a line read back (records are far smaller: every string
// is at most maxField).
const maxLine = 64 << 10

// lastLine is path's last complete line, nil when it has none.
func lastLine(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	off := max(st.Size()-maxLine, 0)
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	buf = bytes.TrimRight(buf, "\n")
	if len(buf) == 0 {
		return nil, nil
	}
	return buf[bytes.LastIndexByte(buf, '\n')+1:], nil
}

// Entry is one line of the log as read back.
type Entry struct {
	Record
	File string // the file's base name
	Line int    // from 1
	Hash string // HashLine of the line
	// Err is set for a line that is not a record (Record is then empty).
	Err error
	raw []byte
}

// Read returns every line of the log, oldest first, and the head.
func (s *Store) Read(ctx context.Context) ([]Entry, error) {
	var out []Entry
	err := s.locked(ctx, false, func() error {
		var err error
		out, err = s.read()
		return err
	})
	return out, err
}

func (s *Store) read() ([]Entry, error) {
	var out []Entry
	for _, path := range s.files() {
		f, err := os.Open(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("audit log: %w", err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 4096), maxLine)
		n := 0
		for sc.Scan() {
			n++
			line := bytes.Clone(sc.Bytes())
			e := Entry{File: filepath.Base(path), Line: n, Hash: HashLine(line), raw: line}
			if err := json.Unmarshal(line, &e.Record); err != nil || e.Kind == "" {
				e.Record, e.Err = Record{}, fmt.Errorf("not a record")
			}
			out = append(out, e)
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("audit log: read %s: %w", path, err)
		}
	}
	return out, nil
}
