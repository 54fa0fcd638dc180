package serve

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/wire"
)

// starts counts the lines of a --start-log file: one per start.
func starts(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return len(strings.Fields(string(b)))
}

// The end to end: serve with three on-demand real servers (the
// npm server-memory, server-filesystem and server-everything) whose
// manifests are stored starts no child process until a call; a call wakes
// exactly one; idle stops it; concurrent first calls start it once; a
// config change while asleep invalidates the manifest; the tool list
// (its version: what the gateway and a model are given) stays the same
// throughout, with no tools_changed. Each server runs under a shell that
// appends its pid to a file and then becomes the server (exec): the file
// counts the starts ($$$$ is the config's escape of the shell's $$).
func TestRunOnDemand(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real npm servers")
	}
	node := npmFile(t, ".bin/node")
	home := servetest.ShortHome(t)
	names := []string{"a", "b", "c"}
	scripts := map[string][]string{
		"a": {npmFile(t, "@modelcontextprotocol/server-memory/dist/index.js")},
		"b": {npmFile(t, "@modelcontextprotocol/server-filesystem/dist/index.js"), home},
		"c": {npmFile(t, "@modelcontextprotocol/server-everything/dist/index.js")},
	}
	logs := map[string]string{}
	config := func(extra map[string]string) map[string]any {
		var servers []map[string]any
		for _, n := range names {
			logs[n] = filepath.Join(home, n+".starts")
			argv := append([]string{"sh", "-c", `echo $$$$ >> "$0"; exec "$@"`, logs[n], node}, scripts[n]...)
			s := servetest.Local(n, argv...)
			env := map[string]string{"MEMORY_FILE_PATH": filepath.Join(home, "memory.jsonl")}
			if v, ok := extra[n]; ok {
				env["VERSION"] = v
			}
			s["env"] = env
			servers = append(servers, s)
		}
		conf := servetest.Config(servers...)
		m := conf["mcp"].(map[string]any)
		m["lifecycle"], m["idleTimeout"] = "on-demand", 400
		conf["permission"] = map[string]any{"allow": []string{"mcp"}}
		return conf
	}
	cfgFile := servetest.File{T: t, Path: filepath.Join(home, "config.json")}
	cfgFile.Write(config(nil), true)

	// The first serve learns each server once, then lets it sleep.
	d := start(t, options(home))
	for _, n := range names {
		d.WaitPhase(n, "idle")
		require.Equal(t, 1, starts(t, logs[n]), n)
	}
	manifests, err := filepath.Glob(filepath.Join(ManifestDir(home), "*.json"))
	require.NoError(t, err)
	require.Len(t, manifests, len(names), "one manifest per server")
	require.NoError(t, d.stop())

	// The next one starts nothing: every server is advertised from its
	// manifest.
	d = start(t, options(home))
	for _, n := range names {
		st := d.WaitPhase(n, "idle")
		require.NotZero(t, st.Tools, n)
		require.NotZero(t, st.ManifestStoredAt, n)
		require.Zero(t, st.PID, n)
	}
	events := d.Events()
	ctx := t.Context()
	before, err := d.Client.Tools(ctx, "jsonschema")
	require.NoError(t, err)
	for _, n := range names {
		require.Equal(t, 1, starts(t, logs[n]), "%s started without a call", n)
	}

	// Concurrent first calls of a start it once, and nothing else.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = d.Client.Call(ctx, "mcp__a__read_graph", json.RawMessage(`{}`))
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, 2, starts(t, logs["a"]))
	require.Equal(t, 1, starts(t, logs["b"]))
	require.Equal(t, 1, starts(t, logs["c"]))

	// Idle stops it.
	st := d.WaitPhase("a", "idle")
	require.NotZero(t, st.LastRunAt)

	// A config change while asleep: b's manifest no longer holds, b is
	// started once to learn it and sleeps again; a and c stay asleep.
	cfgFile.Write(config(map[string]string{"b": "2"}), true)
	d.WaitStatus("b learned again", func(s wire.Status) bool {
		b, _ := servetest.Server(s, "b")
		return b.Phase == wire.PhaseIdle && starts(t, logs["b"]) == 2
	})
	require.Equal(t, 2, starts(t, logs["a"]))
	require.Equal(t, 1, starts(t, logs["c"]))

	after, err := d.Client.Tools(ctx, "jsonschema")
	require.NoError(t, err)
	require.Equal(t, before.Version, after.Version, "the advertised tools never changed")

	// The event stream: one waking, of a, and no tools_changed.
	wakings := 0
	servetest.Until(t, events, "b idle again", func(ev api.Event) bool {
		switch ev.Kind {
		case wire.KindToolsChanged:
			t.Errorf("tools_changed: %s", ev.Data)
		case wire.KindServerWaking:
			var w wire.ServerWaking
			require.NoError(t, ev.Decode(&w))
			require.Equal(t, "a", w.Server)
			wakings++
		}
		var pc wire.PhaseChanged
		return ev.Kind == wire.KindPhaseChanged && ev.Decode(&pc) == nil && pc.Server == "b" && pc.Phase == wire.PhaseIdle
	})
	require.Equal(t, 1, wakings)

	// Nothing runs while all are idle: no server process is left.
	for _, n := range names {
		b, err := os.ReadFile(logs[n])
		require.NoError(t, err)
		for _, f := range strings.Fields(string(b)) {
			pid, err := strconv.Atoi(f)
			require.NoError(t, err)
			require.Eventually(t, func() bool { return !testutil.Alive(pid) }, waitFor, 10*time.Millisecond, "%s's process %d", n, pid)
		}
	}
}
