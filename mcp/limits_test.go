package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// floodBytes is the size of the hostile messages below: four times the
// default message limit, small enough for CI.
const floodBytes = 64 << 20

// allocatedDuring reports how many bytes fn made this process allocate.
func allocatedDuring(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// requireLimit checks that err is the session-ending error of limit hit at
// step, with the message a user acts on.
func requireLimit(t *testing.T, err error, server, step, limit string) *LimitError {
	t.Helper()
	require.Error(t, err)
	t.Log(err)
	require.ErrorIs(t, err, ErrLimit)
	require.ErrorIs(t, err, ErrTransport)
	var le *LimitError
	require.ErrorAs(t, err, &le)
	require.Equal(t, server, le.Server)
	require.Equal(t, step, le.Step)
	require.Equal(t, limit, le.Limit)
	prefix := `server "` + server + `": `
	if step != "" {
		prefix += step + ": "
	}
	require.True(t, strings.HasPrefix(le.Error(), prefix), le.Error())
	require.Contains(t, le.Error(), "(limit mcp.limits."+limit+"); raise it for this server with \"limits\": {\""+limit+"\": ")
	return le
}

// connectFails connects srv, expecting failure, and checks that nothing of
// it is left running.
func connectFails(t *testing.T, srv Spec) error {
	t.Helper()
	var pid int
	_, err := Connect(context.Background(), srv, Options{Logger: testLogger(t), OnProcess: func(p int, _ <-chan struct{}) { pid = p }})
	require.Error(t, err)
	if pid != 0 {
		requireGroupGone(t, pid)
	}
	return err
}

// A local server that writes one line without end used to make FreeCode
// buffer all of it.
func TestStdoutLineOverLimitWhileConnecting(t *testing.T) {
	srv := localServer("flood", "--stdout-flood-no-newline", "start", "--flood-bytes", strconv.Itoa(floodBytes))
	var err error
	alloc := allocatedDuring(func() { err = connectFails(t, srv) })
	le := requireLimit(t, err, "flood", "initialize", "maxMessageBytes")
	require.Equal(t, int64(testDefaultMaxMessageBytes), le.Value)
	require.Equal(t, `server "flood": initialize: the server sent a message of more than 16 MiB (limit mcp.limits.maxMessageBytes); `+
		`raise it for this server with "limits": {"maxMessageBytes": 33554432} if it is legitimate`, err.Error())
	t.Logf("allocated %d MiB", alloc>>20)
	assert.Less(t, alloc, uint64(80<<20), "a 64 MiB line is read no further than the limit")
}

func TestStdoutLineOverLimitWhileRunning(t *testing.T) {
	s := connect(t, localServer("flood", "--stdout-flood-no-newline", "call", "--flood-bytes", strconv.Itoa(floodBytes)))
	ctx, cancel := context.WithTimeout(context.Background(), signalWait)
	defer cancel()
	_, err := s.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`), nil)
	requireLimit(t, err, "flood", "", "maxMessageBytes")
	waitClosed(t, s.Done(), "Done after the flood")
	requireLimit(t, s.Err(), "flood", "", "maxMessageBytes")
	_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"again"}`), nil)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, err, ErrLimit)
}

// A large but well-formed tools/list is refused by default, and a limit is
// the server's to lower or raise.
func TestMessageLimitIsConfigurable(t *testing.T) {
	for _, remote := range []bool{false, true} {
		t.Run(map[bool]string{false: "local", true: "remote"}[remote], func(t *testing.T) {
			// Megabytes of list, made, sent and read under the race
			// detector: on a loaded machine that took over the 10 s the
			// test servers get by default, and the time ran out before the
			// limit was reached.
			server := func(description int) Spec {
				var s Spec
				if remote {
					u, _ := startTestServerHTTP(t, "--description-bytes", strconv.Itoa(description))
					s = remoteServer("big", u, TransportStreamableHTTP)
				} else {
					s = localServer("big", "--description-bytes", strconv.Itoa(description))
				}
				s.Timeout = 60 * time.Second
				return s
			}
			le := requireLimit(t, connectFails(t, server(20<<20)), "big", "tools/list", "maxMessageBytes")
			require.Equal(t, int64(testDefaultMaxMessageBytes), le.Value)

			const description = 100 << 10
			srv := server(description)
			srv.Limits.MaxMessageBytes = testMinMaxMessageBytes
			le = requireLimit(t, connectFails(t, srv), "big", "tools/list", "maxMessageBytes")
			require.Equal(t, int64(testMinMaxMessageBytes), le.Value)
			require.Contains(t, le.Error(), "a message of more than 64 KiB")

			srv.Limits.MaxMessageBytes = 4 * description
			s := connect(t, srv)
			echo, ok := findTool(s.Tools(), "mcp__big__echo")
			require.True(t, ok)
			require.Len(t, echo.Description, description)
		})
	}
}

// A fresh cursor on every page used to keep tools/list going without end.
func TestEndlessPagination(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pageSize int
		limits   Limits
		limit    string
		msg      string
	}{
		{"default pages", 10, Limits{}, "maxListPages",
			`server "p": tools/list: the server needed more than 1000 pages to list its tools (limit mcp.limits.maxListPages); raise it for this server with "limits": {"maxListPages": 2000} if it is legitimate`},
		{"default items", 500, Limits{}, "maxListItems",
			`server "p": tools/list: the server listed more than 20000 tools (limit mcp.limits.maxListItems); raise it for this server with "limits": {"maxListItems": 40000} if it is legitimate`},
		{"configured pages", 1, Limits{MaxListPages: 3}, "maxListPages", "more than 3 pages"},
		{"configured items", 4, Limits{MaxListItems: 10}, "maxListItems", "listed more than 10 tools"},
		{"configured bytes", 100, Limits{MaxListBytes: testMinMaxListBytes}, "maxListBytes", "listed more than 64 KiB of tools"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := localServer("p", "--endless-pages", "--page-size", strconv.Itoa(tc.pageSize))
			srv.Limits = testLimits(tc.limits)
			err := connectFails(t, srv)
			requireLimit(t, err, "p", "tools/list", tc.limit)
			require.Contains(t, err.Error(), tc.msg)
		})
	}
	t.Run("remote", func(t *testing.T) {
		u, _ := startTestServerHTTP(t, "--endless-pages")
		err := connectFails(t, remoteServer("p", u, TransportStreamableHTTP))
		requireLimit(t, err, "p", "tools/list", "maxListPages")
	})
}

// A server whose list outlasts the timeout (100k tools over a slow link)
// is told apart from one that never answered initialize.
func TestTimeoutDuringToolsListSaysHowFarItGot(t *testing.T) {
	srv := localServer("many", "--endless-pages", "--page-size", "100")
	srv.Timeout = time.Second
	srv.Limits = testLimits(Limits{MaxListPages: testMaxMaxListPages, MaxListItems: testMaxMaxListItems, MaxListBytes: testMaxMaxListBytes})
	err := connectFails(t, srv)
	t.Log(err)
	require.ErrorIs(t, err, ErrTransport)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NotErrorIs(t, err, ErrLimit)
	require.Regexp(t, `^server "many": no answer to tools/list within 1s \(received [1-9][0-9]*00 tools in [1-9][0-9]* pages so far\)(; it was still working \(using CPU\) when the time ran out)?$`, err.Error())
	m := regexp.MustCompile(`received (\d+) tools in (\d+) pages`).FindStringSubmatch(err.Error())
	tools, _ := strconv.Atoi(m[1])
	pages, _ := strconv.Atoi(m[2])
	require.Equal(t, 100*pages, tools)
}

// An HTTP error answer is only quoted, so its body is read up to a small
// cap, however long it is: it used to be read whole (a 200 MiB body made
// 834 MiB, an endless one ran on past the timeout).
func TestRemoteErrorBodyIsCut(t *testing.T) {
	for _, tc := range []struct {
		name  string
		bytes int
	}{{"64 MiB", floodBytes}, {"endless", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			u, _ := startTestServerHTTP(t, "--http-attack", "error-body", "--flood-bytes", strconv.Itoa(tc.bytes))
			srv := remoteServer("e", u, TransportAuto)
			srv.Timeout = 5 * time.Second
			var err error
			start := time.Now()
			alloc := allocatedDuring(func() { err = connectFails(t, srv) })
			took := time.Since(start)
			t.Log(err)
			require.ErrorIs(t, err, ErrTransport)
			require.Equal(t, `server "e": initialize: HTTP 500 Internal Server Error from `+u+` (the rest of its body, beyond 64 KiB, was not read)`, err.Error())
			t.Logf("allocated %d MiB in %s", alloc>>20, took)
			assert.Less(t, alloc, uint64(32<<20))
			assert.Less(t, took, srv.Timeout, "the body does not hold up connecting")
		})
	}
}

// A ready server's standalone GET stream sends one line without end; mcp-go
// would read it whole and, when the stream ends, reconnect and read the
// next (637 MiB, 8 GB in 10 s with reconnects).
func TestRemoteSSELineOverLimit(t *testing.T) {
	u, _ := startTestServerHTTP(t, "--http-attack", "sse-line", "--flood-bytes", strconv.Itoa(floodBytes))
	s := connect(t, remoteServer("s", u, TransportStreamableHTTP))
	ctx, cancel := context.WithTimeout(context.Background(), signalWait)
	defer cancel()
	var err error
	alloc := allocatedDuring(func() {
		// The call's answer races with the flood it sets off.
		_, err = s.CallTool(ctx, "echo", json.RawMessage(`{"text":"hi"}`), nil)
		waitClosed(t, s.Done(), "Done after the flood")
	})
	if err != nil {
		require.ErrorIs(t, err, ErrLimit)
	}
	requireLimit(t, s.Err(), "s", "", "maxMessageBytes")
	t.Logf("allocated %d MiB", alloc>>20)
	assert.Less(t, alloc, uint64(80<<20))
}

func TestRemoteLegacySSELineOverLimit(t *testing.T) {
	u, _ := startTestServerHTTP(t, "--sse", "--http-attack", "sse-line", "--flood-bytes", strconv.Itoa(floodBytes))
	err := connectFails(t, remoteServer("old", u, TransportSSE))
	requireLimit(t, err, "old", "initialize", "maxMessageBytes")
}

func TestFrameCounter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ends   frameEnd
		limit  int64
		chunks []string
		over   int // index of the chunk that goes over; -1: none
	}{
		{"lines within", endAtNewline, 4, []string{"abcd\nabcd\n", "ab", "cd\n"}, -1},
		{"line over in one chunk", endAtNewline, 4, []string{"abcd\nabcde\n"}, 0},
		{"line over across chunks", endAtNewline, 4, []string{"ab", "c", "de"}, 2},
		{"line over before its newline arrives", endAtNewline, 4, []string{"abcde"}, 0},
		{"body within", endAtEOF, 5, []string{"ab", "cde"}, -1},
		{"body over", endAtEOF, 5, []string{"ab\n", "c\nd"}, 1},
		// An event's bytes include its line ends.
		{"events within", endAtBlank, 15, []string{"data: 12345\n\n", "data: 12345\r\n\r\n", "data: 1234", "5\n", "\n"}, -1},
		{"event of many data lines", endAtBlank, 12, []string{"data: 1\n", "data: 2\n", "data: 3\n"}, 1},
		{"a line of only CRs ends the event", endAtBlank, 12, []string{"data: 12\n\r\r\n", "data: 12\n\n"}, -1},
		{"event over in one line", endAtBlank, 10, []string{"data: 12345678901"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newFrameCounter(tc.limit, tc.ends)
			got := -1
			for i, ch := range tc.chunks {
				if c.add([]byte(ch)) {
					got = i
					break
				}
			}
			require.Equal(t, tc.over, got)
		})
	}
}

// limitReader stops a consumer that reads in small pieces as soon as the
// frame is over, and for good.
func TestLimitReader(t *testing.T) {
	errOver := errors.New("over")
	calls := 0
	r := &limitReader{
		r:    iotest.OneByteReader(strings.NewReader("ok\n" + strings.Repeat("x", 100))),
		c:    newFrameCounter(10, endAtNewline),
		over: func() error { calls++; return errOver },
	}
	got, err := io.ReadAll(r)
	require.ErrorIs(t, err, errOver)
	require.Equal(t, "ok\n"+strings.Repeat("x", 10), string(got))
	_, err = r.Read(make([]byte, 1))
	require.ErrorIs(t, err, errOver)
	require.Equal(t, 1, calls)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r = &limitReader{r: bytes.NewReader([]byte("data")), ctx: ctx, c: newFrameCounter(10, endAtEOF)}
	_, err = r.Read(make([]byte, 4))
	require.ErrorIs(t, err, context.Canceled)
}

// A spec comes resolved: an unset limit or timeout is refused before
// anything starts, never replaced by a default of this package's own.
func TestUnsetSpecIsRefused(t *testing.T) {
	noTimeout := localServer("ts")
	noTimeout.Timeout = 0
	_, err := Connect(t.Context(), noTimeout, Options{Logger: testLogger(t)})
	require.EqualError(t, err, `server "ts": timeout is 0s: it must be positive`)
	noLimit := localServer("ts")
	noLimit.Limits.MaxListPages = 0
	_, err = Connect(t.Context(), noLimit, Options{Logger: testLogger(t)})
	require.ErrorContains(t, err, `server "ts": limit `)
	require.ErrorContains(t, err, `every limit must be positive`)
}
