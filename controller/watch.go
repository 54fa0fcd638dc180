package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"

	"github.com/freecode/freecode/schema"
)

// DefaultDebounce is how long the watcher waits for a burst of file events
// to settle before it reads the file. An editor's save or a rename-replace
// is one burst far shorter than this; a file read mid-write fails
// validation and the next event reads it again. The wait is most of the
// edit-to-ready time (BENCHMARKS.md, scenario 1).
const DefaultDebounce = 30 * time.Millisecond

// MinMissingGrace is the least time a configuration file that existed must
// stay missing before its absence is applied; the grace is two poll
// intervals when that is longer (see Watch).
const MinMissingGrace = 10 * time.Second

// WatchOptions configure Watch.
type WatchOptions struct {
	// Sources are the files of the configuration: every file whose change
	// can change the desired state (Sources.Files). User is required; its
	// directory should exist, and if one cannot be watched, Watch relies
	// on polling alone.
	Sources schema.Sources
	// Validator builds the desired state from what was read
	// (Validator.Desired, with LookupEnv), unless Load is set.
	Validator *schema.Validator
	// LookupEnv resolves ${VAR} references; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Load, if set, builds the desired state instead of Validator: from
	// src (Sources with absolute paths, the keys of contents) and contents,
	// exactly the bytes the watcher read and compared. An error is a
	// configuration error.
	Load func(src schema.Sources, contents schema.Contents) (*schema.Config, error)
	// ReadFile reads one file; nil means os.ReadFile. Every read of the
	// configuration reads each file once.
	ReadFile func(string) ([]byte, error)
	// OnApplied, if set, receives every valid configuration after it was
	// handed to the controller (for state derived from it, such as
	// permission rules). It runs on Watch's goroutine.
	OnApplied  func(*schema.Config)
	Controller *Controller
	Logger     logr.Logger
	// Debounce: quiet time after the last event before reading (default
	// DefaultDebounce).
	Debounce time.Duration

	// minMissingGrace replaces MinMissingGrace (tests).
	minMissingGrace time.Duration
}

// Watch feeds the configuration to opts.Controller until ctx ends. It reads
// the files once at the start, then again after file events (debounced) and
// every pollInterval of the last valid configuration (a safety net for file
// systems without events, such as NFS or FUSE).
//
//   - Events are watched on each file's parent directory, because editors
//     replace a file by renaming a new one over it, which ends a watch on
//     the file itself. Events are filtered on the files' cleaned absolute
//     paths; when a file is a symlink, any event in its directory counts
//     (a swapped "..data"-style link names no event for the file), and the
//     link target's directory is watched too.
//   - Each read reads every file once, and what it decides on is exactly
//     those bytes: they are hashed (over all files) and, if the hash
//     differs from the last one, the desired state is built from them, so
//     a file that changes while it is read is applied as it was read and
//     the change is read at the next event or poll. A read whose hash
//     equals the last one does nothing at all, so an identical rewrite
//     neither calls SetDesired nor restarts anything.
//   - A valid configuration is passed to Controller.SetDesired and clears
//     the configuration error; an invalid one goes to
//     Controller.SetConfigError and nothing else changes: the last valid
//     configuration stays applied. A server whose entry alone has errors
//     (schema.HoldInvalid) does not make it invalid: it is desired, held,
//     and logged.
//   - A file that does not exist is simply absent: a missing user config
//     means no servers are configured (as in schema.Load). But a file that
//     existed when the last valid configuration was read and is now
//     missing may be on its way back (an editor's or a tool's delete and
//     write, a sync tool): a read that finds it missing records a
//     configuration error and changes nothing else, until it has been
//     missing for the grace, the longer of two poll intervals and
//     MinMissingGrace (10 s by default) from the first read that found it
//     missing. A read then (one is scheduled for that moment) that still
//     finds it missing applies its absence, which for the user config
//     stops every server. If it is back before, what it holds is applied
//     as usual, and an unchanged file restarts nothing. A poll that falls
//     between the delete and the write therefore changes nothing.
//   - An event-queue overflow or any watcher error triggers a full re-read.
//   - The poll timer follows the last valid configuration's pollInterval
//     from the moment it is applied.
//
// Watch returns nil when ctx ends, or an error at once if opts lacks the
// controller, Sources.User, or both Load and Validator.
func Watch(ctx context.Context, opts WatchOptions) error {
	w, err := newWatcher(opts)
	if err != nil {
		return err
	}

	var events <-chan fsnotify.Event
	var errs <-chan error
	if fw, err := fsnotify.NewWatcher(); err != nil {
		w.log.Error(err, "cannot watch for file events; polling only")
	} else {
		defer fw.Close()
		w.fw, events, errs = fw, fw.Events, fw.Errors
		w.dirs = make(map[string]bool)
	}
	w.reload("start")

	debounce := time.NewTimer(time.Hour)
	debounce.Stop()
	defer debounce.Stop()
	poll := time.NewTimer(w.poll)
	defer poll.Stop()
	recheck := time.NewTimer(time.Hour)
	recheck.Stop()
	defer recheck.Stop()
	// rearm sets the recheck timer for a held absence, or stops it.
	rearm := func() {
		if w.recheckIn > 0 {
			recheck.Reset(w.recheckIn)
		} else {
			recheck.Stop()
		}
	}
	rearm()
	period := w.poll // poll's current period
	// repoll restarts the poll timer if a reload changed the period, or
	// always (after a poll).
	repoll := func(always bool) {
		if always || w.poll != period {
			period = w.poll
			poll.Reset(period)
		}
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if w.relevant(ev.Name) {
				debounce.Reset(w.opts.Debounce)
			}
		case err, ok := <-errs:
			if !ok {
				errs = nil
				continue
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				w.log.Info("file events overflowed; reading the config again")
			} else {
				w.log.Error(err, "watching the config directory")
			}
			debounce.Reset(w.opts.Debounce)
		case <-debounce.C:
			w.reload("file event")
			rearm()
			repoll(false)
		case <-poll.C:
			w.reload("poll")
			rearm()
			repoll(true)
		case <-recheck.C:
			w.reload("missing file check")
			rearm()
			repoll(false)
		}
	}
}

// newWatcher checks opts and returns the watcher Watch runs, which has
// read nothing yet.
func newWatcher(opts WatchOptions) (*watcher, error) {
	if opts.Controller == nil || opts.Sources.User == "" || (opts.Load == nil && opts.Validator == nil) {
		return nil, errors.New("watch config: Controller, Sources.User and either Load or Validator are required")
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	if opts.minMissingGrace <= 0 {
		opts.minMissingGrace = MinMissingGrace
	}
	src, err := absSources(opts.Sources)
	if err != nil {
		return nil, fmt.Errorf("watch config: %w", err)
	}
	w := &watcher{opts: opts, src: src, poll: schema.DefaultPollInterval, now: time.Now}
	for _, f := range src.Files() {
		w.files = append(w.files, &watchedFile{path: f})
	}
	w.log = opts.Logger.WithValues("config", src.User)
	if w.opts.Load == nil {
		w.opts.Load = func(src schema.Sources, c schema.Contents) (*schema.Config, error) {
			return opts.Validator.Desired(src, c, schema.LoadOptions{LookupEnv: opts.LookupEnv})
		}
	}
	return w, nil
}

// watcher is Watch's state; only Watch's goroutine uses it.
type watcher struct {
	opts  WatchOptions
	src   schema.Sources // opts.Sources, absolute
	log   logr.Logger
	files []*watchedFile // one per file of src, in src.Files order
	fw    *fsnotify.Watcher
	dirs  map[string]bool // directories added to fw
	hash  string          // of the last contents read; "" forces the next read through
	poll  time.Duration   // pollInterval of the last valid configuration
	now   func() time.Time
	// missingSince is when a read first found files missing that existed
	// at the last valid configuration, while that is not applied yet (zero
	// otherwise); recheckIn is how long after the last read the next one
	// should look again (0: no need).
	missingSince time.Time
	recheckIn    time.Duration
}

// missingGrace is how long a file that existed must stay missing before
// its absence is applied: two poll intervals, at least the minimum grace.
func (w *watcher) missingGrace() time.Duration {
	return max(2*w.poll, w.opts.minMissingGrace)
}

// absSources returns src with every path absolute and cleaned.
func absSources(src schema.Sources) (schema.Sources, error) {
	for _, p := range []*string{&src.User, &src.Project, &src.Trust} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return schema.Sources{}, err
		}
		*p = abs // filepath.Abs cleans
	}
	return src, nil
}

// watchedFile is one file of the configuration.
type watchedFile struct {
	path   string // cleaned absolute path
	target string // the symlink's resolved target, "" if path is not a symlink
	// existed: the file existed when the last valid configuration was
	// read; exists: it did at the last read.
	existed, exists bool
}

// relevant reports whether an event on name may have changed a file.
func (w *watcher) relevant(name string) bool {
	name = filepath.Clean(name)
	for _, f := range w.files {
		switch {
		case name == f.path:
			return true
		case f.target != "" && (name == f.target || filepath.Dir(name) == filepath.Dir(f.path)):
			return true
		}
	}
	return false
}

// watchDirs makes sure each file's directory, and its symlink target's
// directory, are watched; called before every read so a symlink created or
// re-pointed later is followed.
func (w *watcher) watchDirs() {
	for _, f := range w.files {
		f.target = ""
		if fi, err := os.Lstat(f.path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			if t, err := filepath.EvalSymlinks(f.path); err == nil {
				f.target = filepath.Clean(t)
			} else {
				f.target = f.path // dangling: still treat directory events as relevant
			}
		}
		if w.fw == nil {
			continue
		}
		for _, dir := range []string{filepath.Dir(f.path), filepath.Dir(f.target)} {
			if dir == "." || w.dirs[dir] {
				continue
			}
			if err := w.fw.Add(dir); err != nil {
				w.log.V(1).Info("cannot watch directory; relying on polling", "dir", dir, "error", err.Error())
				continue
			}
			w.dirs[dir] = true
		}
	}
}

// reload reads the files and, if their contents changed, applies exactly
// what it read.
func (w *watcher) reload(why string) {
	w.watchDirs()
	contents := schema.ReadSources(w.src, w.opts.ReadFile)
	h := sha256.New()
	var gone []string // missing files that existed at the last valid configuration
	for _, f := range w.files {
		c := contents[f.path]
		f.exists = c.Err == nil
		switch {
		case c.Missing():
			fmt.Fprintf(h, "%s\x00missing\x00", f.path)
			if f.existed {
				gone = append(gone, f.path)
			}
		case c.Err != nil:
			w.hash = ""
			w.opts.Controller.SetConfigError(fmt.Errorf("read config %s: %w", f.path, c.Err))
			return
		default:
			fmt.Fprintf(h, "%s\x00%d\x00", f.path, len(c.Data))
			h.Write(c.Data)
		}
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if sum == w.hash {
		w.log.V(1).Info("config unchanged", "trigger", why)
		return
	}
	w.recheckIn = 0
	if len(gone) == 0 {
		w.missingSince = time.Time{}
	} else {
		now := w.now()
		if w.missingSince.IsZero() {
			w.missingSince = now
		}
		grace := w.missingGrace()
		if wait := w.missingSince.Add(grace).Sub(now); wait > 0 {
			// Whatever a read finds goes through: the files back as they
			// were (which clears this error), or still missing.
			w.hash = ""
			w.recheckIn = wait
			err := fmt.Errorf("%s is missing; keeping the last configuration unless it stays missing for %s", strings.Join(gone, ", "), grace)
			w.log.Info("config file missing; not applied yet", "trigger", why, "error", err.Error())
			w.opts.Controller.SetConfigError(err)
			return
		}
		w.missingSince = time.Time{}
	}
	w.hash = sum

	cfg, err := w.opts.Load(w.src, contents)
	if err != nil {
		w.log.Info("config invalid; the last valid one stays applied", "trigger", why, "error", err.Error())
		w.opts.Controller.SetConfigError(err)
		return
	}
	w.poll = max(cfg.MCP.PollInterval, schema.MinPollInterval)
	for _, f := range w.files {
		f.existed = f.exists
	}
	// Logged first: whoever sees the effects of SetDesired sees the line.
	w.log.Info("config applied", "trigger", why, "servers", len(cfg.MCP.Servers))
	held := map[*schema.Hold]bool{}
	for _, s := range cfg.MCP.Servers {
		if h := s.Hold; h != nil && h.Kind == schema.HoldInvalid && !held[h] {
			held[h] = true
			w.log.Info("server not started: its entry has errors; the others run", "server", s.Name, "error", h.Errors.Error())
		}
	}
	if w.opts.OnApplied != nil {
		w.opts.OnApplied(cfg)
	}
	w.opts.Controller.SetConfigError(nil)
	w.opts.Controller.SetDesired(cfg.MCP.Servers, cfg.MCP.PollInterval)
}
