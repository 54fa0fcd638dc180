package testserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// maxLine bounds one incoming JSON-RPC message.
const maxLine = 16 << 20

// ServeStdio serves one client on newline-delimited JSON-RPC: requests from
// in, responses and notifications to out. Requests are handled concurrently.
// It returns nil when in reaches EOF and every request read so far has been
// answered, or ctx.Err() when ctx ends (handlers see the cancellation); either
// way every handler has returned. A goroutine blocked reading in after ctx ended
// stays until in yields or closes, so close in to release it.
//
// ServeStdio does not use mcp-go's StdioServer, whose session is shared by
// the whole process: here every call has its own session.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	w := &lineWriter{out: out, garbage: s.cfg.GarbageStdout}
	if s.cfg.GarbageStdout {
		if err := w.writeGarbage("garbage before serving: this is not JSON"); err != nil {
			return fmt.Errorf("write stdout: %w", err)
		}
	}

	sess := &stdioSession{notifications: make(chan mcp.JSONRPCNotification, 100), client: clientRequests{w: w}}
	sess.id = fmt.Sprintf("stdio-%p", sess)
	if err := s.mcp.RegisterSession(ctx, sess); err != nil {
		return fmt.Errorf("register session: %w", err)
	}
	defer s.mcp.UnregisterSession(context.WithoutCancel(ctx), sess.id)
	ctx = s.mcp.WithContext(ctx, sess)

	// requests holds in-flight request handlers; notifier forwards
	// notifications until stopNotifier. Both are waited for before returning,
	// so nothing writes to out afterwards.
	var requests, notifier sync.WaitGroup
	notifyCtx, stopNotifier := context.WithCancel(context.WithoutCancel(ctx))
	defer func() {
		requests.Wait()
		stopNotifier()
		notifier.Wait()
	}()
	notifier.Go(func() {
		for {
			select {
			case n := <-sess.notifications:
				_ = w.writeJSON(n)
				if n.Method == string(mcp.MethodNotificationProgress) {
					sess.progress.wrote()
				}
			case <-notifyCtx.Done():
				return
			}
		}
	})

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() {
		readErr <- readLines(ctx, in, lines)
	}()

	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-readErr:
			// EOF: answer what was asked before returning.
			if err != nil {
				return fmt.Errorf("read stdin: %w", err)
			}
			return nil
		case line := <-lines:
			s.dispatch(ctx, line, w, sess, &requests)
		}
	}
}

// readLines sends every non-empty line of in to lines until EOF (nil), a read
// error, or ctx ending (nil).
func readLines(ctx context.Context, in io.Reader, lines chan<- []byte) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		line := append([]byte(nil), sc.Bytes()...)
		select {
		case lines <- line:
		case <-ctx.Done():
			return nil
		}
	}
	return sc.Err()
}

// dispatch handles one incoming message. Requests run on their own goroutine
// so that a slow tool or a delayed initialize does not block the others;
// notifications (cancellation among them) are handled inline, in order.
func (s *Server) dispatch(ctx context.Context, line []byte, w *lineWriter, sess *stdioSession, handlers *sync.WaitGroup) {
	var base struct {
		Method string          `json:"method"`
		ID     json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(line, &base); err != nil {
		_ = w.writeJSON(mcp.NewJSONRPCError(mcp.NewRequestId(nil), mcp.PARSE_ERROR, "parse error", nil))
		return
	}
	isRequest := len(base.ID) > 0 && string(base.ID) != "null" && base.Method != ""
	if !isRequest && base.Method == "" && len(base.ID) > 0 && sess.client.deliver(base.ID, line) {
		return // the answer to a request of ours (ask, sample, roots: ask.go)
	}
	if isRequest {
		s.logRequest(base.Method)
	}
	if !isRequest {
		if resp := s.mcp.HandleMessage(ctx, line); resp != nil {
			_ = w.writeJSON(resp)
		}
		if base.Method == string(mcp.MethodNotificationInitialized) && s.cfg.AskAfterInit {
			handlers.Go(func() { s.askAfterInit(ctx, sess) })
		}
		return
	}
	if base.Method == string(mcp.MethodToolsList) && s.cfg.EndlessPages {
		var req struct {
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(line, &req)
		if b, err := s.endlessPage(base.ID, req.Params); err == nil {
			_ = w.writeLine(b)
		}
		return
	}
	if base.Method == string(mcp.MethodResourcesList) && s.cfg.EndlessResourcePages {
		var req struct {
			Params json.RawMessage `json:"params"`
		}
		_ = json.Unmarshal(line, &req)
		if b, err := s.endlessResourcePage(base.ID, req.Params); err == nil {
			_ = w.writeLine(b)
		}
		return
	}
	if base.Method == string(mcp.MethodToolsCall) && s.cfg.StdoutFlood == FloodCall {
		// Holds the writer for good: nothing else gets out.
		w.mu.Lock()
		handlers.Go(func() {
			defer w.mu.Unlock()
			_ = s.flood(ctx, w.out, "", nil)
		})
		return
	}
	if base.Method == string(mcp.MethodInitialize) && s.cfg.ModernOnly {
		_ = w.writeJSON(mcp.NewJSONRPCError(mcp.NewRequestId(decodeID(base.ID)), mcp.METHOD_NOT_FOUND, "Method initialize not found", nil))
		return
	}
	if base.Method == string(mcp.MethodServerDiscover) && !s.cfg.Modern {
		if resp := s.legacyDiscover(base.ID); resp != nil {
			_ = w.writeLine(resp)
		}
		return
	}
	handlers.Go(func() {
		if resp := s.mcp.HandleMessage(ctx, line); resp != nil {
			_ = w.writeJSON(resp)
		}
	})
}

// lineWriter writes one JSON message per line; mu serialises writers.
type lineWriter struct {
	mu      sync.Mutex // mu guards out and n
	out     io.Writer
	garbage bool
	n       int
}

func (w *lineWriter) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.out.Write(b); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	if w.garbage {
		w.n++
		if _, err := fmt.Fprintf(w.out, "garbage line %d after a message\n", w.n); err != nil {
			return fmt.Errorf("write garbage: %w", err)
		}
	}
	return nil
}

// writeLine writes b, one encoded message, and a newline.
func (w *lineWriter) writeLine(b []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write message: %w", err)
	}
	return nil
}

func (w *lineWriter) writeGarbage(text string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range 3 {
		if _, err := fmt.Fprintf(w.out, "%s (%d)\n", text, i+1); err != nil {
			return err
		}
	}
	return nil
}

// stdioSession is the mcp-go session of one ServeStdio call.
type stdioSession struct {
	id            string
	notifications chan mcp.JSONRPCNotification
	initialized   atomic.Bool
	client        clientRequests // our requests to the client (ask.go)
	// logLevel is the level logging/setLevel set; "" (none set) sends
	// every log message, as servers of the TypeScript SDK do.
	logLevel atomic.Value
	// progress counts the progress notices queued and written, so that a
	// call answers after its notices (see flushProgress).
	progress progressFlush
}

// progressFlush counts progress notices: queued by the tool, written by
// the notifier. mcp-go queues notifications for a goroutine of their own
// while a call's answer is written directly, so without waiting a notice
// sent right before the answer could reach the client after it.
type progressFlush struct {
	mu              sync.Mutex
	queued, written int
	changed         chan struct{} // closed and replaced when written grows
}

func (p *progressFlush) queue() {
	p.mu.Lock()
	p.queued++
	p.mu.Unlock()
}

func (p *progressFlush) wrote() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.written++
	if p.changed != nil {
		close(p.changed)
		p.changed = nil
	}
}

// wait returns once every notice queued so far is written, or ctx ends.
func (p *progressFlush) wait(ctx context.Context) {
	p.mu.Lock()
	target := p.queued
	for p.written < target {
		if p.changed == nil {
			p.changed = make(chan struct{})
		}
		ch := p.changed
		p.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
		p.mu.Lock()
	}
	p.mu.Unlock()
}

// ListRoots asks the client for roots/list.
func (s *stdioSession) ListRoots(ctx context.Context, _ mcp.ListRootsRequest) (*mcp.ListRootsResult, error) {
	var res mcp.ListRootsResult
	if err := s.client.request(ctx, string(mcp.MethodListRoots), map[string]any{}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (s *stdioSession) SetLogLevel(level mcp.LoggingLevel) { s.logLevel.Store(level) }
func (s *stdioSession) GetLogLevel() mcp.LoggingLevel {
	if l, ok := s.logLevel.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelDebug
}

func (s *stdioSession) SessionID() string { return s.id }
func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification {
	return s.notifications
}
func (s *stdioSession) Initialize()       { s.initialized.Store(true) }
func (s *stdioSession) Initialized() bool { return s.initialized.Load() }
