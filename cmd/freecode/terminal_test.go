package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// These tests give commands a real terminal — a pseudo-terminal whose
// other end the test reads and types into — for what they only do on one.

// pty is a pseudo-terminal: the command gets tty; the test reads what it
// shows from the master end and types into it.
type pty struct {
	t      *testing.T
	master *os.File
	tty    *os.File
	out    *syncBuffer   // everything shown on the terminal
	done   chan struct{} // closed when the reader ends
}

func openPTY(t *testing.T) *pty {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	require.NoError(t, err)
	require.NoError(t, unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0), "unlock the pty")
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	p := &pty{t: t, master: m, tty: tty, out: &syncBuffer{}, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		_, _ = io.Copy(p.out, m) // ends with EIO once the last tty end is closed
	}()
	t.Cleanup(func() {
		p.tty.Close()
		p.master.Close()
		<-p.done
	})
	return p
}

// waitFor waits until the terminal shows s.
func (p *pty) waitFor(s string) {
	p.t.Helper()
	require.Eventually(p.t, func() bool { return strings.Contains(p.out.String(), s) }, waitFor, 10*time.Millisecond,
		"the terminal never showed %q; it shows:\n%q", s, p.out.String())
}

// typeLine types line and Enter.
func (p *pty) typeLine(line string) {
	p.t.Helper()
	_, err := p.master.WriteString(line + "\n")
	require.NoError(p.t, err)
}

func freecodeCmd(home string, args ...string) *exec.Cmd {
	cmd := exec.Command("freecode", args...)
	cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
	return cmd
}

// On a terminal `mcp start` shows the time so far and the server's stderr
// while the server starts, erasing its status line before the result.
func TestStartShowsProgressOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(local("slow", ts, "--init-delay", "1s", "--init-stderr-every", "100ms")), true)
	p := openPTY(t)
	cmd := freecodeCmd(home, "mcp", "start", "slow")
	cmd.Stdout = p.tty
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	require.NoError(t, cmd.Run(), "stderr: %s", stderr)
	p.waitFor("again")
	out := p.out.String()
	assert.Contains(t, out, "\r\x1b[K… Starting \"slow\": ")
	assert.Contains(t, out, "\r\x1b[K  │ still initializing (1)\r\n")
	assert.Contains(t, out, "\r\x1b[K  │ still initializing (5)\r\n")
	// The status line is erased before the result.
	assert.Regexp(t, "\r\x1b\\[K✓ Server \"slow\" started with 7 tools \\([\\d.]+m?s\\)\r\n", out)
	assert.Contains(t, out, "Stopped \"slow\" again: `mcp start` only tests a server; `freecode serve` keeps servers running.\r\n")
}

// A call through serve that needs approval asks on the terminal of the
// command that made it; an answer from another command counts as well, and
// the question is then withdrawn.
func TestCallThroughServeAsksOnItsTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(local("ts", ts)), true)
	p := startServe(t, home)
	p.waitPhase("ts", "ready")

	call := func(tty *pty, text string) (*exec.Cmd, *syncBuffer) {
		cmd := freecodeCmd(home, "mcp", "call", "mcp__ts__note", `{"text":"`+text+`"}`)
		out := &syncBuffer{}
		cmd.Stdin, cmd.Stdout, cmd.Stderr = tty.tty, out, tty.tty
		require.NoError(t, cmd.Start())
		return cmd, out
	}

	tty := openPTY(t)
	cmd, out := call(tty, "first")
	tty.waitFor(`Allow mcp__ts__note {"text":"first"}? (approval required by default (tool may change things)) [y/N] `)
	assert.Contains(t, tty.out.String(), "Approval a1 (also `freecode mcp approve a1` or `deny a1` from another terminal):")
	tty.typeLine("y")
	require.NoError(t, cmd.Wait())
	assert.Equal(t, "1\n", out.String())

	tty2 := openPTY(t)
	cmd, out = call(tty2, "second")
	tty2.waitFor("[y/N] ")
	approve, err := freecodeCmd(home, "mcp", "approve", "a2").CombinedOutput()
	require.NoError(t, err, "%s", approve)
	assert.Equal(t, "Approved a2 (mcp__ts__note).\n", string(approve))
	tty2.waitFor("Answered from elsewhere: approved.")
	require.NoError(t, cmd.Wait())
	assert.Equal(t, "2\n", out.String())
}

// On a terminal `mcp call` shows the server's progress on one line of
// stderr, rewritten in place, and ends the line before the result; in a
// one-shot session and through serve alike.
func TestCallShowsProgressOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(local("ts", ts, "--progress")), true)
	call := func(t *testing.T) {
		tty := openPTY(t)
		cmd := freecodeCmd(home, "mcp", "call", "mcp__ts__progress", `{"steps":3,"ms":100}`)
		out := &syncBuffer{}
		cmd.Stdout, cmd.Stderr = out, tty.tty
		require.NoError(t, cmd.Run(), "terminal: %q", tty.out.String())
		assert.Equal(t, "done 3 steps\n", out.String())
		// The last notice may come after the answer (the test server
		// writes notices apart from answers): the first two are sure.
		tty.waitFor("\r\x1b[Kprogress 1/3: step 1 of 3\r\x1b[Kprogress 2/3: step 2 of 3")
		tty.waitFor("\r\n")
	}
	t.Run("one-shot", call)
	p := startServe(t, home)
	p.waitPhase("ts", "ready")
	t.Run("through serve", call)
}
