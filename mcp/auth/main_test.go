package auth_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/freecode/freecode/internal/testauth"
	"github.com/freecode/freecode/mcp/auth"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(refreshChild())
	}
	goleak.VerifyTestMain(m)
}

// logSink collects every log line of every verbosity.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		fmt.Fprintln(&s.buf, prefix, args)
	}, funcr.Options{Verbosity: 10})
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// syncBuffer is an io.Writer for Interaction.Out that tests may read.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// browser is the test's user agent: it GETs the authorization URL and
// follows the redirects to the loopback callback, as a browser whose
// user approves would. opens counts its uses.
type browser struct {
	hc    *http.Client
	opens atomic.Int32
}

func newBrowser(t *testing.T) *browser {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &browser{hc: &http.Client{Transport: tr}}
}

func (b *browser) open(ctx context.Context, authURL string) error {
	b.opens.Add(1)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the browser ended on HTTP %d", resp.StatusCode)
	}
	return nil
}

func (b *browser) interaction(out io.Writer) auth.Interaction {
	return auth.Interaction{Out: out, Open: b.open}
}

// env is one test's store, logger and clock.
type env struct {
	t     *testing.T
	dir   string
	store *auth.Store
	logs  *logSink
	clock *clock
	base  *http.Transport // the transport under the auth Transport
}

func newEnv(t *testing.T) *env {
	dir := t.TempDir() + "/auth"
	st, err := auth.OpenStore(dir)
	require.NoError(t, err)
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return &env{t: t, dir: dir, store: st, logs: &logSink{}, clock: &clock{}, base: base}
}

// clock is time.Now moved by an offset the test sets.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) advance(d time.Duration) { c.offset.Add(int64(d)) }

// client makes the auth.Client of server name at srv.
func (e *env) client(name string, srv *testauth.Server, mod func(*auth.Options)) *auth.Client {
	opts := auth.Options{Server: name, URL: srv.URL, Store: e.store, Logger: e.logs.logger(), Now: e.clock.now}
	if mod != nil {
		mod(&opts)
	}
	c, err := auth.New(opts)
	require.NoError(e.t, err)
	e.t.Cleanup(c.Close)
	return c
}

// call POSTs a JSON-RPC request through c's Transport.
func (e *env) call(c *auth.Client, url, method string) (int, error) {
	hc := &http.Client{Transport: c.Transport(e.base)}
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{"name":"write_file"}}`, method)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// login signs c in with a browser.
func (e *env) login(c *auth.Client) *auth.LoginResult {
	e.t.Helper()
	res, err := c.Login(context.Background(), newBrowser(e.t).interaction(io.Discard))
	require.NoError(e.t, err)
	return res
}
