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
// while the server starts, and why it goes on waiting past the timeout,
// erasing its status line before the result.
func TestStartShowsProgressOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	// Writing to stderr when its 1s run out, it is given 2s.
	slow := local("slow", ts, "--init-delay", "1500ms", "--init-stderr-every", "50ms")
	slow["timeout"] = 1000
	config{t, filepath.Join(home, "config.json")}.write(cfg(slow), true)
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
	assert.Regexp(t, "\r\x1b\\[K… Starting \"slow\": [\\d.]+s \\(still working: writing to stderr; waiting up to 2s\\)", out)
	assert.NotContains(t, stderr.String(), "still starting", "the terminal shows it")
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

// `mcp read` never writes a binary resource to a terminal: it refuses and
// says to use -o. Text it shows, with terminal controls neutralised.
func TestReadRefusesBinaryOnATerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(local("ts", ts, "--resources", "1", "--evil-text")), true)

	read := func(uri string) (*pty, string, error) {
		p := openPTY(t)
		cmd := freecodeCmd(home, "mcp", "read", "ts", uri)
		cmd.Stdout = p.tty
		stderr := &syncBuffer{}
		cmd.Stderr = stderr
		err := cmd.Run()
		p.tty.Close()
		<-p.done
		return p, stderr.String(), err
	}
	p, stderr, err := read("test://binary")
	require.Error(t, err)
	assert.Equal(t, "Error: binary resource not written to a terminal: test://binary of \"ts\" is binary (application/octet-stream, 256 bytes); save it with -o FILE\n", stderr)
	assert.Empty(t, p.out.String(), "nothing of the resource reached the terminal")

	p, stderr, err = read("test://text/0")
	require.NoError(t, err, stderr)
	assert.Equal(t, "text resource 0\r\n", p.out.String())

	p, stderr, err = read("test://evil")
	require.NoError(t, err, stderr)
	assert.NotContains(t, p.out.String(), "\x1b", "escapes neutralised")
}

// `mcp start --watch` prints what changes of a server's resources, as of
// its tools.
func TestStartWatchShowsResourceChanges(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	pidFile := filepath.Join(home, "ts.pid")
	config{t, filepath.Join(home, "config.json")}.write(cfg(local("ts", ts, "--resources", "1", "--pid-file", pidFile)), true)
	p := openPTY(t)
	stderr := &syncBuffer{}
	stop := startWatch(t, home, "ts", nil, p.tty, stderr, stderr)
	p.waitFor(`Watching "ts"`)
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	var pid int
	_, err = fmt.Sscan(string(data), &pid)
	require.NoError(t, err)
	require.NoError(t, syscall.Kill(pid, syscall.SIGUSR1))
	p.waitFor("Resources and prompts changed: now 3 resources, 1 resource template and 0 prompts\r\n  + test://dyn/1\r\n")
	p.waitFor("Tools changed: now 12 tools\r\n  + mcp__ts__dyn_1 (read-only)\r\n")
	stop()
}

// startWatch runs `mcp start <name> --watch` in home with stdin, stdout
// and stderr, and returns stop, which ends it with `mcp stop` and checks
// that it exited cleanly (shown is what it wrote, for the failure).
func startWatch(t *testing.T, home, name string, stdin io.Reader, stdout, stderr io.Writer, shown fmt.Stringer) (stop func()) {
	t.Helper()
	cmd := freecodeCmd(home, "mcp", "start", name, "--watch")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	require.NoError(t, cmd.Start())
	var waitErr error // set before exited is closed
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	return func() {
		t.Helper()
		out, err := freecodeCmd(home, "mcp", "stop", name).CombinedOutput()
		require.NoError(t, err, "%s", out)
		select {
		case <-exited:
			require.NoError(t, waitErr, "it wrote: %q", shown.String())
		case <-time.After(waitFor):
			t.Fatal("mcp start --watch did not end after mcp stop")
		}
	}
}

// `mcp start --watch` with stdin on a terminal declares elicitation and
// asks a server's question there, field by field, even one that comes
// outside any call; the server gets the answer (accept with the fields, or
// decline). With stdin elsewhere it declares none.
func TestStartWatchAsksElicitationsOnItsTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	// Each server's stderr goes to a file, where it says what it got.
	got := func(name string) string { return filepath.Join(home, name+".stderr") }
	asker := func(name string) map[string]any {
		return local(name, "/bin/sh", "-c", `exec "$0" --ask-after-init 2>>"$1"`, ts, got(name))
	}
	config{t, filepath.Join(home, "config.json")}.write(cfg(asker("ts"), asker("no"), asker("quiet")), true)
	fileHas := func(path, want string) {
		t.Helper()
		require.Eventually(t, func() bool {
			b, _ := os.ReadFile(path)
			return string(b) == want
		}, waitFor, 10*time.Millisecond, "%s never held %q", path, want)
	}
	watch := func(name string, stdin *os.File, p *pty) func() {
		return startWatch(t, home, name, stdin, p.tty, p.tty, p.out)
	}

	p := openPTY(t)
	stop := watch("ts", p.tty, p)
	p.waitFor("Answer the form? [a]ccept, [d]ecline, [c]ancel: ")
	assert.Contains(t, p.out.String(), "Server ts asks (form):\r\n    Who is watching?\r\n    name   text, at least 1 character, required — Name: Who is asking\r\n")
	p.typeLine("a")
	p.waitFor("  name (text, at least 1 character, required) — Name: ")
	p.typeLine("")
	p.waitFor("  name is required\r\n")
	p.typeLine("Ada")
	p.waitFor("  color (one of red, green, blue, default green) — Color: ")
	p.typeLine("purple")
	p.waitFor(`  the answer does not fit the requested form: color: "purple" is not one of "red", "green", "blue"`)
	p.typeLine("blue")
	p.waitFor("  count (whole number from 1 to 10, default 3) — Count: ")
	p.typeLine("")
	fileHas(got("ts"), `answer after initialized: {"action":"accept","content":{"color":"blue","count":3,"name":"Ada"}}`+"\n")
	p.waitFor("Answered server ts: accepted.\r\n")
	stop()
	p.waitFor(`Stopped "ts".`)

	// Declining is an answer too.
	p = openPTY(t)
	stop = watch("no", p.tty, p)
	p.waitFor("Answer the form? [a]ccept, [d]ecline, [c]ancel: ")
	p.typeLine("d")
	fileHas(got("no"), `answer after initialized: {"action":"decline"}`+"\n")
	p.waitFor("Answered server no: declined.\r\n")
	stop()

	// No terminal on stdin: nothing to ask on, so no elicitation declared.
	p = openPTY(t)
	devNull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devNull.Close()
	stop = watch("quiet", devNull, p)
	p.waitFor(`Watching "quiet"`)
	fileHas(got("quiet"), "ask after initialized: the client declared no elicitation; not asking\n")
	stop()
	assert.NotContains(t, p.out.String(), "asks (form)")
}

// A server's elicitation during a call through serve is asked on the
// terminal of the command that made the call, field by field, with the
// types and defaults shown; a bad value is asked again. An answer from
// another command counts as well, and the question is then withdrawn.
func TestCallThroughServeAsksElicitationsOnItsTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(local("ts", ts, "--ask")), true)
	p := startServe(t, home)
	p.waitPhase("ts", "ready")

	call := func(tty *pty) (*exec.Cmd, *syncBuffer) {
		cmd := freecodeCmd(home, "mcp", "call", "mcp__ts__ask", `{"message":"Who are you?"}`)
		return cmd, startOnTerminal(t, tty, cmd)
	}

	tty := openPTY(t)
	cmd, out := call(tty)
	tty.waitFor("Answer the form? [a]ccept, [d]ecline, [c]ancel: ")
	shown := tty.out.String()
	assert.Contains(t, shown, "e1  server ts asks (form, waiting 0s, cancelled in 5m0s without an answer):\r\n    Who are you?\r\n")
	assert.Contains(t, shown, "Elicitation e1 (also `freecode mcp elicitations answer e1 ...` from another terminal):")
	tty.typeLine("a")
	tty.waitFor("  name (text, at least 1 character, required) — Name: ")
	tty.typeLine("Ada")
	tty.waitFor("  color (one of red, green, blue, default green) — Color: ")
	tty.typeLine("purple")
	tty.waitFor(`  the answer does not fit the requested form: color: "purple" is not one of "red", "green", "blue" (or their numbers, 1 to 3)`)
	tty.typeLine("3")
	tty.waitFor("  count (whole number from 1 to 10, default 3) — Count: ")
	tty.typeLine("")
	require.NoError(t, cmd.Wait())
	assert.Equal(t, `{"action":"accept","content":{"color":"blue","count":3,"name":"Ada"}}`+"\n", out.String())
	tty.waitFor("Accepted e1 of server ts: sent color, name; the default of count.")

	tty2 := openPTY(t)
	cmd, out = call(tty2)
	tty2.waitFor("[a]ccept, [d]ecline, [c]ancel: ")
	answer, err := freecodeCmd(home, "mcp", "elicitations", "answer", "e2", "decline").CombinedOutput()
	require.NoError(t, err, "%s", answer)
	assert.Equal(t, "Declined e2 of server ts.\n", string(answer))
	require.NoError(t, cmd.Wait())
	assert.Equal(t, `{"action":"decline"}`+"\n", out.String())
	// The event that withdraws the question and the call's end race.
	require.Eventually(t, func() bool {
		return strings.Contains(tty2.out.String(), "Answered from elsewhere: declined.") ||
			strings.Contains(tty2.out.String(), "The call ended; the question is withdrawn.")
	}, waitFor, 10*time.Millisecond, "the question was not withdrawn: %q", tty2.out.String())
}

// Without serve, `mcp call` on a terminal declares elicitation and asks
// the server's questions there; the answer is checked against the whole
// form and asked again if it does not fit.
func TestOneShotCallAsksElicitationsOnItsTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real processes")
	}
	ts := buildTestServer(t)
	home := shortHome(t)
	config{t, filepath.Join(home, "config.json")}.write(cfg(local("ts", ts, "--ask")), true)
	run := func(args string) (*pty, *exec.Cmd, *syncBuffer) {
		tty := openPTY(t)
		cmd := freecodeCmd(home, "mcp", "call", "mcp__ts__ask", args)
		return tty, cmd, startOnTerminal(t, tty, cmd)
	}

	tty, cmd, out := run(`{"message":"Who are you?"}`)
	tty.waitFor("Answer the form? [a]ccept, [d]ecline, [c]ancel: ")
	assert.Contains(t, tty.out.String(), "Server ts asks (form):\r\n    Who are you?\r\n    name   text, at least 1 character, required — Name: Who is asking\r\n")
	tty.typeLine("a")
	tty.waitFor("  name (text, at least 1 character, required) — Name: ")
	tty.typeLine("Ada")
	tty.waitFor("Color: ")
	tty.typeLine("")
	tty.waitFor("Count: ")
	tty.typeLine("2")
	require.NoError(t, cmd.Wait())
	assert.Equal(t, `{"action":"accept","content":{"color":"green","count":2,"name":"Ada"}}`+"\n", out.String())

	// A keyword beyond those the prompt shows (a pattern) is checked
	// too, and the field asked again.
	tty, cmd, out = run(`{"schema":{"type":"object","properties":{"code":{"type":"string","pattern":"^[0-9]+$"}}}}`)
	tty.waitFor("[a]ccept, [d]ecline, [c]ancel: ")
	tty.typeLine("a")
	tty.waitFor("  code (text): ")
	tty.typeLine("x1")
	tty.waitFor("  the answer does not fit the requested form: code: ")
	require.Eventually(t, func() bool { return strings.Count(tty.out.String(), "  code (text): ") == 2 }, waitFor, 10*time.Millisecond,
		"not asked again: %q", tty.out.String())
	tty.typeLine("12")
	require.NoError(t, cmd.Wait())
	assert.Equal(t, `{"action":"accept","content":{"code":"12"}}`+"\n", out.String())
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

// startOnTerminal starts cmd with tty as its stdin and stderr and returns
// its stdout. A failed test does not wait for cmd (an elicitation's or an
// approval's timeout): cleanup kills it if it still runs.
func startOnTerminal(t *testing.T, tty *pty, cmd *exec.Cmd) *syncBuffer {
	t.Helper()
	out := &syncBuffer{}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty.tty, out, tty.tty
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return out
}
