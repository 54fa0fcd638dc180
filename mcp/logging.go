package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// LogLevels are the severities of MCP log messages (RFC 5424's), lowest
// first: what Spec.LogLevel may be.
var LogLevels = []string{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// What a server can put in its log with notifications/message. The ring
// bounds how many lines are kept (Options.StderrLines); these bound the
// rate and the size of each, so that a chatty server neither pushes its
// stderr lines (which explain a crash) out of the ring in an instant nor
// makes FreeCode render megabytes per message.
const (
	// logRate is how many log messages a second a server may send on
	// average, after a burst of logBurst; more are dropped (and counted in
	// the session's log).
	logRate  = 50
	logBurst = 200
	// maxLevelBytes and maxLoggerBytes cut a message's level and logger.
	maxLevelBytes  = 32
	maxLoggerBytes = 256
)

// logBucket is the token bucket of a session's log messages.
type logBucket struct {
	mu      sync.Mutex // guards tokens, at and dropped
	tokens  float64
	at      time.Time // when tokens was last refilled
	dropped int       // messages dropped since the last one taken
}

// take reports whether one more message may go into the log now, and how
// many were dropped before it (once it may).
func (b *logBucket) take(now time.Time) (ok bool, droppedBefore int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.at.IsZero() {
		b.tokens, b.at = logBurst, now
	}
	b.tokens = min(logBurst, b.tokens+now.Sub(b.at).Seconds()*logRate)
	b.at = now
	if b.tokens < 1 {
		b.dropped++
		return false, 0
	}
	b.tokens--
	droppedBefore, b.dropped = b.dropped, 0
	return true, droppedBefore
}

// serverLog is the server's log as a session keeps it: the ring of its
// last lines (a local server's stderr, which its link writes, and every
// server's log messages, which onMessage adds) and the bucket that bounds
// the messages' rate. The ring and the bucket have locks of their own.
type serverLog struct {
	ring   *lineRing
	bucket logBucket
	log    logr.Logger // the session's
}

// onMessage puts a notifications/message into the ring. It runs on
// mcp-go's read goroutine and does not block.
func (l *serverLog) onMessage(n mcpgo.JSONRPCNotification) {
	ok, dropped := l.bucket.take(time.Now())
	if dropped > 0 {
		l.log.Info("dropped log messages of the server", "dropped", dropped, "limit", fmt.Sprintf("%d a second", logRate))
	}
	if !ok {
		return
	}
	f := n.Params.AdditionalFields
	line := logLine(f["level"], f["logger"], f["data"])
	l.ring.addMessage(line)
	l.log.V(1).Info("log message", "level", line.Message.Level, "logger", line.Message.Logger, "text", line.Text)
}

// logLine renders a log message: "[level] logger: data", with data as
// text when it is a string and as JSON otherwise, cut to maxLineBytes.
func logLine(level, logger, data any) LogLine {
	m := &LogMessage{}
	m.Level, _ = level.(string)
	if m.Level == "" {
		m.Level = "info" // the spec requires one; a server that omits it gets the plainest
	}
	m.Level = cutTo(m.Level, maxLevelBytes)
	m.Logger, _ = logger.(string)
	m.Logger = cutTo(m.Logger, maxLoggerBytes)
	var text string
	var raw []byte
	if data != nil {
		raw, _ = json.Marshal(data) // decoded from JSON: it encodes
	}
	if s, ok := data.(string); ok {
		text = s
	} else {
		text = string(raw)
	}
	if len(raw) <= maxLineBytes {
		m.Data = raw
	}
	prefix := "[" + m.Level + "] "
	if m.Logger != "" {
		prefix += m.Logger + ": "
	}
	return LogLine{Text: cut(prefix + text), Message: m}
}

// cutTo shortens s to n bytes.
func cutTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// applyLogLevel asks the server to send log messages of Spec.LogLevel and
// above: on the 2025-11-25 revision with logging/setLevel, if the server
// declares logging; on 2026-07-28 every request carries the level
// (requestMeta), and this only tells mcp-go's client. It runs in the
// background after connecting, so that connecting waits for nothing more.
func (s *Session) applyLogLevel() {
	level := s.srv.LogLevel
	if level == "" || !slices.Contains(LogLevels, level) {
		return
	}
	if s.out.client.GetServerCapabilities().Logging == nil && !s.out.modern() {
		return
	}
	if !s.life.startBackground() {
		return
	}
	go func() {
		defer s.life.endBackground()
		ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
		defer cancel()
		req := mcpgo.SetLevelRequest{}
		req.Params.Level = mcpgo.LoggingLevel(level)
		//lint:ignore SA1019 logging is deprecated only by the 2026-07-28 revision, where this call sends nothing.
		if err := s.out.client.SetLevel(ctx, req); err != nil && s.ctx.Err() == nil {
			s.log.V(1).Info("logging/setLevel failed", "level", level, "err", s.mask.err(err))
		}
	}()
}

// LogAfter returns, in one read, the server's log lines numbered above n:
// the lines a local server wrote to stderr and the log messages any
// server sent (notifications/message), numbered from 1 in the order they
// came, for this session. It also returns the number of the last line (n
// when none came since) and a channel closed when the next line arrives.
// Lines that the last Options.StderrLines pushed out are not returned.
func (s *Session) LogAfter(n int64) (lines []LogLine, last int64, next <-chan struct{}) {
	return s.serverLog.ring.after(n)
}
