package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// messages returns the log messages in s's log so far.
func messages(s *Session) []LogLine {
	lines, _, _ := s.LogAfter(0)
	return slices.DeleteFunc(lines, func(l LogLine) bool { return l.Message == nil })
}

// waitMessages waits until s's log holds n log messages and returns them.
func waitMessages(t *testing.T, s *Session, n int) []LogLine {
	t.Helper()
	require.Eventually(t, func() bool { return len(messages(s)) >= n }, signalWait, 5*time.Millisecond,
		"log messages: %v", messages(s))
	return messages(s)
}

func callOK(t *testing.T, s *Session, tool, args string) string {
	t.Helper()
	res, err := s.CallTool(context.Background(), tool, json.RawMessage(args), nil)
	require.NoError(t, err)
	require.False(t, res.IsError, "%s: %s", tool, res.Content)
	return textOf(t, res)
}

// Log messages go into the server's log ring beside its stderr lines, with
// their level and logger, marked with the level; stderr's tail (what
// errors quote) stays stderr.
func TestLogMessagesInTheLog(t *testing.T) {
	for _, mode := range []string{"stdio", "streamable-http", "stdio 2026-07-28", "streamable-http 2026-07-28"} {
		t.Run(mode, func(t *testing.T) {
			flags := []string{"--logging", "--stderr-echo"}
			if strings.HasSuffix(mode, "2026-07-28") {
				flags = append(flags, "--modern")
			}
			var srv Spec
			if strings.HasPrefix(mode, "stdio") {
				srv = localServer("talk", flags...)
			} else {
				u, _ := startTestServerHTTP(t, flags...)
				srv = remoteServer("talk", u, TransportAuto)
			}
			srv.LogLevel = "info"
			srv.Protocol = ProtocolAuto
			s := connect(t, srv)
			logged := func(args, want string) LogLine {
				if srv.Type == Local {
					callOK(t, s, "log", args)
				} else {
					// mcp-go's streamable HTTP server can end a call's
					// stream before the notices its handler sent on it
					// went out: ask again until one arrives.
					require.Eventually(t, func() bool {
						callOK(t, s, "log", args)
						return slices.ContainsFunc(messages(s), func(l LogLine) bool { return l.Text == want })
					}, signalWait, 50*time.Millisecond)
				}
				var got []LogLine
				i := -1
				require.Eventually(t, func() bool {
					got = messages(s)
					i = slices.IndexFunc(got, func(l LogLine) bool { return l.Text == want })
					return i >= 0
				}, signalWait, 5*time.Millisecond, "%q not in the log", want)
				return got[i]
			}
			l := logged(`{"level":"warning","logger":"db","text":"slow query"}`, "[warning] db: slow query")
			require.Equal(t, LogMessage{Level: "warning", Logger: "db", Data: json.RawMessage(`"slow query"`)}, *l.Message)
			logged(`{"level":"error","text":"{\"not\":\"json here\"}"}`, `[error] {"not":"json here"}`)
			if srv.Type == Local {
				callOK(t, s, "echo", `{"text":"on stderr"}`)
				require.Eventually(t, func() bool { return slices.Contains(s.StderrTail(), "on stderr") }, signalWait, 5*time.Millisecond)
				for _, l := range s.StderrTail() {
					require.NotContains(t, l, "slow query", "stderr's tail holds stderr only")
				}
			}
		})
	}
}

// Spec.LogLevel is asked for: with logging/setLevel on 2025-11-25 (in the
// background, after connecting), per request on 2026-07-28; a modern
// server asked for no level sends nothing.
func TestLogLevel(t *testing.T) {
	t.Run("2025-11-25", func(t *testing.T) {
		srv := localServer("lvl", "--logging")
		srv.LogLevel = "warning"
		s := connect(t, srv)
		require.Eventually(t, func() bool { return slices.Contains(s.StderrTail(), "log level set to warning") }, signalWait, 5*time.Millisecond,
			"stderr: %v", s.StderrTail())
		callOK(t, s, "log", `{"level":"info","text":"dropped by the server"}`)
		callOK(t, s, "log", `{"level":"error","text":"kept"}`)
		got := waitMessages(t, s, 1)
		require.Len(t, got, 1, "%v", got)
		require.Equal(t, "[error] kept", got[0].Text)
	})
	t.Run("2025-11-25 without a level", func(t *testing.T) {
		s := connect(t, localServer("lvl", "--logging"))
		callOK(t, s, "log", `{"level":"debug","text":"the server's default"}`)
		require.Equal(t, "[debug] the server's default", waitMessages(t, s, 1)[0].Text)
		require.NotContains(t, s.StderrTail(), "log level set to", "no level, no logging/setLevel")
	})
	t.Run("2026-07-28", func(t *testing.T) {
		srv := localServer("lvl", "--logging", "--modern")
		srv.Protocol = ModernProtocolVersion
		srv.LogLevel = "warning"
		s := connect(t, srv)
		require.Equal(t, ModernProtocolVersion, s.Protocol())
		callOK(t, s, "log", `{"level":"info","text":"below the level"}`)
		callOK(t, s, "log", `{"level":"warning","text":"at the level"}`)
		got := waitMessages(t, s, 1)
		require.Len(t, got, 1, "%v", got)
		require.Equal(t, "[warning] at the level", got[0].Text)
	})
	t.Run("2026-07-28 without a level", func(t *testing.T) {
		srv := localServer("lvl", "--logging", "--modern")
		srv.Protocol = ModernProtocolVersion
		s := connect(t, srv)
		callOK(t, s, "log", `{"level":"emergency","text":"not asked for"}`)
		callOK(t, s, "echo", `{"text":"after"}`)
		require.Empty(t, messages(s))
	})
}

// A chatty server is bounded: a burst beyond logBurst is dropped (the
// rest of the rate refills slowly), and a huge message is cut.
func TestLogMessagesBounded(t *testing.T) {
	srv := localServer("chatty", "--logging")
	s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t), StderrLines: 10 * logBurst})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })

	start := time.Now()
	callOK(t, s, "log", fmt.Sprintf(`{"level":"info","text":"flood","count":%d}`, 5*logBurst))
	// The call's answer comes after its notices on the one stdout stream.
	elapsed := time.Since(start)
	n := len(messages(s))
	require.GreaterOrEqual(t, n, logBurst)
	require.LessOrEqual(t, n, logBurst+int(elapsed.Seconds()*logRate)+1, "kept %d messages in %s", n, elapsed)

	big := strings.Repeat("x", 3*maxLineBytes)
	before := len(messages(s))
	// The bucket refills at logRate a second.
	require.Eventually(t, func() bool {
		callOK(t, s, "log", fmt.Sprintf(`{"level":"info","text":%q}`, big))
		return slices.ContainsFunc(messages(s)[before:], func(l LogLine) bool { return strings.HasPrefix(l.Text, "[info] xxx") })
	}, signalWait, 50*time.Millisecond)
	// Notices are handled apart from answers: the last of the flood may
	// come after the big one.
	var last LogLine
	for _, l := range messages(s) {
		if strings.HasPrefix(l.Text, "[info] xxx") {
			last = l
		}
	}
	require.NotNil(t, last.Message, "the big message is in the log")
	require.Len(t, last.Text, maxLineBytes+len("…"))
	require.True(t, strings.HasPrefix(last.Text, "[info] xxx"))
	require.Nil(t, last.Message.Data, "data beyond maxLineBytes is not kept")
}

func TestLogLine(t *testing.T) {
	tests := []struct {
		name                string
		level, logger, data any
		want                string
		wantData            string
	}{
		{"string", "info", nil, "hello", "[info] hello", `"hello"`},
		{"logger", "error", "net", "down", "[error] net: down", `"down"`},
		{"object", "debug", nil, map[string]any{"a": 1.0}, `[debug] {"a":1}`, `{"a":1}`},
		{"no level", nil, nil, "x", "[info] x", `"x"`},
		{"no data", "notice", "l", nil, "[notice] l: ", ""},
		{"long level", strings.Repeat("v", 100), nil, "x", "[" + strings.Repeat("v", maxLevelBytes) + "] x", `"x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := logLine(tt.level, tt.logger, tt.data)
			require.Equal(t, tt.want, l.Text)
			require.Equal(t, tt.wantData, string(l.Message.Data))
		})
	}
}
