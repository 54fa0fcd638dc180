package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/wire"
)

// fastPipe is a stdioFast over pipes, with the test as the server: it
// reads what the session writes (in) and writes what the session reads
// (out).
type fastPipe struct {
	fast *stdioFast
	in   *bufio.Reader
	out  *io.PipeWriter
	sr   *io.PipeReader // beneath in
}

func newFastPipe(t *testing.T, onNotification func(mcpgo.JSONRPCNotification)) *fastPipe {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	stdin := &writeWatcher{f: chunkWriter{cw}}
	fast := newStdioFast(stdin, nil)
	stdin.close = func() error {
		fast.end()
		return cw.Close()
	}
	fast.Stdio = transport.NewIO(&lineFilter{r: cr, fast: fast, max: maxLineBuffer(1 << 20)}, stdin, nil)
	transport.WithCommandLogger(slog.New(slog.DiscardHandler))(fast.Stdio)
	if onNotification != nil {
		fast.SetNotificationHandler(onNotification)
	}
	require.NoError(t, fast.Start(context.Background()))
	t.Cleanup(func() {
		_ = sw.Close() // mcp-go's read goroutine ends
		_ = fast.Close()
		_ = sr.Close()
	})
	return &fastPipe{fast: fast, in: bufio.NewReader(sr), out: sw, sr: sr}
}

// chunkWriter writes in small pieces, yielding between them, as a pipe
// may take a long message: writes at once that nothing serializes would
// interleave.
type chunkWriter struct{ w io.Writer }

func (c chunkWriter) Write(b []byte) (int, error) {
	n := 0
	for len(b) > 0 {
		k, err := c.w.Write(b[:min(len(b), 16)])
		n += k
		if err != nil {
			return n, err
		}
		b = b[k:]
		runtime.Gosched()
	}
	return n, nil
}

// request reads the next line the session wrote: a request (or a
// notification) of its.
func (p *fastPipe) request(t *testing.T) map[string]any {
	line, err := p.in.ReadBytes('\n')
	if err != nil {
		t.Errorf("reading a request: %v", err)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Errorf("not a JSON line: %q", line)
		// Writes fail from now on, rather than wait for a reader.
		p.sr.CloseWithError(errors.New("not a JSON line"))
		return nil
	}
	return m
}

func (p *fastPipe) write(t *testing.T, lines ...string) {
	if _, err := io.WriteString(p.out, strings.Join(lines, "\n")+"\n"); err != nil {
		t.Errorf("writing: %v", err)
	}
}

func callRequest(n int) transport.JSONRPCRequest {
	return transport.JSONRPCRequest{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId(fmt.Sprintf("freecode-tools-call-%d", n)),
		Method: string(mcpgo.MethodToolsCall), Params: map[string]any{"name": "echo", "arguments": json.RawMessage(fmt.Sprintf(`{"n": %d}`, n))}}
}

type callAnswer struct {
	resp *transport.JSONRPCResponse
	err  error
}

// goCall sends req through p's fast path on a goroutine of its own; its
// answer arrives on the channel (the goroutine ends with the call).
func (p *fastPipe) goCall(ctx context.Context, req transport.JSONRPCRequest) <-chan callAnswer {
	ch := make(chan callAnswer, 1)
	go func() {
		resp, err := p.fast.call(ctx, req)
		ch <- callAnswer{resp, err}
	}()
	return ch
}

func waitAnswer(t *testing.T, ch <-chan callAnswer) callAnswer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(signalWait):
		t.Fatal("the call did not return")
		return callAnswer{}
	}
}

// A progress notification that came before a call's answer has been
// handled by the time the call returns, even when both arrive in one read
// and the handler takes its time.
func TestStdioFastProgressBeforeAnswer(t *testing.T) {
	var handled atomic.Int32
	p := newFastPipe(t, func(n mcpgo.JSONRPCNotification) {
		time.Sleep(50 * time.Millisecond)
		handled.Add(1)
	})
	answer := p.goCall(context.Background(), callRequest(1))
	req := p.request(t)
	require.Equal(t, "freecode-tools-call-1", req["id"])
	p.write(t,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":2}}`,
		`{"jsonrpc":"2.0","id":"freecode-tools-call-1","result":{"content":[]}}`)
	a := waitAnswer(t, answer)
	require.NoError(t, a.err)
	require.EqualValues(t, 2, handled.Load(), "the call returned before the progress that came first was handled")
	require.Equal(t, `{"content":[]}`, string(a.resp.Result))
	require.Equal(t, mcpgo.NewRequestId("freecode-tools-call-1"), a.resp.ID)
}

// Every line but the answers to the fast path's calls reaches mcp-go as
// it came, however the stdout is cut into reads; an answer is delivered
// only once the lines before it were read; a line cut short by the end
// of stdout is dropped, and the end fails the calls still waiting.
func TestLineFilterPassesOtherLines(t *testing.T) {
	const answer = `{"jsonrpc":"2.0","id":"freecode-tools-call-1","result":{"content":[{"type":"text","text":"hi"}]}}` + "\r\n"
	others := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}` + "\n",
		`{"jsonrpc":"2.0","id":"nobody","result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":"freecode-tools-call-1","method":"roots/list"}` + "\n",
		"not json\n",
		"\n",
		`{"jsonrpc":"2.0","id":1,"result":{}}` + "\n",
		`{"jsonrpc":2,"id":"freecode-tools-call-1","result":{}}` + "\n",
		`{"jsonrpc":"2.0","id":"freecode-tools-call-1","error":42}` + "\n",
		// An id mcp-go's RequestId refuses makes it drop the line, even
		// when a later key of the same name is a call's.
		`{"jsonrpc":"2.0","ID":{},"id":"freecode-tools-call-1","result":{"content":[]}}` + "\n",
		`{"jsonrpc":"2.0","id":[1],"id":"freecode-tools-call-1","result":{"content":[]}}` + "\n",
		`{"jsonrpc":"2.0","id":"freecode-tools-call-2","result":{"big":"` + strings.Repeat("x", 3*filterBufSize) + `"}}` + "\n",
	}
	after := []string{
		`{"jsonrpc":"2.0","id":"freecode-tools-call-1","result":{"again":true}}` + "\n", // answered already
		`{"jsonrpc":"2.0","id":"freecode-tools-call-\u0033","result":{"n":3}}` + "\n",
	}
	input := strings.Join(others, "") + answer + strings.Join(after, "") + `{"jsonrpc":"2.0","id":"cut`
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"bytes":    iotest.OneByteReader,
		"halves":   iotest.HalfReader,
		"data+EOF": iotest.DataErrReader,
	} {
		t.Run(name, func(t *testing.T) {
			fast := newStdioFast(&writeWatcher{f: io.Discard}, nil)
			one := make(chan *transport.JSONRPCResponse, 1)
			three := make(chan *transport.JSONRPCResponse, 1)
			fast.pending["freecode-tools-call-1"] = pendingCall{key: "freecode-tools-call-1", answer: one}
			fast.pending["freecode-tools-call-3"] = pendingCall{key: "freecode-tools-call-3", answer: three}
			fast.waiting.Store(2)
			r := bufio.NewReader(&lineFilter{r: wrap(strings.NewReader(input)), fast: fast})
			var got []string
			for {
				if len(got) == len(others) {
					require.Len(t, one, 0, "answered before the lines before it were dealt with")
				}
				line, err := r.ReadString('\n')
				if err != nil {
					require.ErrorIs(t, err, io.EOF)
					require.Empty(t, line, "a line cut short is dropped")
					break
				}
				got = append(got, line)
			}
			require.Equal(t, append(others, after[0]), got)
			resp := <-one
			require.Equal(t, `{"content":[{"type":"text","text":"hi"}]}`, string(resp.Result))
			require.Nil(t, resp.Error)
			require.Equal(t, `{"n":3}`, string((<-three).Result), "an escaped id is the same id")
			require.Zero(t, fast.waiting.Load())
			select {
			case <-fast.done:
			default:
				t.Fatal("the end of stdout did not end the fast path")
			}
		})
	}
}

// An error answer reaches the call as mcp-go decodes it.
func TestStdioFastErrorAnswer(t *testing.T) {
	p := newFastPipe(t, nil)
	answer := p.goCall(context.Background(), callRequest(1))
	p.request(t)
	p.write(t, `{"jsonrpc":"2.0","id":"freecode-tools-call-1","error":{"code":-32602,"message":"no such tool","data":{"x":1}}}`)
	a := waitAnswer(t, answer)
	require.NoError(t, a.err)
	require.Equal(t, &mcpgo.JSONRPCErrorDetails{Code: -32602, Message: "no such tool", Data: map[string]any{"x": float64(1)}}, a.resp.Error)
	require.Nil(t, a.resp.Result)
}

// Calls at once each get their own answer, in whatever order the server
// answers, and their requests do not interleave with what mcp-go writes
// at the same time; mcp-go's own requests are still answered to mcp-go.
func TestStdioFastConcurrentCalls(t *testing.T) {
	const calls = 16
	p := newFastPipe(t, nil)
	served := make(chan struct{})
	go func() {
		defer close(served)
		// The pipe holds nothing: read all there is to write.
		var ids []string
		notes := 0
		for len(ids) < calls+1 || notes < calls {
			req := p.request(t)
			if req == nil {
				return
			}
			if id, ok := req["id"].(string); ok {
				ids = append(ids, id)
			} else {
				notes++
			}
		}
		for i := len(ids) - 1; i >= 0; i-- { // last asked, first answered
			p.write(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%q,"result":{"id":%q}}`, ids[i], ids[i]))
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), signalWait)
	defer cancel()
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			req := callRequest(i)
			resp, err := p.fast.call(ctx, req)
			if !pipeAnswered(t, req.ID.String(), resp, err) {
				return
			}
			assert.Equal(t, req.ID, resp.ID)
			assert.JSONEq(t, fmt.Sprintf(`{"id":"freecode-tools-call-%d"}`, i), string(resp.Result))
		})
		wg.Go(func() {
			n := mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{Method: "notifications/x"}}
			if err := p.fast.SendNotification(ctx, n); err != nil {
				t.Errorf("notification: %v", err)
			}
		})
	}
	wg.Go(func() {
		req := transport.JSONRPCRequest{JSONRPC: mcpgo.JSONRPC_VERSION, ID: mcpgo.NewRequestId("freecode-ping-1"), Method: "ping"}
		resp, err := p.fast.SendRequest(ctx, req)
		if pipeAnswered(t, "ping", resp, err) {
			assert.JSONEq(t, `{"id":"freecode-ping-1"}`, string(resp.Result))
		}
	})
	wg.Wait()
	<-served
	require.Zero(t, p.fast.waiting.Load())
}

func pipeAnswered(t *testing.T, what string, resp *transport.JSONRPCResponse, err error) bool {
	if err != nil {
		t.Errorf("%s: %v", what, err)
		return false
	}
	return true
}

// A call whose ctx ends returns ctx's error, as mcp-go's SendRequest does,
// and an answer that comes after goes to mcp-go (which drops it).
func TestStdioFastCanceled(t *testing.T) {
	p := newFastPipe(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	answer := p.goCall(ctx, callRequest(1))
	p.request(t)
	cancel()
	a := waitAnswer(t, answer)
	require.Equal(t, context.Canceled, a.err)
	require.Zero(t, p.fast.waiting.Load())
	p.write(t, `{"jsonrpc":"2.0","id":"freecode-tools-call-1","result":{}}`)

	_, err := p.fast.call(ctx, callRequest(2))
	require.Equal(t, context.Canceled, err, "a call under a done ctx is not sent")
}

// The end of stdout fails a call that waits, and every later one, with
// mcp-go's error.
func TestStdioFastStdoutEnds(t *testing.T) {
	p := newFastPipe(t, nil)
	answer := p.goCall(context.Background(), callRequest(1))
	p.request(t)
	require.NoError(t, p.out.Close())
	a := waitAnswer(t, answer)
	require.Equal(t, transport.ErrTransportClosed, a.err)
	_, err := p.fast.call(context.Background(), callRequest(2))
	require.Equal(t, transport.ErrTransportClosed, err)
}

// Closing the transport fails a call that waits.
func TestStdioFastClosed(t *testing.T) {
	p := newFastPipe(t, nil)
	answer := p.goCall(context.Background(), callRequest(1))
	p.request(t)
	require.NoError(t, p.fast.Close())
	a := waitAnswer(t, answer)
	require.Equal(t, transport.ErrTransportClosed, a.err)
}

// A request the fast path encodes is byte for byte what json.Marshal
// makes of it (mcp-go's encoding), the session's own _meta included.
func TestEncodeRequestAsJSONMarshal(t *testing.T) {
	meta := json.RawMessage(`{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`)
	own := func(raw json.RawMessage) bool { return len(raw) > 0 && &raw[0] == &meta[0] }
	for _, params := range []any{
		nil,
		map[string]any{"name": "echo", "arguments": json.RawMessage(`{"text":"hello"}`)},
		map[string]any{"name": "echo", "arguments": json.RawMessage("{ \"text\" :\n \"a<b>&c \u2028 \u2029 é\" ,\"n\": [1, 2.5e3, null, true] }"), "_meta": meta},
		map[string]any{"name": "ec\"ho\\<>&\n\t\u0001é\u2028\xff", "arguments": json.RawMessage(nil), "_meta": map[string]any{"progressToken": "freecode-progress-1", "z": 1, "a": []any{"x"}}},
		map[string]any{"name": "echo", "arguments": json.RawMessage(`{}`), "_meta": json.RawMessage(`{"not":"own" }`),
			"inputResponses": map[string]json.RawMessage{"k": json.RawMessage(`{"action":"accept"}`)}, "requestState": json.RawMessage(`"s<"`)},
		map[string]any{},
	} {
		for _, id := range []mcpgo.RequestId{mcpgo.NewRequestId("freecode-tools-call-7"), mcpgo.NewRequestId(int64(7))} {
			req := transport.JSONRPCRequest{JSONRPC: mcpgo.JSONRPC_VERSION, ID: id, Method: "tools/call", Params: params}
			want, err := json.Marshal(req)
			require.NoError(t, err)
			got, err := encodeRequest(nil, req, own)
			require.NoError(t, err)
			require.Equal(t, string(want)+"\n", string(got))
		}
	}
	req := callRequest(1)
	req.Params.(map[string]any)["arguments"] = json.RawMessage(`{"text":`)
	_, err := encodeRequest(nil, req, own)
	require.Error(t, err, "arguments that are not JSON")
}

// Arguments json.Marshal cannot encode fail the call as mcp-go fails it,
// with nothing written.
func TestStdioFastUnencodable(t *testing.T) {
	p := newFastPipe(t, nil)
	req := callRequest(1)
	req.Params.(map[string]any)["arguments"] = json.RawMessage(`{"text":`)
	_, want := p.fast.SendRequest(context.Background(), req)
	require.Error(t, want)
	_, err := p.fast.call(context.Background(), req)
	require.Equal(t, want.Error(), err.Error())
	require.False(t, p.fast.w.wrote.Load())
}

// A session's calls to a local server go through the fast path, and fail
// as they failed through mcp-go: the server's exit mid-call, a message
// over the limit, a call after the session ended.
func TestFastCallsFailAsBefore(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"exit", []string{"--crash-after", "1"}},
		{"over limit", []string{"--stdout-flood-no-newline", "call", "--flood-bytes", strconv.Itoa(floodBytes)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got [2][3]string
			for i, mcpgoCalls := range []bool{true, false} {
				s, err := Connect(context.Background(), localServer("srv", tc.flags...), Options{Logger: testLogger(t), mcpgoCalls: mcpgoCalls})
				require.NoError(t, err)
				st := s.out.client.GetTransport().(*answeringStdio)
				require.Equal(t, mcpgoCalls, st.fast == nil)
				ctx, cancel := context.WithTimeout(context.Background(), signalWait)
				_, err = s.CallTool(ctx, "echo", json.RawMessage(`{"text":"x"}`), nil)
				cancel()
				require.ErrorIs(t, err, ErrTransport)
				waitClosed(t, s.Done(), "Done")
				_, again := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), nil)
				require.ErrorIs(t, again, ErrClosed)
				got[i] = [3]string{err.Error(), s.Err().Error(), again.Error()}
				require.NoError(t, s.Close())
				requireGroupGone(t, s.PID())
			}
			t.Log(got[1])
			require.Equal(t, got[0], got[1])
		})
	}
}

// A call's progress notices, sent before its answer, have all been handed
// over by the time CallTool returns, on both revisions.
func TestFastCallProgressBeforeReturn(t *testing.T) {
	for _, protocol := range []string{ProtocolVersion, ModernProtocolVersion} {
		t.Run(protocol, func(t *testing.T) {
			flags := []string{"--progress"}
			if protocol == ModernProtocolVersion {
				flags = append(flags, "--modern")
			}
			srv := localServer("steps", flags...)
			srv.Protocol = protocol
			s := connect(t, srv)
			for range 20 {
				var got atomic.Int32
				_, err := s.CallTool(context.Background(), "progress", json.RawMessage(`{"steps":3}`), func(wire.Progress) { got.Add(1) })
				require.NoError(t, err)
				require.EqualValues(t, 3, got.Load())
			}
		})
	}
}

// A cancelled call tells the server on the 2026-07-28 revision too.
func TestCancelSendsNotificationModern(t *testing.T) {
	logFile := filepath.Join(t.TempDir(), "calls.jsonl")
	srv := localServer("ts", "--modern", "--call-log", logFile)
	srv.Protocol = ModernProtocolVersion
	s := connect(t, srv)
	testCancel(t, s, logFile)
}

// Calls at once over one session each get their own answer.
func TestFastConcurrentCalls(t *testing.T) {
	for _, protocol := range []string{ProtocolVersion, ModernProtocolVersion} {
		t.Run(protocol, func(t *testing.T) {
			srv := localServer("ts", "--modern")
			srv.Protocol = protocol
			s := connect(t, srv)
			var wg sync.WaitGroup
			errs := make(chan error, 16)
			for i := range 16 {
				wg.Go(func() {
					text := fmt.Sprintf("call %d", i)
					res, err := s.CallTool(context.Background(), "echo", json.RawMessage(fmt.Sprintf(`{"text":%q}`, text)), nil)
					switch {
					case err != nil:
						errs <- err
					case len(res.Content) == 0:
						errs <- errors.New("no content")
					default:
						b, _ := res.Content[0].Block()
						if !strings.Contains(string(b), text) {
							errs <- fmt.Errorf("call %d answered %s", i, b)
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

// rawJSONSeeds are answers and results, usual and odd, that the walk of
// raw JSON must read as encoding/json does, or leave to it.
var rawJSONSeeds = []string{
	`{"jsonrpc":"2.0","id":"freecode-tools-call-1","result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":"freecode-tools-call-1","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"t","version":"1"}},"content":[{"type":"text","text":"hello"}],"resultType":"complete"}}`,
	` { "jsonrpc" : "2.0" , "id" : "a\"b" , "result" : { "content" : [ ] , "isError" : true , "structuredContent" : null , "_meta" : 12e3 } } `,
	`{"jsonrpc":"2.0","id":"x","error":{"code":-32602,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":"x","error":null,"result":null}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`,
	`{"jsonrpc":"2.0","method":"","id":"x","result":{}}`,
	`{"jsonrpc":"2.0","method":null,"id":"x","result":{"content":null}}`,
	`{"jsonrpc":"2.0","method":1,"id":"x"}`,
	`{"jsonrpc":"2.0","Method":"x","id":"x"}`,
	`{"jsonrpc":"2.0","ID":"y","id":"x","result":{}}`,
	`{"jsonrpc":"2.0","id":"x","id":"y","result":{}}`,
	`{"jsonrpc":"2.0","i\u0064":"x","result":{}}`,
	`{"jsonrpc":"1.0","id":"x","result":{}}`,
	`{"jsonrpc":null,"id":null,"result":{}}`,
	`{"jsonrpc":2,"id":"x","result":{}}`,
	`{"jsonrpc":"2.0","id":"x","result":{"content":{}}}`,
	`{"jsonrpc":"2.0","id":"x","result":{"content":[1,"a",null,[{}],{"a":"]}"}],"isError":"yes"}}`,
	`{"jsonrpc":"2.0","id":"x","result":{"content":[],"isError":false,"Content":[]}}`,
	`{"jsonrpc":"2.0","id":"x","result":{"content":[],"content":[{}]}}`,
	`{"jsonrpc":"2.0","id":"x","result":{"contEnt":[],"ſtructuredContent":1,"_META":2}}`,
	`{"jsonrpc":"2.0","id":"x","result":{"\u0063ontent":[]}}`,
	`{"jsonrpc":"2.0","id":"x","result":[]}`,
	`{"jsonrpc":"2.0","id":"x","result":"s"}`,
	`{}`, `[]`, `null`, `"x"`, `{"a":{"b":[1,2,{"c":"\\"}]}}`,
}

// answerFields reads an answer as json.Unmarshal does, or leaves it to it.
func TestAnswerFieldsAsEncodingJSON(t *testing.T) {
	for _, line := range rawJSONSeeds {
		checkAnswerFields(t, []byte(line))
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(line), &m) == nil && m["result"] != nil {
			checkCallResultFields(t, m["result"])
		}
	}
}

func checkAnswerFields(t *testing.T, line []byte) {
	t.Helper()
	if !json.Valid(line) {
		return
	}
	var fast, slow stdioMessage
	verdict := answerFields(line, &fast)
	err := json.Unmarshal(line, &slow)
	switch verdict {
	case notAnswer:
		require.True(t, err != nil || slow.Method != "", "%s: taken for no answer", line)
	case answerRead:
		require.NoError(t, err, "%s", line)
		if string(slow.ID) == "null" {
			slow.ID = nil
		}
		require.Equal(t, slow, fast, "%s", line)
	}
}

// callResultFields reads a result as json.Unmarshal does, or leaves it to
// it.
func TestCallResultFieldsAsEncodingJSON(t *testing.T) {
	for _, raw := range []string{
		`{"content":[{"type":"text","text":"a"}, {"type":"x","n":1.0}],"isError":true,"structuredContent":{"a":[1]},"_meta":{"k":"v"}}`,
		`{"content":null}`, `{"isError":true}`, `{"content":{}}`, `{"content":[],"isError":null,"x":[{"content":1}]}`,
		`{ "content" : [ 1 , "]" , [ ] ] , "_meta" : null }`,
	} {
		checkCallResultFields(t, json.RawMessage(raw))
	}
}

func checkCallResultFields(t *testing.T, raw json.RawMessage) {
	t.Helper()
	if !json.Valid(raw) {
		return
	}
	fast, ok := callResultFields(raw)
	if !ok {
		return
	}
	var slow callResultWire
	require.NoError(t, json.Unmarshal(raw, &slow), "%s", raw)
	require.Equal(t, slow.Content.present, fast.Content.present, "%s", raw)
	require.Equal(t, len(slow.Content.blocks), len(fast.Content.blocks), "%s", raw)
	for i := range slow.Content.blocks {
		require.Equal(t, string(slow.Content.blocks[i]), string(fast.Content.blocks[i]), "%s", raw)
	}
	require.Equal(t, slow.IsError, fast.IsError, "%s", raw)
	require.Equal(t, string(slow.Structured), string(fast.Structured), "%s", raw)
	require.Equal(t, slow.Structured == nil, fast.Structured == nil, "%s", raw)
	require.Equal(t, string(slow.Meta), string(fast.Meta), "%s", raw)
	require.Equal(t, slow.Meta == nil, fast.Meta == nil, "%s", raw)
}

func FuzzRawJSONFields(f *testing.F) {
	for _, s := range rawJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAnswerFields(t, b)
		checkCallResultFields(t, b)
	})
}

// pieces reads its strings one Read each.
type pieces []string

func (p *pieces) Read(b []byte) (int, error) {
	if len(*p) == 0 {
		return 0, io.EOF
	}
	n := copy(b, (*p)[0])
	if n < len((*p)[0]) {
		(*p)[0] = (*p)[0][n:]
	} else {
		*p = (*p)[1:]
	}
	return n, nil
}

// After a long line, lineFilter goes back to a small buffer even when
// every read ends inside the next line (its buffer is never empty when
// it fills it): one long line does not cost its size for the session.
func TestLineFilterLetsGoOfALongLinesBuffer(t *testing.T) {
	long := `{"jsonrpc":"2.0","method":"x","params":{"p":"` + strings.Repeat("x", 4*filterBufKeep) + `"}}` + "\n"
	short := `{"jsonrpc":"2.0","method":"y"}` + "\n"
	in := pieces{long + short[:1]}
	for range 20 {
		in = append(in, short[1:]+short[:1])
	}
	in = append(in, short[1:])
	lf := &lineFilter{r: &in, fast: newStdioFast(&writeWatcher{f: io.Discard}, nil)}
	r := bufio.NewReader(lf)
	lines := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		lines++
		if lines > 1 {
			require.Equal(t, short, line)
			require.LessOrEqual(t, cap(lf.buf), filterBufKeep, "line %d: the long line's buffer is kept", lines)
		}
	}
	require.Equal(t, 22, lines)
}
