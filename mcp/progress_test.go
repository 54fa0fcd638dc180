package mcp

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestMentionedVars(t *testing.T) {
	vars := []string{"BRAVE_API_KEY", "GITHUB_TOKEN", "PATH_X", "X", "_"}
	for _, tc := range []struct {
		lines []string
		want  []string
	}{
		{[]string{"Error: BRAVE_API_KEY environment variable is required"}, []string{"BRAVE_API_KEY"}},
		{[]string{"missing $GITHUB_TOKEN.", "BRAVE_API_KEY=?"}, []string{"BRAVE_API_KEY", "GITHUB_TOKEN"}},
		{[]string{"MY_GITHUB_TOKEN is not set", "GITHUB_TOKENS", "xBRAVE_API_KEY"}, nil},
		{[]string{"X is one letter, _ too"}, nil},
		{[]string{"PATH_X"}, []string{"PATH_X"}},
		{nil, nil},
	} {
		require.Equal(t, tc.want, mentionedVars(vars, tc.lines), "%q", tc.lines)
	}
}

// A server that exits because it misses a variable FreeCode has but did
// not pass on says which one — by name, never its value — and gets it once
// its env passes it.
func TestExitNamesWithheldVariable(t *testing.T) {
	t.Setenv("FREECODE_TEST_API_KEY", "value-that-must-not-show")
	srv := localServer("brave", "--require-env", "FREECODE_TEST_API_KEY")
	_, err := Connect(context.Background(), srv, Options{Logger: testLogger(t)})
	var exit *ExitError
	require.ErrorAs(t, err, &exit)
	t.Log(err)
	require.Equal(t, []string{"FREECODE_TEST_API_KEY"}, exit.Withheld)
	require.Equal(t, `server "brave" exited with status 1 before initialize; stderr: Error: FREECODE_TEST_API_KEY environment variable is required`, err.Error())

	srv.Env = map[string]string{"FREECODE_TEST_API_KEY": os.Getenv("FREECODE_TEST_API_KEY")}
	connect(t, srv)
}

// A variable that FreeCode does not have either is not withheld: the
// server's own error says what is missing.
func TestExitWithoutWithheldVariable(t *testing.T) {
	_, err := Connect(context.Background(), localServer("brave", "--require-env", "FREECODE_TEST_UNSET_KEY"), Options{})
	var exit *ExitError
	require.ErrorAs(t, err, &exit)
	require.Empty(t, exit.Withheld)
}

// A start that runs out of time says whether the server was still working
// — writing to stderr, or using CPU like a package runner that downloads —
// or not at all, like a server that hangs; every kind wraps
// context.DeadlineExceeded and ErrTransport.
func TestStartTimeoutSaysWhetherTheServerWasWorking(t *testing.T) {
	for _, tc := range []struct {
		name     string
		flags    []string
		progress string
	}{
		{"hangs", []string{"--hang-init"}, ""},
		{"writes", []string{"--hang-init", "--init-stderr-every", "50ms"}, "writing to stderr"},
		{"busy", []string{"--hang-init", "--init-busy"}, "using CPU"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := localServer(tc.name, tc.flags...)
			// The window (the last quarter of the budget) starts well after
			// the process's own start-up.
			srv.Timeout = 2 * time.Second
			_, err := Connect(context.Background(), srv, Options{Logger: testLogger(t)})
			t.Log(err)
			var te *StartTimeoutError
			require.ErrorAs(t, err, &te)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			require.ErrorIs(t, err, ErrTransport)
			require.Equal(t, tc.progress, te.Progress)
			require.Equal(t, "initialize", te.Step)
			require.Equal(t, srv.Timeout, te.Timeout)
			msg := `server "` + tc.name + `": no answer to initialize within 2s`
			if tc.progress != "" {
				msg += "; it was still working (" + tc.progress + ") when the time ran out"
			}
			require.True(t, strings.HasPrefix(err.Error(), msg), "%q does not start with %q", err.Error(), msg)
		})
	}
}

// OnStderr gets the lines while the server starts, before Connect returns.
func TestOnStderrWhileStarting(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	got := make(chan struct{}, 1)
	srv := localServer("slow", "--init-delay", "10s", "--init-stderr-every", "20ms")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := Connect(ctx, srv, Options{OnStderr: func(line string) {
			mu.Lock()
			lines = append(lines, line)
			mu.Unlock()
			select {
			case got <- struct{}{}:
			default:
			}
		}})
		errc <- err
	}()
	for {
		<-got
		mu.Lock()
		n := len(lines)
		mu.Unlock()
		if n >= 2 {
			break
		}
	}
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{"still initializing (1)", "still initializing (2)"}, lines[:2])
}

func TestParseStat(t *testing.T) {
	pg, ticks, ok := parseStat([]byte("123 (a (b) c) S 1 456 456 0 -1 4194560 100 0 0 0 7 3 2 1 20 0 1 0 100 0 0\n"))
	require.True(t, ok)
	require.Equal(t, 456, pg)
	require.EqualValues(t, 13, ticks)
	_, _, ok = parseStat([]byte("garbage"))
	require.False(t, ok)
}

// With a WorkingTimeout, a start that is still working when its timeout
// runs out goes on — twice the time so far, up to WorkingTimeout — and a
// server that keeps working to the end says how long it had.
func TestWorkingTimeoutExtendsAStartThatIsStillWorking(t *testing.T) {
	t.Run("comes up", func(t *testing.T) {
		t.Parallel()
		srv := localServer("slow", "--init-delay", "3s", "--init-stderr-every", "50ms")
		srv.Timeout = time.Second
		// OnStillWorking is told each time, and never after Connect
		// returned: no lock needed to read what it recorded.
		var told []string
		s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t), WorkingTimeout: 30 * time.Second,
			OnStillWorking: func(how string, spent, budget time.Duration) {
				told = append(told, fmt.Sprintf("%s %s→%s", how, spent, budget))
			}})
		require.NoError(t, err, "1s, then 2s, then 4s")
		require.Equal(t, []string{"writing to stderr 1s→2s", "writing to stderr 2s→4s"}, told)
		require.NoError(t, s.Close())
	})
	t.Run("hangs", func(t *testing.T) {
		t.Parallel()
		srv := localServer("hang", "--hang-init")
		srv.Timeout = time.Second
		start := time.Now()
		_, err := Connect(context.Background(), srv, Options{Logger: testLogger(t), WorkingTimeout: 30 * time.Second})
		var te *StartTimeoutError
		require.ErrorAs(t, err, &te)
		require.Equal(t, time.Second, te.Timeout, "no sign of work: no extension")
		require.Empty(t, te.Progress)
		require.Less(t, time.Since(start), 10*time.Second)
	})
	t.Run("works to the end", func(t *testing.T) {
		t.Parallel()
		// Budgets of seconds: the window that judges the work is a quarter
		// of one, and a loaded machine must still give the busy server
		// its CPU in it.
		srv := localServer("busy", "--hang-init", "--init-busy")
		srv.Timeout = 2 * time.Second
		_, err := Connect(context.Background(), srv, Options{Logger: testLogger(t), WorkingTimeout: 6 * time.Second})
		var te *StartTimeoutError
		require.ErrorAs(t, err, &te)
		require.Equal(t, 6*time.Second, te.Timeout, "2s, 4s, 6s")
		require.Equal(t, "using CPU", te.Progress)
		require.True(t, strings.HasPrefix(err.Error(), `server "busy": no answer to initialize within 6s; it was still working (using CPU)`), err.Error())
	})
}
