package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	ossignal "os/signal"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/freecode/freecode/internal/procguard"
	"github.com/freecode/freecode/internal/testutil"
)

// These tests run local servers under a reaper: this test binary, which
// testutil.Main makes dispatch as one.

func reaperOptions(t *testing.T) Options {
	return Options{Logger: testLogger(t), Launcher: reaperLauncher{procguard.NewReaper(procguard.SelfExe, nil)}}
}

// reaperLauncher runs servers under procguard's reapers, as the one
// FreeCode composes in cmd/freecode does (package mcp does not import
// procguard; its tests may).
type reaperLauncher struct{ r *procguard.Reaper }

func (l reaperLauncher) Launch(c LaunchSpec) (LaunchedProcess, error) {
	p, err := l.r.Start(procguard.Command{Path: c.Path, Args: c.Args, Env: c.Env, Stdin: c.Stdin, Stdout: c.Stdout, Stderr: c.Stderr})
	if err != nil {
		return nil, err
	}
	return reapedProcess{p}, nil
}

type reapedProcess struct{ p *procguard.Process }

func (r reapedProcess) Pid() int                        { return r.p.Pid }
func (r reapedProcess) Terminate()                      { r.p.Terminate() }
func (r reapedProcess) Kill()                           { r.p.Kill() }
func (r reapedProcess) Wait() (*os.ProcessState, error) { return r.p.Wait() }

// failure is how a server failed: at connect, or on its first call.
func failure(t *testing.T, srv Spec, opts Options, call bool) error {
	t.Helper()
	s, err := Connect(context.Background(), srv, opts)
	if !call {
		require.Error(t, err)
		return err
	}
	require.NoError(t, err)
	defer s.Close()
	_, err = s.CallTool(context.Background(), "crash", json.RawMessage(`{}`), nil)
	require.ErrorIs(t, err, ErrTransport)
	waitClosed(t, s.Done(), "Done after crash")
	return s.Err()
}

// A server under a reaper fails exactly as one started directly: same
// messages, same exit codes.
func TestReaperSameErrors(t *testing.T) {
	missing := localServer("missing")
	missing.Command = []string{"freecode-no-such-command", "--flag"}
	absent := localServer("absent")
	absent.Command = []string{"/nonexistent/server", "--flag"}
	notExec := localServer("dir")
	notExec.Command = []string{t.TempDir()}
	for name, tc := range map[string]struct {
		srv  Spec
		call bool
	}{
		"exit at start": {srv: localServer("boom", "--exit-at-start", "7")},
		"not in PATH":   {srv: missing},
		"no such file":  {srv: absent},
		"not runnable":  {srv: notExec},
		"crash":         {srv: localServer("crashy"), call: true},
	} {
		t.Run(name, func(t *testing.T) {
			direct := failure(t, tc.srv, Options{Logger: testLogger(t)}, tc.call)
			reaped := failure(t, tc.srv, reaperOptions(t), tc.call)
			t.Log(reaped)
			assert.Equal(t, direct.Error(), reaped.Error())
			var de, re *ExitError
			require.Equal(t, errors.As(direct, &de), errors.As(reaped, &re))
			if de != nil {
				assert.Equal(t, de.ExitCode(), re.ExitCode())
			}
		})
	}
}

// A server killed by a signal is reported as without a reaper (for SIGSEGV
// the Go test server's runtime crashes with status 2 itself).
func TestReaperSignalDeath(t *testing.T) {
	// kill takes the subtest's t: a FailNow on the parent's t from a
	// subtest's goroutine would end the wrong test.
	kill := func(t *testing.T, opts Options, sig syscall.Signal) error {
		t.Helper()
		s, err := Connect(context.Background(), localServer("sig"), opts)
		require.NoError(t, err)
		defer s.Close()
		pid := s.PID()
		require.NoError(t, syscall.Kill(pid, sig))
		select {
		case <-s.Done():
		case <-time.After(signalWait):
			st, alive := testutil.ProcStat(pid)
			t.Fatalf("Done after %s: not signalled within %s (server %d alive: %t, state %q; ignored by this test binary: %t)",
				unix.SignalName(sig), signalWait, pid, alive, st.State, ossignal.Ignored(sig))
		}
		var ee *ExitError
		require.ErrorAs(t, s.Err(), &ee)
		return s.Err()
	}
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGSEGV} {
		t.Run(unix.SignalName(sig), func(t *testing.T) {
			direct, reaped := kill(t, Options{Logger: testLogger(t)}, sig), kill(t, reaperOptions(t), sig)
			if sig != syscall.SIGSEGV {
				assert.Contains(t, reaped.Error(), `server "sig" was killed by `+unix.SignalName(sig))
			}
			// The stderr tails of two crashes differ in addresses.
			assert.Equal(t, strings.SplitN(direct.Error(), ";", 2)[0], strings.SplitN(reaped.Error(), ";", 2)[0])
		})
	}
}

// PID and OnProcess name the server itself, which leads its own process
// group, not its reaper.
func TestReaperPIDIsServer(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	opts := reaperOptions(t)
	var onProcess int
	opts.OnProcess = func(pid int, _ <-chan struct{}) { onProcess = pid }
	s, err := Connect(context.Background(), localServer("ts", "--pid-file", pidFile), opts)
	require.NoError(t, err)
	defer s.Close()
	pid := readPID(t, pidFile)
	assert.Equal(t, pid, s.PID())
	assert.Equal(t, pid, onProcess)
	st, ok := testutil.ProcStat(pid)
	require.True(t, ok)
	assert.Equal(t, pid, st.PGID)
	assert.Equal(t, procguard.ReaperName, testutil.Comm(st.PPID), "its parent is the reaper")
}

// What a server started — a grandchild in its group holding stdout, a
// helper in a session of its own — is gone once the session has ended,
// however it ended.
func TestReaperKillsWhatTheServerLeft(t *testing.T) {
	for _, end := range []string{"close", "crash", "SIGKILL"} {
		t.Run(end, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Connect(context.Background(), localServer("tree",
				"--grandchild", "--grandchild-pid-file", filepath.Join(dir, "gc"),
				"--setsid-helper", filepath.Join(dir, "helper")), reaperOptions(t))
			require.NoError(t, err)
			defer s.Close()
			var procs []testutil.Proc
			for _, f := range []string{"gc", "helper"} {
				p, ok := testutil.Identify(readPID(t, filepath.Join(dir, f)))
				require.True(t, ok, "%s runs", f)
				procs = append(procs, p)
				t.Cleanup(p.Kill)
			}
			server, _ := testutil.Identify(s.PID())
			switch end {
			case "close":
				start := time.Now()
				require.NoError(t, s.Close())
				assert.Less(t, time.Since(start), stdinGrace+termGrace, "Close waits for no grace period")
			case "crash":
				_, err := s.CallTool(context.Background(), "crash", json.RawMessage(`{}`), nil)
				require.ErrorIs(t, err, ErrTransport)
			case "SIGKILL":
				require.NoError(t, syscall.Kill(s.PID(), syscall.SIGKILL))
			}
			waitClosed(t, s.Done(), "Done")
			for _, p := range append(procs, server) {
				assert.False(t, p.Alive(), "process %d outlived its session", p.PID)
			}
		})
	}
}

// A session under a reaper releases every descriptor it opened (pipes and
// the control socket) when it ends.
func TestReaperReleasesFileDescriptors(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	before := openFDs(t)
	for i := range 4 {
		s, err := Connect(context.Background(), localServer("fds", "--crash-after", "1"), reaperOptions(t))
		require.NoError(t, err)
		if i%2 == 0 {
			_, err = s.CallTool(context.Background(), "echo", json.RawMessage(`{"text":"x"}`), nil)
			require.ErrorIs(t, err, ErrTransport)
			waitClosed(t, s.Done(), "Done after crash")
		}
		require.NoError(t, s.Close())
		requireGroupGone(t, s.PID())
	}
	require.LessOrEqual(t, openFDs(t), before, "descriptors left open by four ended sessions")
}

// BenchmarkConnectLocal measures start, initialize, tools/list and close of
// the test server, directly and under a reaper (this test binary, so its
// start-up cost is the test binary's, not freecode's).
func BenchmarkConnectLocal(b *testing.B) {
	for name, launcher := range map[string]Launcher{"direct": nil, "reaper": reaperLauncher{procguard.NewReaper(procguard.SelfExe, nil)}} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				s, err := Connect(context.Background(), localServer("bench"), Options{Launcher: launcher})
				if err != nil {
					b.Fatal(err)
				}
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
