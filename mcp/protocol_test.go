package mcp

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startLines is the number of processes the test server's --start-log
// recorded.
func startLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(data), "\n")
}

// A server of the 2026-07-28 revision is spoken to in it: no initialize,
// requests carrying _meta, and tools/list_changed through
// subscriptions/listen — over HTTP the test server delivers it on no other
// stream, so a change seen there came through the listen stream.
func TestModernServerSpokenModern(t *testing.T) {
	for _, mode := range []string{"stdio", "streamable-http"} {
		t.Run(mode, func(t *testing.T) {
			var srv Spec
			if mode == "stdio" {
				srv = localServer("modern", "--modern")
			} else {
				u, _ := startTestServerHTTP(t, "--modern")
				srv = remoteServer("modern", u, TransportAuto)
			}
			srv.Protocol = ProtocolAuto
			s := connect(t, srv)
			require.Equal(t, ModernProtocolVersion, s.Protocol())
			require.Len(t, s.Tools(), len(fixedTools))
			res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"stateless"}`), nil)
			require.NoError(t, err)
			require.Equal(t, "stateless", textOf(t, res))

			_, err = s.CallTool(context.Background(), "add_tool", json.RawMessage(`{"name":"later"}`), nil)
			require.NoError(t, err)
			waitClosed(t, s.ToolsChanged(), "ToolsChanged on 2026-07-28")
			_, ok := findTool(s.Tools(), "mcp__modern__later")
			require.True(t, ok, "tools: %v", toolIDs(s.Tools()))
		})
	}
}

// Servers of the older revisions get 2025-11-25, however they answer the
// probe: an error, an empty result (which is no discover result), nothing
// at all, or ending the process.
func TestLegacyServersSpokenLegacy(t *testing.T) {
	tests := []struct {
		name  string
		flags []string
		http  bool
	}{
		{name: "method not found", flags: nil},
		{name: "method not found over HTTP", flags: nil, http: true},
		{name: "empty result", flags: []string{"--discover", "empty"}},
		{name: "empty result over HTTP", flags: []string{"--discover", "empty"}, http: true},
		{name: "no answer", flags: []string{"--discover", "silent"}},
		// The probe waits for the server to read it: a slow start is not
		// taken for silence, nor a silent server for a slow one.
		{name: "no answer after a slow start", flags: []string{"--discover", "silent", "--start-delay", "1s"}},
		{name: "exit on the probe", flags: []string{"--discover", "exit"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srv Spec
			if tt.http {
				u, _ := startTestServerHTTP(t, tt.flags...)
				srv = remoteServer("old", u, TransportAuto)
			} else {
				srv = localServer("old", tt.flags...)
			}
			srv.Protocol = ProtocolAuto
			s := connect(t, srv)
			require.Equal(t, ProtocolVersion, s.Protocol())
			res, err := s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"handshake"}`), nil)
			require.NoError(t, err)
			require.Equal(t, "handshake", textOf(t, res))
		})
	}
}

// A modern server that starts slowly is still found modern: the probe's
// grace starts once the server has read it, not when it was sent.
func TestSlowModernServerFoundModern(t *testing.T) {
	srv := localServer("slow", "--modern", "--start-delay", "1s")
	srv.Protocol = ProtocolAuto
	s := connect(t, srv)
	require.Equal(t, ModernProtocolVersion, s.Protocol())
}

// A server that ends on the probe is started again, once, and spoken to in
// 2025-11-25; the cache then spares it the probe on the next connect, and
// a pinned revision sends none at all.
func TestProbeExitRestartsOnceAndIsRemembered(t *testing.T) {
	log := filepath.Join(t.TempDir(), "starts")
	srv := localServer("fragile", "--discover", "exit", "--start-log", log)
	srv.Protocol = ProtocolAuto
	cache := NewProtocolCache()
	connectOnce := func(srv Spec) {
		s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t), Protocols: cache})
		require.NoError(t, err)
		require.Equal(t, ProtocolVersion, s.Protocol())
		require.NoError(t, s.Close())
		requireGroupGone(t, s.PID())
	}
	connectOnce(srv)
	require.Equal(t, 2, startLines(t, log), "the probe ended the first process; one more was started")
	connectOnce(srv)
	require.Equal(t, 3, startLines(t, log), "the remembered revision needs no probe")

	pinned := localServer("pinned", "--discover", "exit", "--start-log", log)
	pinned.Protocol = ProtocolVersion
	connectOnce(pinned)
	require.Equal(t, 4, startLines(t, log), "a pinned revision sends no probe")
}

// A server that crashes at start, before it read anything, is not started
// twice: only an exit after reading the probe is blamed on it.
func TestCrashAtStartIsNotRetried(t *testing.T) {
	log := filepath.Join(t.TempDir(), "starts")
	_, err := Connect(context.Background(), localServer("crashy", "--exit-at-start", "3", "--start-log", log), Options{Logger: testLogger(t)})
	var exit *ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 1, startLines(t, log))
}

// A failed connect forgets what the server spoke: the next one asks again.
func TestProtocolCacheForgetsOnFailure(t *testing.T) {
	cache := NewProtocolCache()
	srv := localServer("ts")
	cache.store(protocolKey(srv), ModernProtocolVersion)
	// Remembered modern, it is legacy now; mcp-go falls back to initialize
	// when its own probe fails, so the connect works, speaking 2025-11-25,
	// and the cache learns it.
	s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t), Protocols: cache})
	require.NoError(t, err)
	require.Equal(t, ProtocolVersion, s.Protocol())
	require.NoError(t, s.Close())
	require.Equal(t, ProtocolVersion, cache.lookup(protocolKey(srv)))

	bad := localServer("bad", "--exit-at-start", "3")
	cache.store(protocolKey(bad), ProtocolVersion)
	_, err = Connect(context.Background(), bad, Options{Logger: testLogger(t), Protocols: cache})
	require.Error(t, err)
	require.Empty(t, cache.lookup(protocolKey(bad)))
}

// The verdict on an answer to server/discover.
func TestDiscoverVerdict(t *testing.T) {
	tests := []struct {
		name, answer, want string
	}{
		{"discover result", `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{}}}}`, ModernProtocolVersion},
		{"empty result", `{"jsonrpc":"2.0","id":1,"result":{}}`, ProtocolVersion},
		{"no capabilities", `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"]}}`, ProtocolVersion},
		{"only older versions", `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2025-11-25"],"capabilities":{}}}`, ProtocolVersion},
		{"method not found", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, ProtocolVersion},
		{"invalid params", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`, ProtocolVersion},
		{"unsupported version listing ours", `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"no","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}`, ModernProtocolVersion},
		{"unsupported version listing others", `{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"no","data":{"supported":["2030-01-01"]}}}`, ProtocolVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var resp transport.JSONRPCResponse
			require.NoError(t, json.Unmarshal([]byte(tt.answer), &resp))
			require.Equal(t, tt.want, discoverVerdict(&resp, nil))
		})
	}
}

// The real npm servers speak 2025-11-25, asked or not, and answer the
// probe at once.
func TestNpmServersSpeakLegacy(t *testing.T) {
	srv := npmLocal("memory", npmServer(t, "@modelcontextprotocol/server-memory/dist/index.js"))
	require.Equal(t, ProtocolVersion, connect(t, srv).Protocol())
	srv.Protocol = ProtocolAuto
	require.Equal(t, ProtocolVersion, connect(t, srv).Protocol())
}

// Without a Spec.Protocol a server whose revision is not remembered is
// asked: a modern server that also answers initialize is spoken to in
// 2026-07-28.
func TestDefaultProbes(t *testing.T) {
	require.Equal(t, ModernProtocolVersion, connect(t, localServer("dual", "--modern")).Protocol())
	require.Equal(t, ProtocolVersion, connect(t, localServer("legacy")).Protocol())
}

// A pinned revision is spoken without a probe: a dual-era server pinned to
// 2025-11-25 is initialized, and pinned to 2026-07-28 spoken to
// statelessly.
func TestPinnedRevision(t *testing.T) {
	srv := localServer("pinned", "--modern")
	srv.Protocol = ProtocolVersion
	require.Equal(t, ProtocolVersion, connect(t, srv).Protocol())
	srv.Protocol = ModernProtocolVersion
	require.Equal(t, ModernProtocolVersion, connect(t, srv).Protocol())
}

// A revision pinned to 2026-07-28 is that or nothing: a server that only
// speaks an older one fails the connect, saying so, rather than being
// spoken to in what mcp-go falls back to.
func TestPinnedModernRefusesAnOlderServer(t *testing.T) {
	srv := localServer("old")
	srv.Protocol = ModernProtocolVersion
	_, err := Connect(context.Background(), srv, Options{Logger: testLogger(t)})
	require.Error(t, err)
	require.Contains(t, err.Error(), `server "old": initialize: its protocol is pinned to 2026-07-28 but the server does not speak it (server/discover: method not found`)
}

// A session declares elicitation when it can answer and roots when its
// spec lists them, on 2026-07-28 (answered through input_required) as on
// 2025-11-25 (through the server's requests); never sampling.
func TestModernDeclaresOnlyWhatItServes(t *testing.T) {
	for _, protocol := range []string{ProtocolVersion, ModernProtocolVersion} {
		t.Run(protocol, func(t *testing.T) {
			flags := []string{"--ask"}
			if protocol == ModernProtocolVersion {
				flags = append(flags, "--modern")
			}
			srv := localServer("ts", flags...)
			srv.Protocol, srv.Roots = protocol, []string{t.TempDir()}
			s := connectElicit(t, srv, Options{Elicit: answer(ElicitResult{Action: ElicitDecline}, nil)})
			require.Equal(t, protocol, s.Protocol())
			text, isErr := elicitCallText(t, s, "capabilities", `{}`)
			require.False(t, isErr, text)
			assert.Contains(t, text, "elicitation")
			assert.Contains(t, text, "roots")
			assert.NotContains(t, text, "sampling")

			srv.Roots = nil
			s = connect(t, srv)
			text, _ = elicitCallText(t, s, "capabilities", `{}`)
			assert.NotContains(t, text, "elicitation")
			assert.NotContains(t, text, "roots")
		})
	}
}

// On 2026-07-28, where resources/subscribe is gone, a session offers no
// resource subscriptions (rather than sending a request the server does
// not have); it lists the resources as on any revision.
func TestModernOffersNoResourceSubscriptions(t *testing.T) {
	srv := localServer("res", "--resources", "1", "--modern")
	srv.Protocol = ModernProtocolVersion
	s := connect(t, srv)
	f := s.Features()
	require.True(t, f.Offers.Resources)
	require.False(t, f.Offers.Subscribe)
	require.NotEmpty(t, f.Resources)
	err := s.Subscribe(context.Background(), "test://text/0")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "resource subscriptions")
}
