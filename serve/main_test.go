package serve

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/api"
	"github.com/freecode/freecode/internal/servetest"
	"github.com/freecode/freecode/internal/testutil"
	"github.com/freecode/freecode/schema"
)

// These tests run the daemon (Run) in the test process against the test
// MCP server and a real npm server, and drive it through its API. The test
// binary is the reapers and the guard. What needs a serve process of its
// own (signals, SIGKILL, its memory, the command line) is tested in
// cmd/freecode.

// testServerBin is the mcp-testserver binary built by TestMain.
var testServerBin string

func TestMain(m *testing.M) { testutil.Main(m, &testServerBin) }

const waitFor = servetest.WaitFor

// daemon is one Run under test.
type daemon struct {
	servetest.API // its client is set once Run listens
	home          string
	log           *servetest.SyncBuffer
	cancel        context.CancelFunc
	done          chan error // Run's result; taken by stop

	stopOnce sync.Once
	err      error // Run's result, once stop returned
}

// options are the Options of a daemon for home: its config.json, no
// project, the built-ins working in home.
func options(home string) Options {
	return Options{
		Home:    home,
		Sources: schema.Sources{User: filepath.Join(home, "config.json"), Trust: schema.TrustPath(home)},
		Root:    home,
	}
}

// start runs Run(opts) until the test ends (or stop), waits for its API
// and, at cleanup, checks that Run returned nil and left no child process.
func start(t *testing.T, opts Options) *daemon {
	t.Helper()
	d := &daemon{API: servetest.API{T: t}, home: opts.Home, log: &servetest.SyncBuffer{}, done: make(chan error, 1)}
	opts.Logger = logr.FromSlogHandler(slog.NewTextHandler(d.log, &slog.HandlerOptions{Level: slog.Level(-1)}))
	ctx, cancel := context.WithCancel(context.Background())
	d.cancel = cancel
	go func() { d.done <- Run(ctx, opts) }()
	t.Cleanup(func() {
		if d.Client != nil {
			d.Client.Close()
		}
		assert.NoError(t, d.stop())
		assert.Eventually(t, func() bool { return len(testutil.Children(os.Getpid())) == 0 }, waitFor, 10*time.Millisecond,
			"child processes left: %v", testutil.Children(os.Getpid()))
		if t.Failed() {
			t.Logf("serve log:\n%s", d.log.String())
		}
	})
	ended := false
	require.Eventually(t, func() bool {
		select {
		case err := <-d.done:
			d.done <- err
			ended = true
			return true
		default:
		}
		c, err := api.Dial(api.SocketPath(opts.Home))
		if err != nil {
			return false
		}
		d.Client = c
		return true
	}, waitFor, 10*time.Millisecond)
	require.False(t, ended, "Run returned:\n%s", d.log.String())
	return d
}

// stop ends Run and returns its result; idempotent.
func (d *daemon) stop() error {
	d.stopOnce.Do(func() {
		d.cancel()
		select {
		case d.err = <-d.done:
		case <-time.After(waitFor):
			d.err = errors.New("Run did not return after its context ended")
		}
	})
	return d.err
}
