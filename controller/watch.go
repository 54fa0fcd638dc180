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
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/go-logr/logr"

	"github.com/freecode/freecode/schema"
)

// DefaultDebounce is how long the watcher waits for a burst of file events
// to settle before it reads the file.
const DefaultDebounce = 150 * time.Millisecond

// WatchOptions configure Watch.
type WatchOptions struct {
	// Path of the configuration file. Its directory should exist; if it
	// cannot be watched, Watch relies on polling alone.
	Path      string
	Validator *schema.Validator
	// LookupEnv resolves ${VAR} references; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Source is stored in each Server.Source ("" means schema.SourceUser).
	Source     string
	Controller *Controller
	Logger     logr.Logger
	// Debounce: quiet time after the last event before reading (default
	// DefaultDebounce).
	Debounce time.Duration
}

// Watch feeds the configuration file at opts.Path to opts.Controller until
// ctx ends. It reads the file once at the start, then again after file
// events (debounced) and every pollInterval of the last valid configuration
// (a safety net for file systems without events, such as NFS or FUSE).
//
//   - Events are watched on the file's parent directory, because editors
//     replace a file by renaming a new one over it, which ends a watch on
//     the file itself. Events are filtered on the file's cleaned absolute
//     path; when the file is a symlink, any event in its directory counts
//     (a swapped "..data"-style link names no event for the file), and the
//     link target's directory is watched too.
//   - A read whose content hash equals the last one does nothing at all, so
//     an identical rewrite neither calls SetDesired nor restarts anything.
//   - A valid file is passed to Controller.SetDesired and clears the
//     configuration error; an invalid one goes to Controller.SetConfigError
//     and nothing else changes: the last valid configuration stays applied.
//   - A missing file means no servers are configured (as in schema.Load),
//     so every server is stopped. An editor that deletes and recreates the
//     file does so within the debounce, and the reader sees the new file.
//   - An event-queue overflow or any watcher error triggers a full re-read.
//
// Watch returns nil when ctx ends, or an error at once if opts lacks the
// controller, the validator or the path.
func Watch(ctx context.Context, opts WatchOptions) error {
	if opts.Controller == nil || opts.Validator == nil || opts.Path == "" {
		return errors.New("watch config: Path, Validator and Controller are required")
	}
	abs, err := filepath.Abs(opts.Path)
	if err != nil {
		return fmt.Errorf("watch config: %w", err)
	}
	if opts.Debounce <= 0 {
		opts.Debounce = DefaultDebounce
	}
	w := &watcher{opts: opts, path: filepath.Clean(abs), poll: schema.DefaultPollInterval, log: opts.Logger.WithValues("config", abs)}

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
				debounce.Reset(opts.Debounce)
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
			debounce.Reset(opts.Debounce)
		case <-debounce.C:
			w.reload("file event")
		case <-poll.C:
			w.reload("poll")
			poll.Reset(w.poll)
		}
	}
}

// watcher is Watch's state; only Watch's goroutine uses it.
type watcher struct {
	opts   WatchOptions
	log    logr.Logger
	path   string // cleaned absolute path of the config file
	fw     *fsnotify.Watcher
	dirs   map[string]bool // directories added to fw
	target string          // the symlink's resolved target, "" if path is not a symlink
	hash   string          // of the last content read; "" forces the next read through
	poll   time.Duration
}

// relevant reports whether an event on name may have changed the file.
func (w *watcher) relevant(name string) bool {
	name = filepath.Clean(name)
	switch {
	case name == w.path:
		return true
	case w.target != "":
		return name == w.target || filepath.Dir(name) == filepath.Dir(w.path)
	}
	return false
}

// watchDirs makes sure the file's directory, and its symlink target's
// directory, are watched; called before every read so a symlink created or
// re-pointed later is followed.
func (w *watcher) watchDirs() {
	w.target = ""
	if fi, err := os.Lstat(w.path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if t, err := filepath.EvalSymlinks(w.path); err == nil {
			w.target = filepath.Clean(t)
		} else {
			w.target = w.path // dangling: still treat directory events as relevant
		}
	}
	if w.fw == nil {
		return
	}
	for _, dir := range []string{filepath.Dir(w.path), filepath.Dir(w.target)} {
		if dir == "." || w.dirs[dir] {
			continue
		}
		if err := w.fw.Add(dir); err != nil {
			w.log.Error(err, "cannot watch directory; relying on polling", "dir", dir)
			continue
		}
		w.dirs[dir] = true
	}
}

// reload reads the file and, if its content changed, applies it.
func (w *watcher) reload(why string) {
	w.watchDirs()
	data, err := os.ReadFile(w.path)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		w.hash = ""
		w.opts.Controller.SetConfigError(fmt.Errorf("read config %s: %w", w.path, err))
		return
	}
	sum := "missing"
	if !missing {
		h := sha256.Sum256(data)
		sum = hex.EncodeToString(h[:])
	}
	if sum == w.hash {
		w.log.V(1).Info("config unchanged", "trigger", why)
		return
	}
	w.hash = sum

	cfg := &schema.Config{Path: w.path, MCP: schema.MCP{PollInterval: schema.DefaultPollInterval}}
	if !missing {
		cfg, err = w.opts.Validator.Parse(w.path, data, schema.LoadOptions{LookupEnv: w.opts.LookupEnv, Source: w.opts.Source})
		if err != nil {
			w.log.V(1).Info("config invalid", "trigger", why)
			w.opts.Controller.SetConfigError(err)
			return
		}
	}
	w.poll = max(cfg.MCP.PollInterval, schema.MinPollInterval)
	w.opts.Controller.SetConfigError(nil)
	w.opts.Controller.SetDesired(cfg.MCP.Servers, cfg.MCP.PollInterval)
	w.log.Info("config applied", "trigger", why, "servers", len(cfg.MCP.Servers), "missing", missing)
}
