package testutil

import (
	"bytes"
	"io"
	"log"
	"log/slog"
	"sync"
	"testing"
)

// LogWriter returns a writer that sends what is written to it to t's log,
// one t.Log per line: what a child process or a library writes then shows
// with -v or when the test fails, and not on the console of a passing run.
// A last line without a newline is logged when t's cleanups run. What is
// written after that (a process that outlived the test) is dropped: t.Log
// must not be called once the test has completed. Cleanups registered
// after the call (stopping the process that writes) run before its own.
func LogWriter(t testing.TB) io.Writer {
	w := &logWriter{t: t}
	t.Cleanup(w.close)
	return w
}

// logWriter is LogWriter's writer.
type logWriter struct {
	t testing.TB

	mu     sync.Mutex // guards buf and closed
	buf    []byte     // an incomplete line
	closed bool
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.t.Log(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *logWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.t.Log(string(w.buf))
	}
	w.closed = true
	w.buf = nil
}

// Log returns a standard logger that writes to t's log (LogWriter), for
// what takes a *log.Logger: an httputil.ReverseProxy's ErrorLog, say.
func Log(t testing.TB) *log.Logger { return log.New(LogWriter(t), "", 0) }

// Slog returns a structured logger, all levels, that writes to t's log
// (LogWriter), for libraries that take a *slog.Logger.
func Slog(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(LogWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
}
