package gateway

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
)

// Hosts no one here wrote, run as they are installed: the MCP Inspector's
// CLI and Claude Code's `mcp add` and `mcp list`. Each starts the gateway
// (this test binary, as childEnv makes it) itself.

// TestInspectorCLIListsAndCalls: `mcp-inspector --cli <gateway> --method
// tools/list` lists the server's tools; tools/call calls one.
func TestInspectorCLIListsAndCalls(t *testing.T) {
	inspector := npmFile(t, ".bin/mcp-inspector")
	node := npmFile(t, ".bin/node")
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t")))
	run := func(args ...string) []byte {
		t.Helper()
		args = append([]string{inspector, "--cli", "-e", childEnv + "=1", "-e", childHome + "=" + home, os.Args[0]}, args...)
		cmd := exec.Command(node, args...)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "inspector: %s", stderr.String())
		return out
	}
	var list struct {
		Tools []struct {
			Name        string         `json:"name"`
			Annotations map[string]any `json:"annotations"`
		} `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(run("--method", "tools/list"), &list))
	names := []string{}
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	assert.Contains(t, names, "t__echo")

	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	require.NoError(t, json.Unmarshal(run("--method", "tools/call", "--tool-name", "t__echo", "--tool-arg", "text=inspected"), &res))
	require.Len(t, res.Content, 1)
	assert.Equal(t, "inspected", res.Content[0].Text)
}

// TestClaudeCodeReportsTheGatewayConnected: `claude mcp add fc -- <gateway>`
// then `claude mcp list` says "fc: … - ✔ Connected".
func TestClaudeCodeReportsTheGatewayConnected(t *testing.T) {
	claude := npmFile(t, ".bin/claude")
	node := npmFile(t, ".bin/node")
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t")))
	userHome := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(claude, args...)
		cmd.Dir = userHome
		cmd.Env = append(os.Environ(), "HOME="+userHome, "PATH="+filepath.Dir(node)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "claude %v: %s", args, out)
		return string(out)
	}
	run("mcp", "add", "fc", "-e", childEnv+"=1", "-e", childHome+"="+home, "--", os.Args[0])
	out := run("mcp", "list")
	assert.Regexp(t, `(?m)^fc: .* - ✔ Connected$`, out)
}

// readPID reads a pid file once it is written.
func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	}, waitFor, 10*time.Millisecond, "%s is not written", path)
	return pid
}

// treeHost starts the SDK host over stdio with a gateway whose server
// leaves a grandchild in its group and a helper in a session of its own;
// it returns the host, the gateway and the server's tree.
func treeHost(t *testing.T) (*host, testutil.Proc, []testutil.Proc) {
	t.Helper()
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("g", "--grandchild", "--grandchild-pid-file", filepath.Join(home, "g.gc"),
		"--setsid-helper", filepath.Join(home, "g.helper"), "--pid-file", filepath.Join(home, "g.pid"))))
	h := startHost(t, home, hostOptions{})
	require.Contains(t, h.tools(), "g__echo")
	var tree []testutil.Proc
	for _, f := range []string{"g.pid", "g.gc", "g.helper"} {
		p, ok := testutil.Identify(readPID(t, filepath.Join(home, f)))
		require.True(t, ok, "%s runs", f)
		tree = append(tree, p)
		t.Cleanup(p.Kill)
	}
	var gw testutil.Proc
	for _, c := range testutil.Children(h.cmd.Process.Pid) {
		if p, ok := testutil.Identify(c); ok && testutil.Comm(c) == testutil.Comm(os.Getpid()) {
			gw = p
		}
	}
	require.NotZero(t, gw.PID, "the gateway under the host")
	t.Cleanup(gw.Kill)
	return h, gw, tree
}

func requireGone(t *testing.T, procs []testutil.Proc, what string) {
	t.Helper()
	require.Eventually(t, func() bool { return !slices.ContainsFunc(procs, testutil.Proc.Alive) }, waitFor, 10*time.Millisecond,
		"%s: still running", what)
}

// TestNoOrphansWhenTheGatewayIsKilled: SIGKILL of the gateway leaves
// nothing its server started.
func TestNoOrphansWhenTheGatewayIsKilled(t *testing.T) {
	_, gw, tree := treeHost(t)
	require.NoError(t, syscall.Kill(gw.PID, syscall.SIGKILL))
	requireGone(t, tree, "after SIGKILL of the gateway")
}

// TestNoOrphansWhenTheHostGroupIsKilled: SIGKILL of the host's whole
// process group (the host and the gateway it started) leaves nothing.
func TestNoOrphansWhenTheHostGroupIsKilled(t *testing.T) {
	h, gw, tree := treeHost(t)
	require.NoError(t, syscall.Kill(-h.cmd.Process.Pid, syscall.SIGKILL))
	requireGone(t, append(tree, gw), "after SIGKILL of the host's group")
}

// TestClosingStdinEndsTheGateway: the gateway runs its servers as long as
// its host keeps stdin open; closed, it stops them and exits 0.
func TestClosingStdinEndsTheGateway(t *testing.T) {
	home := servetest.ShortHome(t)
	writeConfig(t, home, servetest.Config(testServer("t", "--pid-file", filepath.Join(home, "t.pid"))))
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1", childHome+"="+home)
	stderr := &servetest.SyncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	server, ok := testutil.Identify(readPID(t, filepath.Join(home, "t.pid")))
	require.True(t, ok)
	t.Cleanup(server.Kill)
	require.NoError(t, stdin.Close())
	select {
	case err := <-done:
		require.NoError(t, err, "gateway:\n%s", stderr.String())
	case <-time.After(waitFor):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the gateway did not end with its stdin:\n%s", stderr.String())
	}
	assert.False(t, server.Alive(), "the server outlived the gateway")
	assert.Contains(t, stderr.String(), "stopping every server")
}
