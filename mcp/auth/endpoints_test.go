package auth

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Server URLs of a server elsewhere and of one on this machine.
const (
	remoteServer   = "https://mcp.example.com/mcp"
	loopbackServer = "http://127.0.0.1:1/mcp"
)

// backend is an https server on loopback that counts the requests it
// answers. Its certificate is for example.com (and 127.0.0.1), which the
// transports of these tests ask for whatever host they dial, so that a
// request that reaches it succeeds.
type backend struct {
	srv  *httptest.Server
	hits atomic.Int32
}

func newBackend(t *testing.T) *backend {
	b := &backend{}
	b.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		b.hits.Add(1)
		_, _ = io.WriteString(w, "{}")
	}))
	// A refused dial closes the connection before the TLS handshake.
	b.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	b.srv.StartTLS()
	t.Cleanup(b.srv.Close)
	return b
}

// port is the backend's port.
func (b *backend) port() string {
	u, _ := url.Parse(b.srv.URL)
	return u.Port()
}

// transport trusts the backend's certificate.
func (b *backend) transport() *http.Transport {
	tr := b.srv.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.ServerName = "example.com"
	return tr
}

// connectProxy is an HTTP proxy on loopback that tunnels every CONNECT,
// whatever its target, to one address (as a proxy that resolved the
// target's name to it would), and records the targets it was asked for.
type connectProxy struct {
	srv *httptest.Server
	to  string

	mu      sync.Mutex
	targets []string
	conns   []net.Conn
	wg      sync.WaitGroup
}

func newConnectProxy(t *testing.T, to string) *connectProxy {
	p := &connectProxy{to: to}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		p.srv.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *connectProxy) url() *url.URL {
	u, _ := url.Parse(p.srv.URL)
	return u
}

func (p *connectProxy) asked() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.targets...)
}

func (p *connectProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	p.targets = append(p.targets, r.Host)
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.to)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	down, rw, err := w.(http.Hijacker).Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	p.mu.Lock()
	p.conns = append(p.conns, up, down)
	p.mu.Unlock()
	_, _ = io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n")
	pipe := func(dst net.Conn, src io.Reader) {
		defer p.wg.Done()
		_, _ = io.Copy(dst, src)
		_ = up.Close()
		_ = down.Close()
	}
	p.wg.Add(2)
	go pipe(up, rw.Reader)
	go pipe(down, up)
}

// guardClient is a Client of the server at serverURL whose requests go
// over rt.
func guardClient(t *testing.T, serverURL string, rt http.RoundTripper) *Client {
	st, err := OpenStore(t.TempDir())
	require.NoError(t, err)
	c, err := New(Options{Server: "s", URL: serverURL, Store: st, HTTPClient: &http.Client{Transport: rt}})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// get sends a GET to raw over the Client's HTTP client (the endpoint
// checks of URLs, a layer above, are not part of it).
func get(t *testing.T, c *Client, raw string) (int, error) {
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, raw, nil)
	require.NoError(t, err)
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// TestLoopbackNameRefused: a host name that resolves to a loopback
// address ("localhost" here; a name under the server's control in an
// attack) is refused for a server that is not on loopback, and reached
// for one that is.
func TestLoopbackNameRefused(t *testing.T) {
	b := newBackend(t)
	target := "https://localhost:" + b.port() + "/.well-known/oauth-authorization-server"

	remote := guardClient(t, remoteServer, b.transport())
	_, err := get(t, remote, target)
	require.ErrorIs(t, err, ErrEndpointRefused)
	assert.Contains(t, err.Error(), "loopback")
	assert.Zero(t, b.hits.Load(), "the request reached the port on this machine")

	local := guardClient(t, loopbackServer, b.transport())
	status, err := get(t, local, target)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
}

// TestProxyChecksTarget: through a proxy, which resolves the name itself,
// the endpoint's host is resolved and checked before the request goes
// out; an endpoint the policy admits still goes through the proxy.
func TestProxyChecksTarget(t *testing.T) {
	b := newBackend(t)
	p := newConnectProxy(t, b.srv.Listener.Addr().String())
	tr := b.transport()
	tr.Proxy = http.ProxyURL(p.url())

	remote := guardClient(t, remoteServer, tr)
	_, err := get(t, remote, "https://localhost:"+b.port()+"/.well-known/oauth-authorization-server")
	require.ErrorIs(t, err, ErrEndpointRefused)
	assert.Empty(t, p.asked(), "the proxy was asked to connect to this machine")
	assert.Zero(t, b.hits.Load())

	// An ordinary https endpoint (an address of TEST-NET-1, which the
	// proxy takes to the backend) goes through the proxy, itself on
	// loopback.
	status, err := get(t, remote, "https://192.0.2.10/.well-known/oauth-authorization-server")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, []string{"192.0.2.10:443"}, p.asked())
	assert.Equal(t, int32(1), b.hits.Load())
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestForeignTransportChecksTarget: a transport whose dial FreeCode cannot
// guard (another RoundTripper; an *http.Transport that dials TLS itself)
// gets the endpoint's host resolved and checked before each request.
func TestForeignTransportChecksTarget(t *testing.T) {
	b := newBackend(t)
	target := "https://localhost:" + b.port() + "/.well-known/oauth-authorization-server"
	cases := map[string]func(t *testing.T) http.RoundTripper{
		"RoundTripper": func(t *testing.T) http.RoundTripper {
			tr := b.transport()
			t.Cleanup(tr.CloseIdleConnections)
			return roundTripperFunc(tr.RoundTrip)
		},
		"DialTLSContext": func(t *testing.T) http.RoundTripper {
			tr := b.transport()
			cfg := tr.TLSClientConfig.Clone()
			tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				return (&tls.Dialer{Config: cfg}).DialContext(ctx, network, addr)
			}
			return tr
		},
	}
	for name, rt := range cases {
		t.Run(name, func(t *testing.T) {
			before := b.hits.Load()
			remote := guardClient(t, remoteServer, rt(t))
			_, err := get(t, remote, target)
			require.ErrorIs(t, err, ErrEndpointRefused)
			assert.Equal(t, before, b.hits.Load(), "the request reached the port on this machine")

			local := guardClient(t, loopbackServer, rt(t))
			status, err := get(t, local, target)
			require.NoError(t, err)
			assert.Equal(t, http.StatusOK, status)
		})
	}
}
