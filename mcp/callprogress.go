package mcp

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/freecode/freecode/wire"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// What a server can send of a call's progress: the notices go to a
// terminal line and to the local API's event stream, so at most
// progressBurst at once and progressRate a second per call; more, and a
// notice whose progress does not grow (the spec requires it to), are
// dropped. A message is cut to maxProgressMessageBytes.
const (
	progressRate            = 10
	progressBurst           = 20
	maxProgressMessageBytes = 1024
)

// progressWatch is one call whose progress is followed.
type progressWatch struct {
	fn   func(wire.Progress)
	last float64 // the last progress passed on
	seen bool    // one was passed on
	// tokens and at are the call's token bucket.
	tokens float64
	at     time.Time
}

// progressWatches are the calls in flight whose progress is followed,
// keyed by progress token.
type progressWatches struct {
	mu sync.Mutex // guards m and the watches in it
	m  map[string]*progressWatch
}

// watch follows the progress of the call with token until the returned
// func is called.
func (w *progressWatches) watch(token string, fn func(wire.Progress)) (stop func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.m == nil {
		w.m = map[string]*progressWatch{}
	}
	w.m[token] = &progressWatch{fn: fn, tokens: progressBurst, at: time.Now()}
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.m, token)
	}
}

// onProgress hands a notifications/progress to the call it is about. It
// runs on mcp-go's read goroutine. The watch's fn is called under w.mu, so
// that a call that has returned (its stop done) gets none, and notices of
// one call are never passed on out of order.
func (w *progressWatches) onProgress(n mcpgo.JSONRPCNotification) {
	f := n.Params.AdditionalFields
	token := tokenString(f["progressToken"])
	if token == "" {
		return
	}
	p := wire.Progress{}
	var ok bool
	if p.Progress, ok = f["progress"].(float64); !ok {
		return
	}
	p.Total, _ = f["total"].(float64)
	msg, _ := f["message"].(string)
	p.Message = cutTo(msg, maxProgressMessageBytes)

	w.mu.Lock()
	defer w.mu.Unlock()
	pw := w.m[token]
	if pw == nil || (pw.seen && p.Progress <= pw.last) {
		return
	}
	now := time.Now()
	pw.tokens = min(progressBurst, pw.tokens+now.Sub(pw.at).Seconds()*progressRate)
	pw.at = now
	if pw.tokens < 1 {
		return
	}
	pw.tokens--
	pw.last, pw.seen = p.Progress, true
	pw.fn(p)
}

// tokenString is a progress token as sent: a string, or a number written
// as JSON writes it.
func tokenString(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		b, _ := json.Marshal(t)
		return string(b)
	}
	return ""
}
