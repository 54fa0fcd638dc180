package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// stdioFast is mcp-go's stdio transport over a local server's stdin and
// stdout with the session's own tools/call requests sent and answered by
// package mcp: a call is the one request whose cost per message matters,
// and mcp-go encodes a request by reflection (validating again the
// session's _meta, encoded once, on every call) and decodes each line it
// reads twice before the session decodes the result once more.
//
// A call's request is encoded here (encodeRequest) and written as one
// line to the same stdin mcp-go writes to (writeWatcher serializes the
// two); its answer is taken out of the server's stdout by lineFilter,
// which sits between the stdout and mcp-go and hands every other line on
// to mcp-go unchanged. Everything else (the handshake, notifications both
// ways, the server's requests, the other requests) is mcp-go's as before.
//
// It fails its calls as mcp-go fails its requests: ErrTransportClosed once
// stdout ended (or failed: a message over the limit) or the transport was
// closed, a write's error as "failed to write request", ctx's error when
// ctx ends first.
type stdioFast struct {
	*transport.Stdio
	w *writeWatcher
	// own reports whether a _meta of a request is the session's own
	// encoding (outbound.ownMeta): it is written as it is, not validated
	// again.
	own func(json.RawMessage) bool

	mu      sync.Mutex             // guards pending
	pending map[string]pendingCall // by the request's id
	waiting atomic.Int32           // len(pending): lineFilter decodes no line while none waits
	done    chan struct{}          // closed by end
	endOnce sync.Once
	// bufs holds the buffers requests are encoded in (*[]byte).
	bufs sync.Pool
}

func newStdioFast(w *writeWatcher, own func(json.RawMessage) bool) *stdioFast {
	f := &stdioFast{w: w, own: own, pending: map[string]pendingCall{}, done: make(chan struct{})}
	f.bufs.New = func() any { b := make([]byte, 0, 1024); return &b }
	return f
}

// pendingCall is a call waiting for its answer: deliver sends it on
// answer (buffered: deliver never waits).
type pendingCall struct {
	key    string // its id
	answer chan *transport.JSONRPCResponse
}

// end fails every call waiting for an answer, and every later one, with
// ErrTransportClosed: stdout ended, or the transport was closed.
func (f *stdioFast) end() {
	f.endOnce.Do(func() { close(f.done) })
}

// handles reports whether call sends req: a tools/call of
// the session's (whose ids are strings).
func (f *stdioFast) handles(req transport.JSONRPCRequest) bool {
	if req.Method != string(mcpgo.MethodToolsCall) {
		return false
	}
	_, ok := req.ID.Value().(string)
	return ok
}

// call sends req (handles), as mcp-go's Stdio.SendRequest does, and
// waits for its answer.
func (f *stdioFast) call(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	select {
	case <-f.done:
		return nil, transport.ErrTransportClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	key := req.ID.Value().(string)
	bp := f.bufs.Get().(*[]byte)
	defer func() {
		if cap(*bp) <= filterBufKeep { // a large one is let go
			f.bufs.Put(bp)
		}
	}()
	b, err := encodeRequest((*bp)[:0], req, f.own)
	if err != nil {
		// Params json.Marshal cannot encode (arguments that are not
		// JSON): mcp-go fails the request with json.Marshal's error,
		// before it writes anything.
		return f.Stdio.SendRequest(ctx, req)
	}
	*bp = b
	answer := make(chan *transport.JSONRPCResponse, 1)
	f.mu.Lock()
	f.pending[key] = pendingCall{key: key, answer: answer}
	f.waiting.Add(1)
	f.mu.Unlock()
	if _, err := f.w.Write(b); err != nil {
		f.forget(key)
		return nil, fmt.Errorf("failed to write request: %w", err)
	}
	var resp *transport.JSONRPCResponse
	select {
	case <-f.done:
		// An answer read just before stdout ended was delivered before.
		select {
		case resp = <-answer:
		default:
			f.forget(key)
			return nil, transport.ErrTransportClosed
		}
	case <-ctx.Done():
		f.forget(key)
		return nil, ctx.Err()
	case resp = <-answer:
	}
	resp.ID = req.ID
	return resp, nil
}

// forget drops the call waiting under key, if it still waits.
func (f *stdioFast) forget(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.pending[key]; ok {
		delete(f.pending, key)
		f.waiting.Add(-1)
	}
}

// stdioMessage is what lineFilter decodes of a line while a call waits:
// enough to tell an answer from the other messages, and the answer.
type stdioMessage struct {
	JSONRPC string                     `json:"jsonrpc"`
	ID      json.RawMessage            `json:"id"`
	Method  string                     `json:"method"`
	Result  json.RawMessage            `json:"result"`
	Error   *mcpgo.JSONRPCErrorDetails `json:"error"`
}

// deliver hands line to the call it answers and reports true, or reports
// false: line is anything else (a notification, a request of the
// server's, an answer to a request of mcp-go's, an answer to nobody, not
// JSON), which mcp-go reads as before.
func (f *stdioFast) deliver(line []byte) bool {
	if f.waiting.Load() == 0 || !json.Valid(line) {
		// Not JSON: mcp-go drops it.
		return false
	}
	var m stdioMessage
	switch answerFields(line, &m) {
	case notAnswer:
		return false
	case decodeIt:
		// As mcp-go decodes it, its id too (a RequestId refuses what is
		// neither a string, a number nor null, and with it the line); a
		// line encoding/json does not decode is mcp-go's to drop.
		var w struct {
			stdioMessage
			ID *mcpgo.RequestId `json:"id"`
		}
		if json.Unmarshal(line, &w) != nil || w.ID == nil {
			return false
		}
		s, ok := w.ID.Value().(string)
		if !ok {
			return false
		}
		m = w.stdioMessage
		m.ID, _ = json.Marshal(s) // a string always encodes
	}
	if m.Method != "" || len(m.ID) < 2 || m.ID[0] != '"' {
		return false
	}
	id := m.ID[1 : len(m.ID)-1]
	if bytes.IndexByte(id, '\\') >= 0 {
		var s string
		if json.Unmarshal(m.ID, &s) != nil {
			return false
		}
		id = []byte(s)
	}
	f.mu.Lock()
	call, ok := f.pending[string(id)]
	if ok {
		delete(f.pending, call.key)
		f.waiting.Add(-1)
	}
	f.mu.Unlock()
	if !ok {
		return false
	}
	// A copy: line is lineFilter's buffer.
	call.answer <- &transport.JSONRPCResponse{JSONRPC: m.JSONRPC, Result: bytes.Clone(m.Result), Error: m.Error}
	return true
}

// answerFields' verdicts.
const (
	answerRead = iota // read into the stdioMessage
	notAnswer         // a request or a notification: a method
	decodeIt          // left to encoding/json
)

// answerFields reads line, valid JSON, into m as json.Unmarshal would (ID
// and Result then alias line), reports that it is no answer (it has a
// method), or leaves it to encoding/json: not an object, an escaped or a
// case-folded key, a key twice, a jsonrpc other than "2.0", a method or
// an error that is not null or empty.
func answerFields(line []byte, m *stdioMessage) int {
	var seen [5]bool
	method, odd := false, false
	walked := objectFields(line, func(key, value []byte) bool {
		i, exact := fieldOf(key, "jsonrpc", "id", "method", "result", "error")
		if !exact || (i >= 0 && seen[i]) {
			odd = true
			return false
		}
		if i < 0 {
			return true
		}
		seen[i] = true
		null := string(value) == "null"
		switch i {
		case 0:
			if !null {
				odd = string(value) != `"2.0"`
				m.JSONRPC = mcpgo.JSONRPC_VERSION
			}
		case 1:
			if !null {
				m.ID = value
			}
		case 2:
			switch {
			case null || string(value) == `""`:
			case value[0] == '"':
				method = true
			default:
				odd = true
			}
		case 3:
			m.Result = value
		case 4:
			odd = !null
		}
		return !odd
	})
	switch {
	case !walked || odd:
		return decodeIt
	case method:
		return notAnswer
	}
	return answerRead
}

// lineFilter is a local server's stdout as mcp-go reads it: the answers
// to the calls stdioFast sent are taken out (deliver), every other line
// is passed on unchanged. It reads whole lines, so it holds at most one
// message and a read's worth more: the reader beneath (limitReader) fails
// once a line grows past the message limit, and lineFilter passes its
// error on. It hands mcp-go whole lines only, and delivers an answer only
// once mcp-go has dealt with every line before it: mcp-go reads (through
// its bufio.Reader) only when it has handled all the complete lines it
// was given, so a progress notification that came before a call's
// answer has reached its handler before the call returns. When the
// stdout ends or fails, the calls that wait fail (stdioFast.end), and
// mcp-go gets the error, as it would have. Read must not be called
// concurrently (mcp-go's read goroutine calls it).
type lineFilter struct {
	r    io.Reader
	fast *stdioFast
	// max bounds the buffer's growth: a line of the message limit and a
	// read more (r fails past the limit); 0: no bound.
	max  int
	buf  []byte // read from r: buf[next:] is not handed on yet
	next int
	scan int    // buf[next:scan] holds no newline
	out  []byte // the line being handed on to mcp-go
	err  error  // r's, once it failed
}

// Sizes of lineFilter's buffer: what it starts with, and above what it
// lets go of a buffer once empty (after a long line).
const (
	filterBufSize = 4096
	filterBufKeep = 64 << 10
)

func (l *lineFilter) Read(p []byte) (int, error) {
	for {
		if len(l.out) > 0 {
			n := copy(p, l.out)
			l.out = l.out[n:]
			return n, nil
		}
		if i := bytes.IndexByte(l.buf[l.scan:], '\n'); i >= 0 {
			end := l.scan + i + 1
			line := l.buf[l.next:end]
			l.next, l.scan = end, end
			// Every line before this one was handed on and dealt with:
			// mcp-go asked for more.
			if !l.fast.deliver(line) {
				l.out = line
			}
			continue
		}
		l.scan = len(l.buf)
		if l.err != nil {
			// A line cut short is dropped, as mcp-go drops it.
			l.fast.end()
			return 0, l.err
		}
		l.fill()
	}
}

// fill reads more of r into buf, after what is there.
func (l *lineFilter) fill() {
	switch {
	case l.next == len(l.buf) && cap(l.buf) > filterBufKeep:
		l.buf = nil
	case l.next == len(l.buf):
		l.buf = l.buf[:0]
	case cap(l.buf) > filterBufKeep && len(l.buf)-l.next <= cap(l.buf)/4:
		// After a long line, a short rest: into a small buffer, so that
		// one long line does not keep its buffer for the session.
		b := make([]byte, len(l.buf)-l.next, max(filterBufSize, 2*(len(l.buf)-l.next)))
		copy(b, l.buf[l.next:])
		l.buf = b
	case l.next > 0:
		n := copy(l.buf, l.buf[l.next:])
		l.buf = l.buf[:n]
	}
	l.scan -= l.next
	l.next = 0
	if l.buf == nil {
		l.buf = make([]byte, 0, filterBufSize)
	}
	if len(l.buf) == cap(l.buf) {
		n := 2 * cap(l.buf)
		if l.max > 0 {
			n = max(min(n, l.max), len(l.buf)+filterBufSize)
		}
		b := make([]byte, len(l.buf), n)
		copy(b, l.buf)
		l.buf = b
	}
	n, err := l.r.Read(l.buf[len(l.buf):cap(l.buf)])
	l.buf = l.buf[:len(l.buf)+n]
	if err != nil {
		l.err = err
	}
}

// encodeRequest appends req, one line of JSON, to dst as json.Marshal
// encodes it (and then a newline), without reflection: the params of a
// tools/call are a map of strings, JSON values (json.RawMessage) and
// whatever else json.Marshal encodes; a _meta that own says is the
// session's own encoding is written as it is, any other JSON value
// compacted (and checked) as json.Marshal does.
func encodeRequest(dst []byte, req transport.JSONRPCRequest, own func(json.RawMessage) bool) ([]byte, error) {
	dst = append(dst, `{"jsonrpc":`...)
	dst = appendJSONString(dst, req.JSONRPC)
	dst = append(dst, `,"id":`...)
	var err error
	if dst, err = appendJSONValue(dst, req.ID.Value()); err != nil {
		return nil, err
	}
	dst = append(dst, `,"method":`...)
	dst = appendJSONString(dst, req.Method)
	if req.Params != nil {
		dst = append(dst, `,"params":`...)
		if params, ok := req.Params.(map[string]any); ok && params != nil {
			dst, err = appendParams(dst, params, own)
		} else {
			dst, err = appendJSONValue(dst, req.Params)
		}
		if err != nil {
			return nil, err
		}
	}
	return append(dst, '}', '\n'), nil
}

// appendParams appends params, keys sorted, as json.Marshal does.
func appendParams(dst []byte, params map[string]any, own func(json.RawMessage) bool) ([]byte, error) {
	type field struct {
		k string
		v any
	}
	var arr [8]field
	fields := arr[:0]
	for k, v := range params {
		fields = append(fields, field{k, v})
	}
	slices.SortFunc(fields, func(a, b field) int { return strings.Compare(a.k, b.k) })
	dst = append(dst, '{')
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, f.k)
		dst = append(dst, ':')
		if raw, ok := f.v.(json.RawMessage); ok && f.k == "_meta" && len(raw) > 0 && own != nil && own(raw) {
			dst = append(dst, raw...)
			continue
		}
		var err error
		if dst, err = appendJSONValue(dst, f.v); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// appendJSONValue appends v as json.Marshal encodes it.
func appendJSONValue(dst []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case string:
		return appendJSONString(dst, v), nil
	case json.RawMessage:
		if v == nil {
			return append(dst, "null"...), nil
		}
		start := len(dst)
		buf := bytes.NewBuffer(dst)
		if err := json.Compact(buf, v); err != nil {
			return nil, err
		}
		dst = buf.Bytes()
		if needsHTMLEscape(dst[start:]) {
			var esc bytes.Buffer
			json.HTMLEscape(&esc, dst[start:])
			dst = append(dst[:start], esc.Bytes()...)
		}
		return dst, nil
	case int64:
		return strconv.AppendInt(dst, v, 10), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// needsHTMLEscape reports whether b holds what json.Marshal escapes in
// strings by default and json.Compact does not: <, >, &, U+2028, U+2029.
func needsHTMLEscape(b []byte) bool {
	for i, c := range b {
		switch c {
		case '<', '>', '&':
			return true
		case 0xE2:
			if i+2 < len(b) && b[i+1] == 0x80 && (b[i+2] == 0xA8 || b[i+2] == 0xA9) {
				return true
			}
		}
	}
	return false
}

// appendJSONString appends s as json.Marshal encodes a string.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// maxLineBuffer is lineFilter.max for the message limit limit.
func maxLineBuffer(limit int64) int {
	if limit <= 0 || limit > math.MaxInt-2*filterBufSize {
		return 0
	}
	return int(limit) + 2*filterBufSize
}
