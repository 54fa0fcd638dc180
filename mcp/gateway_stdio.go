package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultGatewayMaxMessageBytes bounds one message of a host of the
// gateway when GatewayOptions.MaxMessageBytes is 0: the default of the
// servers' maxMessageBytes (schema.DefaultMaxMessageBytes).
const DefaultGatewayMaxMessageBytes = 16 << 20

// DefaultGatewayMaxRequests bounds the requests of a stdio host in flight
// when GatewayOptions.MaxRequests is 0. mcp-go's stdio server serves each
// request on a goroutine of its own (a tool call, once its 100-slot queue is
// full, on its read loop), so this is about where it stops reading anyway.
const DefaultGatewayMaxRequests = 128

// HostLimitError reports that a host of the gateway sent more than a limit
// allows: over stdio the connection is ended with it. It wraps ErrLimit.
type HostLimitError struct {
	// Limit names the limit as in the config: "maxMessageBytes".
	Limit string
	// Value is the limit in force.
	Value int64
}

func (e *HostLimitError) Error() string {
	return fmt.Sprintf("the host sent a message of more than %s (limit mcp.limits.%s); the gateway ended the connection: "+
		"if the host's messages are legitimately that large, raise it in the config file with \"mcp\": {\"limits\": {%q: %d}}",
		formatBytes(e.Value), e.Limit, e.Limit, min(2*e.Value, maxHostMessageBytes))
}

func (e *HostLimitError) Unwrap() error { return ErrLimit }

// maxHostMessageBytes is the highest maxMessageBytes a config may set
// (schema.MaxMaxMessageBytes).
const maxHostMessageBytes = 1 << 30

func (o GatewayOptions) maxMessageBytes() int64 {
	if o.MaxMessageBytes > 0 {
		return o.MaxMessageBytes
	}
	return DefaultGatewayMaxMessageBytes
}

func (o GatewayOptions) maxRequests() int {
	if o.MaxRequests > 0 {
		return o.MaxRequests
	}
	return DefaultGatewayMaxRequests
}

// hostFrames stands between a stdio host and mcp-go's stdio server, which
// would read a line of any length and start a goroutine for every request
// however many are unanswered. pump reads the host's lines, each at most
// limit bytes, and passes them on; a request waits for one of the slots
// before it is passed, and gives its slot back when its answer has been
// written to the host (out) or the host cancelled it. So a host that sends
// without reading its answers is not read from either, and what the
// gateway holds for it is bounded by the slots.
type hostFrames struct {
	limit int64
	slots chan struct{} // one element per request in flight

	mu       sync.Mutex     // guards inFlight and the out's partial line
	inFlight map[string]int // requests in flight by id (idKey), each holding a slot
	partial  []byte         // the start of a line written to the host without its end

	// stopped is set once pump no longer reads in.
	stopped atomic.Bool
	// progress counts the progress notices written to the host; nil when
	// nobody waits for them.
	progress *progressWrites
}

func newHostFrames(limit int64, maxRequests int) *hostFrames {
	return &hostFrames{limit: limit, slots: make(chan struct{}, maxRequests), inFlight: map[string]int{}}
}

// pump reads in line by line into w until in ends, a line is longer than
// the limit (a *HostLimitError), w is closed, or ctx ends; it closes w
// with the reason (nil at the end of in) and returns it.
func (f *hostFrames) pump(ctx context.Context, in io.Reader, w *io.PipeWriter) error {
	err := f.lines(ctx, in, w)
	f.stopped.Store(true)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	w.CloseWithError(err)
	return err
}

func (f *hostFrames) lines(ctx context.Context, in io.Reader, w io.Writer) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		body := int64(len(line) + len(chunk))
		if bytes.HasSuffix(chunk, []byte("\n")) {
			body--
		}
		if body > f.limit {
			return &HostLimitError{Limit: limitMessageBytes, Value: f.limit}
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 {
			if werr := f.pass(ctx, line, w); werr != nil {
				return werr
			}
		}
		if err != nil {
			return err
		}
		if cap(line) > 1<<20 {
			// Do not keep the room of one large message.
			line = nil
		} else {
			line = line[:0]
		}
	}
}

// pass hands one line to w, a request once it has a slot.
func (f *hostFrames) pass(ctx context.Context, line []byte, w io.Writer) error {
	m := peek(line)
	switch {
	case m.request:
		select {
		case f.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		f.mu.Lock()
		f.inFlight[m.id]++
		f.mu.Unlock()
	case m.cancels != "":
		// A cancelled request may never be answered.
		f.release(m.cancels)
	}
	_, err := w.Write(line)
	return err
}

// release gives back the slot of a request in flight with id key, if one
// is.
func (f *hostFrames) release(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := f.inFlight[key]
	if n == 0 {
		return
	}
	if n == 1 {
		delete(f.inFlight, key)
	} else {
		f.inFlight[key] = n - 1
	}
	<-f.slots
}

// written sees what was written to the host: each answer to a request
// gives its slot back.
func (f *hostFrames) written(p []byte) {
	f.mu.Lock()
	var lines [][]byte
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		if len(f.partial) > 0 {
			lines = append(lines, append(f.partial, p[:i]...))
			f.partial = nil
		} else {
			lines = append(lines, p[:i])
		}
		p = p[i+1:]
	}
	if len(p) > 0 {
		f.partial = append(f.partial, p...)
	}
	f.mu.Unlock()
	for _, l := range lines {
		if m := peek(l); m.answer {
			f.release(m.id)
		} else if key := progressToken(l); key != "" && f.progress != nil {
			f.progress.wrote(key)
		}
	}
}

// hostOut is the host's stdout as mcp-go writes to it.
type hostOut struct {
	w io.Writer
	f *hostFrames
}

func (o hostOut) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	o.f.written(p[:n])
	return n, err
}

// peeked is what hostFrames needs to know of a message.
type peeked struct {
	// request: a method and an id; answer: an id and no method.
	request, answer bool
	// id is the message's id as idKey has it.
	id string
	// cancels is the id of the request a notifications/cancelled cancels.
	cancels string
}

// peek looks at the top of one JSON-RPC message. A request is what mcp-go
// serves as one: a string method and an id that is not null.
func peek(line []byte) peeked {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return peeked{}
	}
	// Only a string or a number is an id (JSON-RPC 2.0); mcp-go answers
	// another with a null id, which would never give a slot back.
	hasID := validID(m.ID)
	var method string
	if len(m.Method) == 0 {
		return peeked{answer: hasID, id: idKey(m.ID)}
	}
	if json.Unmarshal(m.Method, &method) != nil {
		return peeked{}
	}
	if hasID {
		return peeked{request: true, id: idKey(m.ID)}
	}
	if method == "notifications/cancelled" {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(m.Params, &p) == nil && len(p.RequestID) > 0 {
			return peeked{cancels: idKey(p.RequestID)}
		}
	}
	return peeked{}
}

// validID reports whether raw is a JSON-RPC id: a string or a number.
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	switch c := raw[0]; {
	case c == '"':
		return true
	case c == '-' || c >= '0' && c <= '9':
		_, err := strconv.ParseFloat(string(raw), 64)
		return err == nil
	}
	return false
}

// idKey is a JSON-RPC id as a map key that a request and its answer share
// however each spells it: a number by its float64 value (mcp-go answers
// 1.0 as 1), a string by its value.
func idKey(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return "s" + s
	}
	if f, err := strconv.ParseFloat(string(bytes.TrimSpace(raw)), 64); err == nil {
		return "n" + strconv.FormatFloat(f, 'g', -1, 64)
	}
	return "r" + string(raw)
}

// progressWait bounds how long a call's answer waits for the progress
// notices sent before it to be written to the host (see progressWrites).
const progressWait = 5 * time.Second

// progressWrites lets a call's answer wait for the progress notices the
// call sent before it. mcp-go writes notifications from a goroutine of its
// own but a call's answer from the call's goroutine, so a notice sent right
// before the answer could reach the host after it, and a host drops
// progress for a request it has its answer to. Over stdio the writes are
// seen (hostFrames.written), so the handler counts the notices it sent for
// a progress token and waits until as many were written. Over HTTP nothing
// is counted (tracking is off) and nothing waits.
type progressWrites struct {
	tracking atomic.Bool

	mu      sync.Mutex     // guards written and changed
	written map[string]int // notices written by progress token (idKey)
	changed chan struct{}  // closed and replaced on every count
}

// watch starts counting the notices of token key written; wait ends it.
// Notices of a token nobody watches are not counted, so a notice that comes
// after its call's answer leaves nothing behind.
func (p *progressWrites) watch(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written == nil {
		p.written = map[string]int{}
	}
	if _, ok := p.written[key]; !ok {
		p.written[key] = 0
	}
}

// wrote counts a progress notice for token key as written.
func (p *progressWrites) wrote(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.written[key]; !ok {
		return
	}
	p.written[key]++
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// wait returns once n notices of token key were written, ctx ended, or
// progressWait passed, and forgets the token (see watch).
func (p *progressWrites) wait(ctx context.Context, key string, n int) {
	defer func() {
		p.mu.Lock()
		delete(p.written, key)
		p.mu.Unlock()
	}()
	if !p.tracking.Load() || n == 0 {
		return
	}
	timer := time.NewTimer(progressWait)
	defer timer.Stop()
	for {
		p.mu.Lock()
		if p.written[key] >= n {
			p.mu.Unlock()
			return
		}
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-timer.C:
			return
		}
	}
}

// progressToken is the progressToken of a notifications/progress message
// as idKey has it, or "" for any other message.
func progressToken(line []byte) string {
	if !bytes.Contains(line, []byte(`notifications/progress`)) {
		return ""
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Token json.RawMessage `json:"progressToken"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != "notifications/progress" || len(m.Params.Token) == 0 {
		return ""
	}
	return idKey(m.Params.Token)
}
