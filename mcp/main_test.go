package mcp

import (
	"bufio"
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
)

// testServerBin is the mcp-testserver binary built by TestMain.
var testServerBin string

func TestMain(m *testing.M) { testutil.Main(m, &testServerBin) }

// testLogger logs to t at V(1), so server stderr shows in verbose output.
func testLogger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) {
		t.Log(prefix, args)
	}, funcr.Options{Verbosity: 1})
}

// The limits of the specs in these tests: the defaults and bounds that
// FreeCode's config resolves (schema.DefaultMax*, schema.MinMax* and
// schema.MaxMax*), so that messages read as users see them. That
// controller.MCPSpec passes those on is controller's test.
const (
	testDefaultMaxMessageBytes = 16 << 20
	testDefaultMaxListItems    = 20000
	testDefaultMaxListPages    = 1000
	testDefaultMaxListBytes    = 32 << 20

	testMinMaxMessageBytes = 64 << 10
	testMaxMaxMessageBytes = 1 << 30
	testMaxMaxListItems    = 1000000
	testMaxMaxListPages    = 100000
	testMinMaxListBytes    = 64 << 10
	testMaxMaxListBytes    = 4 << 30
)

// testLimits is l with its zero fields set to the defaults above.
func testLimits(l Limits) Limits {
	if l.MaxMessageBytes == 0 {
		l.MaxMessageBytes = testDefaultMaxMessageBytes
	}
	if l.MaxListItems == 0 {
		l.MaxListItems = testDefaultMaxListItems
	}
	if l.MaxListPages == 0 {
		l.MaxListPages = testDefaultMaxListPages
	}
	if l.MaxListBytes == 0 {
		l.MaxListBytes = testDefaultMaxListBytes
	}
	return l
}

// testMaxLimits are the bounds above, for Spec.MaxLimits.
func testMaxLimits() Limits {
	return Limits{MaxMessageBytes: testMaxMaxMessageBytes, MaxListItems: testMaxMaxListItems,
		MaxListPages: testMaxMaxListPages, MaxListBytes: testMaxMaxListBytes}
}

// localServer is a local server spec for the test server with flags.
func localServer(name string, flags ...string) Spec {
	return Spec{
		Name:      name,
		Type:      Local,
		Command:   append([]string{testServerBin}, flags...),
		Timeout:   10 * time.Second,
		Limits:    testLimits(Limits{}),
		MaxLimits: testMaxLimits(),
	}
}

// connect connects srv and, at cleanup, closes the session and checks that
// no process of its group is left.
func connect(t *testing.T, srv Spec) *Session {
	t.Helper()
	s, err := Connect(context.Background(), srv, Options{Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		if pid := s.PID(); pid != 0 {
			requireGroupGone(t, pid)
		}
	})
	return s
}

// requireGroupGone waits until no live process of group pgid remains.
func requireGroupGone(t *testing.T, pgid int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(testutil.GroupMembers(pgid)) == 0 }, 5*time.Second, 5*time.Millisecond,
		"processes of group %d still running: %v", pgid, testutil.GroupMembers(pgid))
}

// startHTTPChild makes the command for argv (a server listening on HTTP)
// in its own process group; the caller starts it and kills it at cleanup
// (killGroup). Its stderr goes to t's log.
func startHTTPChild(t *testing.T, argv []string, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stderr = testutil.LogWriter(t)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// killGroup kills cmd's process group and reaps cmd.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Wait()
}

// startTestServerHTTP runs the test server with --http on a free port and
// returns its URL (read from its "listening on URL" line) and the command.
func startTestServerHTTP(t *testing.T, flags ...string) (string, *exec.Cmd) {
	t.Helper()
	cmd := startHTTPChild(t, append([]string{testServerBin, "--http", "127.0.0.1:0"}, flags...), nil)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { killGroup(cmd) })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, "unexpected first line %q", line)
	return u, cmd
}
