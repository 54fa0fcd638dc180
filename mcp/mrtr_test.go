package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// modernServers are the test server spoken to in 2026-07-28 over stdio and
// over streamable HTTP, with flags.
func modernServers(t *testing.T, flags ...string) map[string]Spec {
	t.Helper()
	flags = append(flags, "--modern")
	local := localServer("ts", flags...)
	u, _ := startTestServerHTTP(t, flags...)
	remote := remoteServer("ts", u, TransportStreamableHTTP)
	local.Protocol, remote.Protocol = ModernProtocolVersion, ModernProtocolVersion
	return map[string]Spec{"stdio": local, "streamable-http": remote}
}

// A 2026-07-28 server that asks for a form through input_required gets its
// answer as a 2025-11-25 one gets it through elicitation/create: the
// handler is asked with the server's name, the omitted fields' defaults
// are filled in, and the retry carries the requestState back exactly (the
// test server fails the call otherwise).
func TestMRTRFormFillsDefaults(t *testing.T) {
	for mode, srv := range modernServers(t, "--ask") {
		t.Run(mode, func(t *testing.T) {
			got := make(chan *Elicitation, 1)
			s := connectElicit(t, srv, Options{Elicit: answer(ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, got)})
			require.Equal(t, ModernProtocolVersion, s.Protocol())
			text, isErr := elicitCallText(t, s, "ask", `{"message":"Who?"}`)
			require.False(t, isErr, text)
			assert.JSONEq(t, `{"action":"accept","content":{"name":"Ada","count":3,"color":"green"}}`, text)
			e := <-got
			assert.Equal(t, "ts", e.Server)
			assert.Equal(t, ElicitForm, e.Mode)
			assert.Equal(t, "Who?", e.Message)

			caps, _ := elicitCallText(t, s, "capabilities", `{}`)
			assert.Contains(t, caps, `"elicitation":{"form":{},"url":{}}`)
			assert.NotContains(t, caps, "sampling")
		})
	}
}

// URL mode, decline and an answer that does not fit the form go as on
// 2025-11-25; the last fails the call (there is no error to send in
// inputResponses), naming the server.
func TestMRTRURLDeclineAndInvalid(t *testing.T) {
	srv := localServer("ts", "--ask", "--modern")
	srv.Protocol = ModernProtocolVersion
	got := make(chan *Elicitation, 1)
	s := connectElicit(t, srv, Options{Elicit: answer(ElicitResult{Action: ElicitAccept}, got)})
	text, isErr := elicitCallText(t, s, "ask_url", `{"url":"https://example.com/pay"}`)
	require.False(t, isErr, text)
	assert.JSONEq(t, `{"action":"accept"}`, text)
	assert.Equal(t, "example.com", (<-got).Host())

	s = connectElicit(t, srv, Options{Elicit: answer(ElicitResult{Action: ElicitDecline, Content: map[string]any{"x": 1}}, nil)})
	text, _ = elicitCallText(t, s, "ask", `{}`)
	assert.JSONEq(t, `{"action":"decline"}`, text)

	s = connectElicit(t, srv, Options{Elicit: answer(ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada", "count": 11}}, nil)})
	_, err := s.CallTool(context.Background(), "ask", json.RawMessage(`{}`), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `server "ts": tools/call "ask": input request "answer" was not answered: the answer to server "ts" was not sent: the answer does not fit the requested form: count: at most 10, got 11`)
}

// A server may ask several times; each round's state is its own.
func TestMRTRTwoRounds(t *testing.T) {
	srv := localServer("ts", "--ask", "--modern")
	srv.Protocol = ModernProtocolVersion
	got := make(chan *Elicitation, 2)
	s := connectElicit(t, srv, Options{Elicit: func(_ context.Context, e *Elicitation) (ElicitResult, error) {
		got <- e
		if e.Form.Fields[0].Name == "name" {
			return ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil
		}
		return ElicitResult{Action: ElicitAccept}, nil
	}})
	text, isErr := elicitCallText(t, s, "ask_twice", `{}`)
	require.False(t, isErr, text)
	assert.Equal(t, "Ada: true", text, "the confirmation's default filled in")
	assert.Equal(t, "Who are you?", (<-got).Message)
	assert.Equal(t, "Are you sure, Ada?", (<-got).Message)
}

// prompts/get takes part as tools/call does.
func TestMRTRPrompt(t *testing.T) {
	srv := localServer("ts", "--ask", "--prompts", "--modern")
	srv.Protocol = ModernProtocolVersion
	s := connectElicit(t, srv, Options{Elicit: answer(ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": "Ada"}}, nil)})
	res, err := s.GetPrompt(context.Background(), "ask", nil)
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Contains(t, string(res.Messages[0].Content), "Hello, Ada!")
}

// roots/list is answered with the spec's roots; sampling is refused, and
// so is an elicitation when nothing can answer: the call fails, saying
// what the server asked for that the session did not declare.
func TestMRTRRootsAndRefusals(t *testing.T) {
	dir := t.TempDir()
	srv := localServer("ts", "--ask", "--client-requests", "--modern")
	srv.Protocol, srv.Roots = ModernProtocolVersion, []string{dir}
	s := connect(t, srv)
	text, isErr := elicitCallText(t, s, "roots", `{}`)
	require.False(t, isErr, text)
	assert.Contains(t, text, fileURI(dir))

	_, err := s.CallTool(context.Background(), "sample", json.RawMessage(`{}`), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `server "ts": tools/call "sample": the server asked for input: input request "answer": sampling/createMessage is not supported by FreeCode`)

	_, err = s.CallTool(context.Background(), "ask", json.RawMessage(`{}`), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `input request "answer" is an elicitation, which this session did not declare`)

	srv.Roots = nil
	s = connect(t, srv)
	_, err = s.CallTool(context.Background(), "roots", json.RawMessage(`{}`), nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `asks for roots/list, which this session did not declare`)
}

// Concurrent calls that both wait for input keep their own state: each
// retry carries its own answer. The handler answers only once both
// questions are asked, so the two loops are in flight together.
func TestMRTRConcurrentCallsIsolated(t *testing.T) {
	srv := localServer("ts", "--ask", "--modern")
	srv.Protocol = ModernProtocolVersion
	var asked sync.WaitGroup
	asked.Add(2)
	s := connectElicit(t, srv, Options{Elicit: func(ctx context.Context, e *Elicitation) (ElicitResult, error) {
		asked.Done()
		asked.Wait()
		return ElicitResult{Action: ElicitAccept, Content: map[string]any{"name": e.Message}}, nil
	}})
	var wg sync.WaitGroup
	texts := make([]string, 2)
	for i := range texts {
		wg.Go(func() {
			res, err := s.CallTool(context.Background(), "ask", json.RawMessage(fmt.Sprintf(`{"message":"caller-%d"}`, i)), nil)
			if assert.NoError(t, err) {
				texts[i] = res.Text()
			}
		})
	}
	wg.Wait()
	for i, text := range texts {
		assert.Contains(t, text, fmt.Sprintf(`"name":"caller-%d"`, i))
	}
}

// fakeModern is a 2026-07-28 server over streamable HTTP whose tools/call
// and resources/read answers are answer's, and which records every
// tools/call and resources/read request it got, byte for byte.
type fakeModern struct {
	mu       sync.Mutex // guards requests
	requests []json.RawMessage
	answer   func(n int, method string, params json.RawMessage) string // the n-th (from 0) such request's result
}

func (f *fakeModern) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || req.ID == nil {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result string
	switch req.Method {
	case "server/discover":
		result = `{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},"resources":{}},"serverInfo":{"name":"fake","version":"1"}}`
	case "tools/list":
		result = `{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}`
	case "resources/list":
		result = `{"resources":[]}`
	case "resources/templates/list":
		result = `{"resourceTemplates":[]}`
	case "tools/call", "resources/read":
		f.mu.Lock()
		n := len(f.requests)
		f.requests = append(f.requests, body)
		f.mu.Unlock()
		result = f.answer(n, req.Method, req.Params)
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, req.ID)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":%s}`, req.ID, result)
}

func (f *fakeModern) got() []json.RawMessage {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]json.RawMessage(nil), f.requests...)
}

func startFake(t *testing.T, f *fakeModern, opts Options) *Session {
	t.Helper()
	hs := httptest.NewServer(f)
	t.Cleanup(hs.Close)
	srv := remoteServer("fake", hs.URL, TransportStreamableHTTP)
	srv.Protocol = ModernProtocolVersion
	return connectElicit(t, srv, opts)
}

// field is the raw JSON of params' key ("" when absent).
func field(t *testing.T, req json.RawMessage, key string) string {
	t.Helper()
	var r struct {
		ID     json.RawMessage            `json:"id"`
		Params map[string]json.RawMessage `json:"params"`
	}
	require.NoError(t, json.Unmarshal(req, &r))
	if key == "id" {
		return string(r.ID)
	}
	return string(r.Params[key])
}

const askForm = `{"method":"elicitation/create","params":{"message":"ok?","requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}}`

// The requestState goes back as it came — escapes and all, never decoded
// — under a new JSON-RPC id; a round without one sends none; a result
// without resultType is complete. resources/read takes part as tools/call.
func TestMRTRRequestStateEchoedExactly(t *testing.T) {
	const state = `"s\u00e9\/\"x\" \ud83d\ude00 {}"`
	f := &fakeModern{answer: func(n int, method string, _ json.RawMessage) string {
		switch n {
		case 0:
			return `{"resultType":"input_required","inputRequests":{"a":` + askForm + `},"requestState":` + state + `}`
		case 1:
			return `{"resultType":"input_required","inputRequests":{"b":` + askForm + `}}`
		case 2:
			return `{"content":[{"type":"text","text":"done"}]}`
		case 3:
			return `{"resultType":"input_required","requestState":"shed"}`
		}
		return `{"contents":[{"uri":"test://x","text":"read"}]}`
	}}
	s := startFake(t, f, Options{Elicit: answer(ElicitResult{Action: ElicitAccept, Content: map[string]any{"ok": true}}, nil)})
	res, err := s.CallTool(context.Background(), "t", nil, nil)
	require.NoError(t, err)
	assert.Equal(t, "done", res.Text())
	contents, err := s.ReadResource(context.Background(), "test://x")
	require.NoError(t, err)
	require.Len(t, contents, 1)

	reqs := f.got()
	require.Len(t, reqs, 5)
	assert.Empty(t, field(t, reqs[0], "requestState"))
	assert.Empty(t, field(t, reqs[0], "inputResponses"))
	assert.Equal(t, state, field(t, reqs[1], "requestState"), "byte for byte")
	assert.JSONEq(t, `{"a":{"action":"accept","content":{"ok":true}}}`, field(t, reqs[1], "inputResponses"))
	assert.Empty(t, field(t, reqs[2], "requestState"), "the round without state sends none")
	assert.JSONEq(t, `{"b":{"action":"accept","content":{"ok":true}}}`, field(t, reqs[2], "inputResponses"))
	assert.Equal(t, `"t"`, field(t, reqs[2], "name"))
	ids := map[string]bool{}
	for _, r := range reqs {
		ids[field(t, r, "id")] = true
	}
	assert.Len(t, ids, 5, "a fresh id per attempt")
	assert.Equal(t, `"shed"`, field(t, reqs[4], "requestState"))
	assert.Empty(t, field(t, reqs[4], "inputResponses"), "nothing asked, nothing answered")
	assert.Equal(t, `"test://x"`, field(t, reqs[4], "uri"))
}

// Whatever a hostile server puts in input_required is bounded, and the
// call fails with an error naming the server.
func TestMRTRHostileAnswers(t *testing.T) {
	many := strings.Builder{}
	for i := range maxInputRequests + 1 {
		if i > 0 {
			many.WriteString(",")
		}
		fmt.Fprintf(&many, `"k%d":%s`, i, askForm)
	}
	for name, tc := range map[string]struct {
		result string
		want   string
	}{
		"endless":        {`{"resultType":"input_required","requestState":"again"}`, "still asked for input after 10 rounds"},
		"too many":       {`{"resultType":"input_required","inputRequests":{` + many.String() + `}}`, "asks for 17 inputs at once"},
		"state object":   {`{"resultType":"input_required","requestState":{"a":1}}`, "requestState is not a string"},
		"empty":          {`{"resultType":"input_required"}`, "neither inputRequests nor requestState"},
		"unknown method": {`{"resultType":"input_required","inputRequests":{"x":{"method":"tools/call"}}}`, `method "tools/call", which is not one a server may ask`},
		"huge state":     {`{"resultType":"input_required","requestState":"` + strings.Repeat("x", maxRequestStateBytes) + `"}`, "requestState is larger than FreeCode takes"},
		"bad form":       {`{"resultType":"input_required","inputRequests":{"x":{"method":"elicitation/create","params":{"message":"m"}}}}`, "a form-mode request needs requestedSchema"},
	} {
		t.Run(name, func(t *testing.T) {
			asked := 0
			f := &fakeModern{answer: func(int, string, json.RawMessage) string { return tc.result }}
			s := startFake(t, f, Options{Elicit: func(context.Context, *Elicitation) (ElicitResult, error) {
				asked++
				return ElicitResult{Action: ElicitCancel}, nil
			}})
			_, err := s.CallTool(context.Background(), "t", nil, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), `server "fake": tools/call "t": `)
			assert.Contains(t, err.Error(), tc.want)
			assert.Zero(t, asked, "nobody is asked a question that is not sent")
			assert.LessOrEqual(t, len(f.got()), maxInputRounds+1)
		})
	}
}

// Cancelling a call while its question waits for the user ends the
// question and the call, with nothing sent.
func TestMRTRCancelWhileAsking(t *testing.T) {
	f := &fakeModern{answer: func(int, string, json.RawMessage) string {
		return `{"resultType":"input_required","inputRequests":{"a":` + askForm + `}}`
	}}
	ctx, cancel := context.WithCancel(context.Background())
	s := startFake(t, f, Options{Elicit: func(ctx context.Context, _ *Elicitation) (ElicitResult, error) {
		cancel()
		<-ctx.Done()
		return ElicitResult{}, ctx.Err()
	}})
	_, err := s.CallTool(ctx, "t", nil, nil)
	require.ErrorIs(t, err, context.Canceled)
	assert.Len(t, f.got(), 1)
	assert.True(t, bytes.Contains(f.got()[0], []byte(`"name":"t"`)))
}
