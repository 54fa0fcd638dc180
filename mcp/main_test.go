package mcp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/freecode/freecode/schema"
)

// testServerBin is the mcp-testserver binary built by TestMain.
var testServerBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcp-session-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testServerBin = filepath.Join(dir, "mcp-testserver")
	build := exec.Command("go", "build", "-o", testServerBin, "./cmd/mcp-testserver")
	build.Dir = repoRoot()
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building mcp-testserver:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

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

// groupMembers lists the live (non-zombie) processes whose process group is
// pgid, read from /proc.
func groupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and parens.
		rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
		f := strings.Fields(rest)
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if pg, _ := strconv.Atoi(f[2]); pg == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// requireGroupGone waits until no live process of group pgid remains.
func requireGroupGone(t *testing.T, pgid int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(groupMembers(pgid)) == 0 }, 5*time.Second, 5*time.Millisecond,
		"processes of group %d still running: %v", pgid, groupMembers(pgid))
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
