package controller

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/schema"
	"github.com/freecode/freecode/wire"
)

// logLines records log lines (and passes them to t) so tests can see what
// the watcher decided.
type logLines struct {
	mu    sync.Mutex // guards lines
	lines []string
}

func (l *logLines) logger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, args)
		l.mu.Unlock()
		t.Log(prefix, args)
	}, funcr.Options{Verbosity: 1})
}

// count returns how many lines contain every one of subs.
func (l *logLines) count(subs ...string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
next:
	for _, line := range l.lines {
		for _, s := range subs {
			if !strings.Contains(line, s) {
				continue next
			}
		}
		n++
	}
	return n
}

// watchHarness runs a controller with a fake dialer and a watcher on path.
type watchHarness struct {
	t    *testing.T
	c    *Controller
	d    *fakeDialer
	logs *logLines
	path string
}

func newWatchHarness(t *testing.T, path string, opts ...func(*WatchOptions)) *watchHarness {
	t.Helper()
	v, err := schema.NewValidator()
	require.NoError(t, err)
	w := &watchHarness{t: t, d: newFakeDialer(t), logs: &logLines{}, path: path}
	w.c = New(Options{Dial: w.d.dial, Logger: testLogger(t)})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		require.NoError(t, w.c.Start(ctx))
	}()
	go func() {
		defer wg.Done()
		o := WatchOptions{
			Sources:    schema.Sources{User: path},
			Validator:  v,
			LookupEnv:  func(string) (string, bool) { return "", false },
			Controller: w.c,
			Logger:     w.logs.logger(t),
		}
		for _, f := range opts {
			f(&o)
		}
		require.NoError(t, Watch(ctx, o))
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	return w
}

// config renders a config file with one fake local server per name; a
// name "x=arg" adds an argument.
func config(names ...string) string {
	var parts []string
	for _, n := range names {
		name, arg, _ := strings.Cut(n, "=")
		cmd := `["/fake/` + name + `"`
		if arg != "" {
			cmd += `, "` + arg + `"`
		}
		cmd += "]"
		parts = append(parts, `{"name": "`+name+`", "type": "local", "command": `+cmd+`}`)
	}
	return "{\n  \"mcp\": {\n    \"pollInterval\": 600000,\n    \"servers\": [\n      " + strings.Join(parts, ",\n      ") + "\n    ]\n  }\n}\n"
}

func writeInPlace(t *testing.T, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|os.O_CREATE, 0o600)
	require.NoError(t, err)
	_, err = f.WriteString(content)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

func writeRename(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".config.json.tmp")
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

func (w *watchHarness) waitReady(name string) wire.ServerStatus {
	w.t.Helper()
	var st wire.ServerStatus
	require.Eventually(w.t, func() bool {
		st = statusOf(w.c, name)
		return st.Phase == wire.PhaseReady
	}, 30*time.Second, 5*time.Millisecond, "%s never ready: %+v", name, &st)
	return st
}

func (w *watchHarness) names() []string {
	var out []string
	for _, s := range w.c.Status().Servers {
		out = append(out, s.Name)
	}
	return out
}

// waitUnchanged waits until the watcher has read the file after an event
// and found it unchanged, n times in all.
func (w *watchHarness) waitUnchanged(n int) {
	w.t.Helper()
	require.Eventually(w.t, func() bool {
		return w.logs.count("config unchanged", "file event") >= n
	}, 30*time.Second, 5*time.Millisecond)
}

func TestWatchEdits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	writeInPlace(t, path, config("a"))
	w := newWatchHarness(t, path, func(o *WatchOptions) { o.minMissingGrace = time.Millisecond })
	w.waitReady("a")
	hashA := statusOf(w.c, "a").SpecHash

	// In-place write adds b.
	writeInPlace(t, path, config("a", "b"))
	w.waitReady("b")
	require.Equal(t, 1, w.d.count("a"), "a untouched")

	// Rename-replace changes a's arguments: a restarts.
	writeRename(t, path, config("a=--v2", "b"))
	require.Eventually(t, func() bool {
		s := statusOf(w.c, "a")
		return s.Phase == wire.PhaseReady && s.SpecHash != hashA
	}, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, 2, w.d.count("a"))
	require.Equal(t, 1, w.d.count("b"))

	// Identical rewrites, in place and by rename: read, found unchanged,
	// nothing applied, nothing restarted.
	applied := w.logs.count("config applied")
	writeInPlace(t, path, config("a=--v2", "b"))
	w.waitUnchanged(1)
	writeRename(t, path, config("a=--v2", "b"))
	w.waitUnchanged(2)
	require.Equal(t, applied, w.logs.count("config applied"))
	require.Equal(t, 2, w.d.count("a"))
	require.Equal(t, 1, w.d.count("b"))

	// An invalid edit of the file (a typo beside "servers", not in one
	// server): error with position in status, nothing stopped.
	writeInPlace(t, path, "{\n  \"mcp\": {\n    \"servers\": [\n      {\"name\": \"a\", \"type\": \"local\", \"command\": [\"x\"]}\n    ],\n    \"pollIntervall\": 100\n  }\n}\n")
	require.Eventually(t, func() bool { return w.c.Status().ConfigError != "" }, 30*time.Second, 5*time.Millisecond)
	cfgErr := w.c.Status().ConfigError
	require.Contains(t, cfgErr, path+":6:")
	require.Contains(t, cfgErr, `unknown field "pollIntervall" (did you mean "pollInterval"?)`)
	require.Equal(t, []string{"a", "b"}, w.names())
	require.Equal(t, wire.PhaseReady, statusOf(w.c, "a").Phase)
	require.Equal(t, wire.PhaseReady, statusOf(w.c, "b").Phase)
	require.Equal(t, applied, w.logs.count("config applied"))

	// Then a valid one: error cleared, b removed, a kept.
	writeRename(t, path, config("a=--v2"))
	require.Eventually(t, func() bool {
		st := w.c.Status()
		return st.ConfigError == "" && len(st.Servers) == 1
	}, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, 2, w.d.count("a"), "a kept running through the invalid edit")
	require.True(t, w.d.last("b").isClosed())

	// Deleting the file means no servers, once it stayed missing for the
	// grace: until then reads only record a configuration error (see
	// TestWatchMissingFileGrace). A short pollInterval and minimum grace
	// make that 200 ms; changing pollInterval restarts nothing.
	writeRename(t, path, withPoll(config("a=--v2"), 100))
	require.Eventually(t, func() bool { return w.logs.count("config applied") == applied+2 }, 30*time.Second, 5*time.Millisecond)
	require.NoError(t, os.Remove(path))
	require.Eventually(t, func() bool { return len(w.c.Status().Servers) == 0 }, 30*time.Second, 5*time.Millisecond)
	require.True(t, w.d.last("a").isClosed())
	require.Equal(t, 2, w.d.count("a"))
	require.Positive(t, w.logs.count("config file missing; not applied yet", path+" is missing"))
	require.Empty(t, w.c.Status().ConfigError)

	// And recreating it starts them again.
	writeRename(t, path, config("a"))
	w.waitReady("a")
}

// withPoll sets a config's pollInterval (ms).
func withPoll(cfg string, ms int) string {
	return strings.Replace(cfg, `"pollInterval": 600000`, `"pollInterval": `+strconv.Itoa(ms), 1)
}

// A file that goes missing for longer than the debounce and comes back
// before the next check stops nothing: the gap only shows as a
// configuration error.
func TestWatchDeleteAndRecreate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	writeInPlace(t, path, config("a"))
	w := newWatchHarness(t, path)
	w.waitReady("a")

	require.NoError(t, os.Remove(path))
	require.Eventually(t, func() bool {
		return strings.Contains(w.c.Status().ConfigError, path+" is missing; keeping the last configuration")
	}, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"a"}, w.names())
	require.Equal(t, wire.PhaseReady, statusOf(w.c, "a").Phase)
	require.False(t, w.d.last("a").isClosed())

	writeRename(t, path, config("a"))
	require.Eventually(t, func() bool { return w.c.Status().ConfigError == "" }, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, wire.PhaseReady, statusOf(w.c, "a").Phase)
	require.Equal(t, 1, w.d.count("a"), "a never restarted")
	require.False(t, w.d.last("a").isClosed())
}

// memFile is a config file in memory whose reads the test drives.
type memFile struct {
	mu   sync.Mutex // guards data
	data *string    // nil: missing
}

func (f *memFile) read(string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.data == nil {
		return nil, fs.ErrNotExist
	}
	return []byte(*f.data), nil
}

func (f *memFile) set(data *string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data = data
}

// An editor or a tool that deletes the config and writes it again a
// moment later, with the 5 s poll in the gap, stops nothing: a missing
// file is applied only once it stayed missing for the grace (two polls,
// at least 10 s), at the check scheduled for then. The watcher's
// decisions are driven read by read on a clock the test moves.
func TestWatchMissingFileGrace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	cfg := withPoll(config("a"), 5000)
	file := &memFile{data: &cfg}
	var applied [][]string // server names of each configuration applied
	c := New(Options{Dial: newFakeDialer(t).dial, Logger: testLogger(t)})
	w, err := newWatcher(WatchOptions{
		Sources:   schema.Sources{User: path},
		Validator: mustValidator(t),
		LookupEnv: func(string) (string, bool) { return "", false },
		ReadFile:  file.read,
		OnApplied: func(cfg *schema.Config) {
			names := []string{}
			for _, s := range cfg.MCP.Servers {
				names = append(names, s.Name)
			}
			applied = append(applied, names)
		},
		Controller: c,
		Logger:     testLogger(t),
	})
	require.NoError(t, err)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return clock }

	w.reload("start")
	require.Equal(t, [][]string{{"a"}}, applied)
	require.Equal(t, 10*time.Second, w.missingGrace(), "two polls of 5 s")

	// Deleted: the file event's read holds it, and schedules a check.
	file.set(nil)
	w.reload("file event")
	require.Len(t, applied, 1)
	require.Contains(t, c.Status().ConfigError, path+" is missing; keeping the last configuration unless it stays missing for 10s")
	require.Equal(t, 10*time.Second, w.recheckIn)

	// The poll falls in the gap, 0.5 s later: still held.
	clock = clock.Add(500 * time.Millisecond)
	w.reload("poll")
	require.Len(t, applied, 1, "a poll in the gap applied the missing file")
	require.Equal(t, 9500*time.Millisecond, w.recheckIn)

	// Written again 1 s after the delete: the same servers, error cleared.
	clock = clock.Add(500 * time.Millisecond)
	file.set(&cfg)
	w.reload("file event")
	require.Equal(t, [][]string{{"a"}, {"a"}}, applied)
	require.Empty(t, c.Status().ConfigError)
	require.Zero(t, w.recheckIn)

	// Deleted for good: held through polls until the grace has passed
	// since it was first found missing, then applied.
	file.set(nil)
	w.reload("file event")
	for range 2 {
		clock = clock.Add(4 * time.Second)
		w.reload("poll")
		require.Len(t, applied, 2)
	}
	require.Equal(t, 2*time.Second, w.recheckIn)
	clock = clock.Add(w.recheckIn)
	w.reload("missing file check")
	require.Equal(t, [][]string{{"a"}, {"a"}, {}}, applied)
	require.Empty(t, c.Status().ConfigError)
	require.Zero(t, w.recheckIn)

	// A file that was already missing at the last valid configuration is
	// simply absent: nothing is held.
	w.reload("poll")
	require.Len(t, applied, 3, "unchanged")
}

func mustValidator(t *testing.T) *schema.Validator {
	t.Helper()
	v, err := schema.NewValidator()
	require.NoError(t, err)
	return v
}

func TestWatchSymlinkSwap(t *testing.T) {
	// The layout of a Kubernetes ConfigMap volume: config.json ->
	// ..data/config.json, ..data -> ..v1; an update swaps ..data.
	dir := t.TempDir()
	for _, v := range []string{"..v1", "..v2"} {
		require.NoError(t, os.Mkdir(filepath.Join(dir, v), 0o700))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "..v1", "config.json"), []byte(config("a")), 0o600))
	require.NoError(t, os.Symlink("..v1", filepath.Join(dir, "..data")))
	path := filepath.Join(dir, "config.json")
	require.NoError(t, os.Symlink(filepath.Join("..data", "config.json"), path))

	w := newWatchHarness(t, path)
	w.waitReady("a")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "..v2", "config.json"), []byte(config("a", "b")), 0o600))
	require.NoError(t, os.Symlink("..v2", filepath.Join(dir, "..data_tmp")))
	require.NoError(t, os.Rename(filepath.Join(dir, "..data_tmp"), filepath.Join(dir, "..data")))
	w.waitReady("b")
	require.Equal(t, 1, w.d.count("a"))
}

func TestWatchSymlinkToAnotherDirectory(t *testing.T) {
	home, dotfiles := t.TempDir(), t.TempDir()
	real := filepath.Join(dotfiles, "freecode.json")
	require.NoError(t, os.WriteFile(real, []byte(config("a")), 0o600))
	path := filepath.Join(home, "config.json")
	require.NoError(t, os.Symlink(real, path))

	w := newWatchHarness(t, path)
	w.waitReady("a")
	writeInPlace(t, real, config("a", "b"))
	w.waitReady("b")
}

func TestWatchMissingFileAtStart(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	w := newWatchHarness(t, path)
	require.Eventually(t, func() bool { return w.logs.count("config applied") == 1 }, 30*time.Second, 5*time.Millisecond)
	require.Empty(t, w.c.Status().Servers)
	writeRename(t, path, config("a"))
	w.waitReady("a")
}

func TestWatchOptionsRequired(t *testing.T) {
	v, err := schema.NewValidator()
	require.NoError(t, err)
	c := New(Options{})
	for name, opts := range map[string]WatchOptions{
		"no controller": {Sources: schema.Sources{User: "x"}, Validator: v},
		"no user file":  {Sources: schema.Sources{Project: "x"}, Validator: v, Controller: c},
		"no loader":     {Sources: schema.Sources{User: "x"}, Controller: c},
	} {
		require.Error(t, Watch(context.Background(), opts), name)
	}
}

func TestWatchPollsAtTheConfiguredInterval(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	writeInPlace(t, path, withPoll(config("a"), 100))
	w := newWatchHarness(t, path)
	w.waitReady("a")
	// Two polls that found nothing new: the safety net runs, at the
	// file's pollInterval, and changes nothing.
	require.Eventually(t, func() bool { return w.logs.count("config unchanged", "poll") >= 2 }, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, w.d.count("a"))
	require.Equal(t, 1, w.logs.count("config applied"))
}

// A new pollInterval takes effect when it is applied, not after the old
// period ran out (ten minutes here, far beyond the wait).
func TestWatchPollIntervalChangeResetsTheTimer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	writeInPlace(t, path, config("a"))
	w := newWatchHarness(t, path)
	w.waitReady("a")
	writeRename(t, path, withPoll(config("a"), 100))
	require.Eventually(t, func() bool { return w.logs.count("config unchanged", "poll") >= 1 }, 30*time.Second, 5*time.Millisecond)
	require.Equal(t, 1, w.d.count("a"))
}

// shiftingFile is a config file that is edited right after some of its
// reads: after a read returned content X, the file holds after[X] (once).
type shiftingFile struct {
	mu        sync.Mutex // guards data, after, reads and settledAt
	data      string
	after     map[string]string
	reads     int // reads so far
	settledAt int // reads when the last edit in after was made; -1 while edits are pending
}

func (f *shiftingFile) read(string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	got := f.data
	if next, ok := f.after[got]; ok {
		delete(f.after, got)
		f.data = next
		if len(f.after) == 0 {
			f.settledAt = f.reads
		}
	}
	return []byte(got), nil
}

// set makes the file hold data, to be edited after reads as after says.
func (f *shiftingFile) set(data string, after map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.data, f.after, f.settledAt = data, after, -1
}

// readsSinceSettled is how many reads followed the last edit (-1 while
// edits are pending).
func (f *shiftingFile) readsSinceSettled() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.settledAt < 0 {
		return -1
	}
	return f.reads - f.settledAt
}

// The file goes A→B right after the read that found A, and back to A right
// after the read that found B. Every read is decided on as it was read, so
// A ends up applied, as the file holds it. (Hashing one read and loading
// another applied B, read second, under the hash of A; every later read
// found A, "unchanged", and B stayed applied for good.)
func TestWatchAppliesTheBytesItCompared(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	// Polls read the file every 100 ms; no file event ever comes.
	start, a, b := withPoll(config("s"), 100), withPoll(config("s", "a"), 100), withPoll(config("s", "b"), 100)
	f := &shiftingFile{data: start, settledAt: -1}
	var (
		mu      sync.Mutex // guards applied
		applied [][]string // server names of each applied configuration
	)
	w := newWatchHarness(t, path, func(o *WatchOptions) {
		o.ReadFile = func(name string) ([]byte, error) {
			assert.Equal(t, path, name)
			return f.read(name)
		}
		o.OnApplied = func(cfg *schema.Config) {
			var names []string
			for _, s := range cfg.MCP.Servers {
				names = append(names, s.Name)
			}
			mu.Lock()
			applied = append(applied, names)
			mu.Unlock()
		}
	})
	w.waitReady("s")

	f.set(a, map[string]string{a: b, b: a})
	// Two reads after the last edit: the first found A, and the watcher
	// decided on it (and applied what it decided) before it read again.
	require.Eventually(t, func() bool { return f.readsSinceSettled() >= 2 }, 30*time.Second, 5*time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"s", "a"}, applied[len(applied)-1], "the file holds A; every configuration applied: %v", applied)
	require.Equal(t, [][]string{{"s"}, {"s", "a"}, {"s", "b"}, {"s", "a"}}, applied, "each read that differed applied what it read")
}
