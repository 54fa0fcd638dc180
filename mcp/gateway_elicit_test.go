package mcp

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/freecode/freecode/wire"
	"github.com/go-logr/logr"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// capSession is a host session that declared caps.
type capSession struct {
	id   string
	caps mcpgo.ClientCapabilities
}

func (s *capSession) Initialize()                                           {}
func (s *capSession) Initialized() bool                                     { return true }
func (s *capSession) NotificationChannel() chan<- mcpgo.JSONRPCNotification { return nil }
func (s *capSession) SessionID() string                                     { return s.id }
func (s *capSession) GetClientInfo() mcpgo.Implementation                   { return mcpgo.Implementation{} }
func (s *capSession) SetClientInfo(mcpgo.Implementation)                    {}
func (s *capSession) GetClientCapabilities() mcpgo.ClientCapabilities       { return s.caps }
func (s *capSession) SetClientCapabilities(c mcpgo.ClientCapabilities)      { s.caps = c }

func formHost(id string) *capSession {
	return &capSession{id: id, caps: mcpgo.ClientCapabilities{Elicitation: &mcpgo.ElicitationCapability{}}}
}

func urlOnlyHost(id string) *capSession {
	return &capSession{id: id, caps: mcpgo.ClientCapabilities{Elicitation: &mcpgo.ElicitationCapability{URL: &struct{}{}}}}
}

func noElicitHost(id string) *capSession { return &capSession{id: id} }

func testGateway(opts GatewayOptions) *Gateway {
	opts.Name, opts.Version, opts.Logger = "t", "0", logr.Discard()
	opts.Call = func(context.Context, GatewayCall) (wire.CallResult, error) { return wire.CallResult{}, nil }
	return NewGateway(opts)
}

// TestGatewayHostForRoutesByCall: a server's question goes to the host
// of the latest call in flight to that server that can show it; with no
// call to it in flight, to the latest host that can; with calls in flight
// whose hosts cannot, to none. Form questions need form support: a host
// that declared URL elicitation only cannot show them.
func TestGatewayHostForRoutesByCall(t *testing.T) {
	g := testGateway(GatewayOptions{ServerOf: func(name string) string { s, _, _ := strings.Cut(name, "__"); return s }})
	a, b, c, u := formHost("a"), formHost("b"), noElicitHost("c"), urlOnlyHost("u")
	g.hosts = []server.ClientSession{a, b, c, u}
	call := func(host server.ClientSession, tool string) func() {
		return g.track(g.srv.WithContext(t.Context(), host), g.serverOf(tool))
	}
	id := func(s server.ClientSession, _ *exchange) string {
		if s == nil {
			return ""
		}
		return s.SessionID()
	}

	assert.Equal(t, "b", id(g.hostFor("x", canElicitForm)), "no call in flight: the latest host that can show a form")
	assert.Equal(t, "u", id(g.hostFor("x", canElicitURL)))

	doneA := call(a, "x__ask")
	assert.Equal(t, "a", id(g.hostFor("x", canElicitForm)), "the host whose call waits on x")
	assert.Equal(t, "b", id(g.hostFor("y", canElicitForm)), "no call to y")
	doneC := call(c, "x__ask")
	assert.Equal(t, "a", id(g.hostFor("x", canElicitForm)), "the latest call's host cannot: the one before")
	doneU := call(u, "x__ask")
	assert.Equal(t, "a", id(g.hostFor("x", canElicitForm)), "a URL-only host shows no form")
	assert.Equal(t, "u", id(g.hostFor("x", canElicitURL)))
	doneA()
	assert.Equal(t, "", id(g.hostFor("x", canElicitForm)), "the calls waiting on x are of hosts that cannot show it")
	doneC()
	doneU()
	assert.Equal(t, "b", id(g.hostFor("x", canElicitForm)), "no call in flight any more")
	assert.Empty(t, g.calls)

	// Were it put, no one would answer: the bound ends the wait.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	_, err := AskHost(g.srv.WithContext(ctx, u), HostQuestion{Message: "?"})
	assert.ErrorIs(t, err, ErrHostCannotElicit, "AskHost puts a form to a URL-only host")
}

// TestGatewayHTTPEndsIdleSessions: an HTTP host's session with no request
// in flight for the idle TTL is ended and asked nothing more; one with a
// standing GET stream, idle longer, is kept.
func TestGatewayHTTPEndsIdleSessions(t *testing.T) {
	// Long enough that a loaded machine opens the GET stream, and looks at
	// the new session, well within it; the wait for the end is bounded by
	// the Eventually below, not by the TTL.
	g := testGateway(GatewayOptions{HTTPSessionIdleTTL: 2 * time.Second})
	h := g.HTTPHandler("/mcp")
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer func() { assert.NoError(t, h.Close(context.Background())) }()

	initialize := func() string {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
			`"capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}`
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		id := resp.Header.Get(server.HeaderKeySessionID)
		require.NotEmpty(t, id)
		return id
	}
	hosts := func() []string {
		g.mu.Lock()
		defer g.mu.Unlock()
		var out []string
		for _, s := range g.hosts {
			out = append(out, s.SessionID())
		}
		return out
	}

	listening := initialize()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/mcp", nil)
	require.NoError(t, err)
	req.Header.Set(server.HeaderKeySessionID, listening)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	go func() { _, _ = bufio.NewReader(resp.Body).ReadString(0) }()

	gone := initialize()
	require.Contains(t, hosts(), gone)
	require.Eventually(t, func() bool { return !slices.Contains(hosts(), gone) }, 30*time.Second, 10*time.Millisecond,
		"the idle session is still a host")
	assert.Contains(t, hosts(), listening, "the session listening on its GET stream, idle longer, was ended")
}
