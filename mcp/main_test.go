package mcp

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/schema"
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

// localServer is a local server config for the test server with flags.
func localServer(name string, flags ...string) schema.Server {
	return schema.Server{
		Name:    name,
		Type:    schema.Local,
		Command: append([]string{testServerBin}, flags...),
		Enabled: true,
		Timeout: 10 * time.Second,
	}
}

// connect connects srv and, at cleanup, closes the session and checks that
// no process of its group is left.
func connect(t *testing.T, srv schema.Server) *Session {
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

// startHTTPChild starts argv (a server listening on HTTP) in its own
// process group, killed at cleanup.
func startHTTPChild(t *testing.T, argv []string, env []string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
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
