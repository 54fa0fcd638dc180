package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	secretA = "SECRET-access-token-value"
	secretR = "SECRET-refresh-token-value"
	secretC = "SECRET-client-secret-value"
)

// TestFormattingHidesSecrets formats every type that holds a secret in
// every way a value gets printed or logged.
func TestFormattingHidesSecrets(t *testing.T) {
	cfg := Config{ClientID: "id", ClientSecret: secretC, Scopes: []string{"a"}, ClientMetadataURL: "https://x.example/c.json?key=" + secretC}
	creds := clientCreds{ID: "id", Secret: secretC, AuthMethod: authBasic, Kind: kindDynamic}
	rec := record{Server: "s", AccessToken: secretA, RefreshToken: secretR, Client: creds, Expiry: time.Now()}
	reg := clientRecord{Issuer: "https://as.example", ClientID: "id", ClientSecret: secretC}
	st, err := OpenStore(t.TempDir())
	require.NoError(t, err)
	c, err := New(Options{Server: "s", URL: "https://mcp.example/mcp?token=" + secretA, Config: cfg, Store: st})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	opts := Options{Server: "s", URL: "https://user:" + secretC + "@mcp.example/mcp?token=" + secretA, Config: cfg}

	values := map[string]any{
		"Config": cfg, "*Config": &cfg, "clientCreds": creds, "*clientCreds": &creds,
		"record": rec, "*record": &rec, "clientRecord": reg, "*clientRecord": &reg,
		"Client": c, "Options": opts, "*Options": &opts,
	}
	for name, v := range values {
		var out bytes.Buffer
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
		slog.New(slog.NewTextHandler(&out, nil)).Info("x", "v", v)
		slog.New(slog.NewJSONHandler(&out, nil)).Info("x", "v", v)
		funcr.New(func(p, a string) { out.WriteString(p + a + "\n") }, funcr.Options{}).Info("x", "v", v)
		if strings.Contains(name, "Config") {
			b, err := json.Marshal(v)
			require.NoError(t, err)
			out.Write(b)
		}
		for _, s := range []string{secretA, secretR, secretC} {
			assert.NotContains(t, out.String(), s, "%s printed a secret:\n%s", name, out.String())
		}
		assert.Contains(t, out.String(), "[redacted]", name)
	}
}

// TestErrorsHideSecrets: the error constructors keep secrets out.
func TestErrorsHideSecrets(t *testing.T) {
	inner := fmt.Errorf("Post \"https://as.example/token?code=%s\": dial %s", secretA, secretR)
	for _, err := range []error{
		wrap("refresh", inner, secretR),
		tokenError("refresh", inner, secretR),
		oauthErrorFrom("refresh", 400, []byte(`{"error":"invalid_grant","error_description":"token `+secretR+` is spent"}`), secretR),
		&scrubbedError{msg: scrub("see https://user:" + secretC + "@host/x?y=" + secretA)},
	} {
		for _, s := range []string{secretA, secretR, secretC} {
			assert.NotContains(t, err.Error(), s)
		}
	}
	assert.ErrorIs(t, wrap("x", fmt.Errorf("y: %w", os.ErrDeadlineExceeded)), os.ErrDeadlineExceeded, "wrap keeps the chain")
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		cfg  Config
		want []string
	}{
		{Config{}, nil},
		{Config{ClientID: "x", ClientSecret: "y", Grant: GrantClientCredentials, Scopes: []string{"a", "b:c"}, CallbackPort: 8765, ClientMetadataURL: "https://x.example/client.json"}, nil},
		{Config{Grant: "implicit"}, []string{`oauth.grant: "implicit" is not`}},
		{Config{Grant: GrantClientCredentials, ClientID: "x"}, []string{"oauth.grant: client_credentials needs oauth.clientId and oauth.clientSecret"}},
		{Config{ClientSecret: "y"}, []string{"oauth.clientSecret: set oauth.clientId too"}},
		{Config{CallbackPort: 70000}, []string{"oauth.callbackPort: 70000 is not a port"}},
		{Config{Scopes: []string{"a b"}}, []string{`oauth.scopes[0]: "a b" is not a scope token`}},
		{Config{ClientMetadataURL: "http://x.example/c.json"}, []string{"oauth.clientMetadataUrl: \"http://x.example/c.json\" is not an https URL"}},
		{Config{ClientMetadataURL: "https://x.example/"}, []string{"needs a path"}},
		{Config{ClientSecret: "y", CallbackPort: -1}, []string{"oauth.clientSecret", "oauth.callbackPort"}},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		if tc.want == nil {
			assert.NoError(t, err, "%v", tc.cfg)
			continue
		}
		require.Error(t, err, "%v", tc.cfg)
		for _, w := range tc.want {
			assert.Contains(t, err.Error(), w)
		}
		assert.NotContains(t, err.Error(), "\"y\"", "no secret in the message")
	}
}

func TestResourceCovers(t *testing.T) {
	server, _ := url.Parse("https://mcp.example.com/api/mcp")
	cases := map[string]bool{
		"https://mcp.example.com/api/mcp":      true,
		"https://mcp.example.com/api/mcp/":     true,
		"https://MCP.example.com:443/api/mcp":  true,
		"https://mcp.example.com":              true,
		"https://mcp.example.com/":             true,
		"https://mcp.example.com/api":          true,
		"https://mcp.example.com/ap":           false, // not a whole segment
		"https://mcp.example.com/api/mcp/x":    false,
		"https://mcp.example.com/other":        false,
		"http://mcp.example.com/api/mcp":       false,
		"https://mcp.example.com:8443/api/mcp": false,
		"https://evil.example.com/api/mcp":     false,
		"https://mcp.example.com/api/mcp?x=1":  false,
		"https://mcp.example.com/api/mcp#frag": false,
	}
	for r, want := range cases {
		ru, err := url.Parse(r)
		require.NoError(t, err)
		assert.Equal(t, want, resourceCovers(ru, server), r)
	}
}

func TestDiscoveryURLs(t *testing.T) {
	u, _ := url.Parse("https://mcp.example.com/api/mcp")
	assert.Equal(t, []string{
		"https://x.example/meta",
		"https://mcp.example.com/.well-known/oauth-protected-resource/api/mcp",
		"https://mcp.example.com/.well-known/oauth-protected-resource",
	}, prmURLs("https://x.example/meta", u))
	root, _ := url.Parse("https://mcp.example.com/")
	assert.Equal(t, []string{"https://mcp.example.com/.well-known/oauth-protected-resource"}, prmURLs("", root))

	iss, _ := url.Parse("https://auth.example.com/tenant1")
	assert.Equal(t, []string{
		"https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
		"https://auth.example.com/.well-known/openid-configuration/tenant1",
		"https://auth.example.com/tenant1/.well-known/openid-configuration",
	}, asmURLs(iss))
	iss, _ = url.Parse("https://auth.example.com")
	assert.Equal(t, []string{
		"https://auth.example.com/.well-known/oauth-authorization-server",
		"https://auth.example.com/.well-known/openid-configuration",
	}, asmURLs(iss))
}

func TestCheckIss(t *testing.T) {
	const issuer = "https://as.example"
	cases := []struct {
		iss        string
		advertised bool
		ok         bool
	}{
		{"", false, true},
		{"", true, false},
		{issuer, true, true},
		{issuer, false, true}, // RFC 9207 §2.4: compare when present; it matches
		{"https://as.example/", false, false},
		{"https://evil.example", false, false},
		{"https://evil.example", true, false},
	}
	for _, tc := range cases {
		err := checkIss(tc.iss, &oauthex.AuthServerMeta{Issuer: issuer, AuthorizationResponseIssParameterSupported: tc.advertised})
		assert.Equal(t, tc.ok, err == nil, "iss %q advertised %t: %v", tc.iss, tc.advertised, err)
	}
}

func TestChooseAuthMethod(t *testing.T) {
	cases := []struct {
		supported []string
		secret    bool
		want      string
	}{
		{nil, true, authBasic},
		{nil, false, authNone},
		{[]string{authPost, authBasic}, true, authBasic},
		{[]string{authPost}, true, authPost},
		{[]string{authNone}, true, authNone},
		{[]string{authNone, authBasic}, false, authNone},
		{[]string{authBasic}, false, ""},
		{[]string{"private_key_jwt"}, true, ""},
	}
	for _, tc := range cases {
		got, err := chooseAuthMethod(tc.supported, tc.secret)
		if tc.want == "" {
			assert.Error(t, err, "%v", tc.supported)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, "%v secret=%t", tc.supported, tc.secret)
	}
}

// TestStoreModes: 0700 directories (tightened if they were not), 0600
// files, no temporary file left behind.
func TestStoreModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "auth")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tokens"), 0o755))
	require.NoError(t, os.Chmod(dir, 0o755))
	s, err := OpenStore(dir)
	require.NoError(t, err)
	key, err := tokenKey("srv", "https://mcp.example/mcp")
	require.NoError(t, err)
	require.NoError(t, s.saveRecord(key, &record{Server: "srv", AccessToken: secretA}))
	require.NoError(t, s.saveClient(&clientRecord{Issuer: "https://as.example", ClientID: "c", ClientSecret: secretC}))
	unlock, err := s.lockTokens(t.Context(), key, funcr.New(func(string, string) {}, funcr.Options{}))
	require.NoError(t, err)
	unlock()

	for _, d := range []string{dir, filepath.Join(dir, "tokens"), filepath.Join(dir, "clients")} {
		st, err := os.Stat(d)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), d)
	}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), p)
		assert.NotContains(t, filepath.Base(p), ".tmp-", "a temporary file was left")
		return nil
	})
	require.NoError(t, err)

	// A file made readable by others is tightened when read.
	require.NoError(t, os.Chmod(s.tokenPath(key), 0o644))
	r, _, err := s.loadRecord(key)
	require.NoError(t, err)
	assert.Equal(t, secretA, r.AccessToken)
	st, err := os.Stat(s.tokenPath(key))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
}

// TestStoreAtomicWrites: a reader racing many writers always reads a
// whole file.
func TestStoreAtomicWrites(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	require.NoError(t, err)
	key, err := tokenKey("srv", "https://mcp.example/mcp")
	require.NoError(t, err)
	big := strings.Repeat("x", 64<<10) // several write(2)s if written in place
	require.NoError(t, s.saveRecord(key, &record{Server: "srv", AccessToken: big}))

	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readErr error
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			r, _, err := s.loadRecord(key)
			if err != nil || r == nil || len(r.AccessToken) != len(big) {
				readErr = fmt.Errorf("partial read: %v", err)
				return
			}
		}
	})
	for i := range 200 {
		require.NoError(t, s.saveRecord(key, &record{Server: "srv", AccessToken: big, Account: fmt.Sprint(i)}))
	}
	close(stop)
	wg.Wait()
	require.NoError(t, readErr)
}

// TestStoreDamagedFile names the file and what to do.
func TestStoreDamagedFile(t *testing.T) {
	s, err := OpenStore(t.TempDir())
	require.NoError(t, err)
	key, err := tokenKey("srv", "https://mcp.example/mcp")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(s.tokenPath(key), []byte(`{"version":1,"access_token":`), 0o600))
	_, _, err = s.loadRecord(key)
	require.Error(t, err)
	assert.Contains(t, err.Error(), s.tokenPath(key))
	assert.Contains(t, err.Error(), "remove it to start afresh")

	_, err = tokenKey("../etc", "https://x")
	assert.Error(t, err, "a server name that is no file name")
}

// TestCheckEndpoint is the endpoint policy, for a server on another
// machine and for one on this machine.
func TestCheckEndpoint(t *testing.T) {
	cases := []struct {
		url              string
		remote, loopback bool // allowed for such a server
	}{
		{"https://auth.example.com/token", true, true},
		{"https://10.1.2.3/token", true, true},
		{"http://auth.example.com/token", false, false},
		{"http://10.1.2.3/token", false, false},
		{"http://192.168.1.1/register", false, false},
		{"http://127.0.0.1:8080/register", false, true},
		{"https://127.0.0.1/register", false, true},
		{"http://127.9.9.9/", false, true},
		{"http://localhost:3001/", false, true},
		{"http://LOCALHOST./", false, true},
		{"http://tenant.localhost/", false, true},
		{"http://[::1]:9000/", false, true},
		{"http://[::ffff:127.0.0.1]/", false, true},
		{"https://[64:ff9b::7f00:1]/", false, true},
		{"https://[::127.0.0.1]/", false, true},
		{"https://[64:ff9b::a9fe:a9fe]/", false, false},
		{"https://[::169.254.169.254]/", false, false},
		{"http://169.254.169.254/latest/meta-data/", false, false},
		{"https://169.254.169.254/", false, false},
		{"http://[::ffff:169.254.169.254]/", false, false},
		{"https://[fe80::1]/", false, false},
		{"https://[fe80::1%25eth0]/", false, false},
		{"https://[fd00:ec2::254]/", false, false},
		{"https://100.100.100.200/", false, false},
		{"https://168.63.129.16/", false, false},
		{"http://metadata.google.internal/computeMetadata/v1/", false, false},
		{"https://metadata.google.internal./", false, false},
		{"https://0.0.0.0/", false, false},
		{"https://[::]/", false, false},
		{"ftp://auth.example.com/", false, false},
		{"/token", false, false},
	}
	for _, tc := range cases {
		u, err := url.Parse(tc.url)
		require.NoError(t, err, tc.url)
		for _, srv := range []struct {
			loopback bool
			want     bool
		}{{false, tc.remote}, {true, tc.loopback}} {
			err := checkEndpoint(u, srv.loopback)
			if srv.want {
				assert.NoError(t, err, "%s (loopback server: %t)", tc.url, srv.loopback)
			} else {
				assert.ErrorIs(t, err, ErrEndpointRefused, "%s (loopback server: %t)", tc.url, srv.loopback)
			}
		}
	}
}

// TestRedirectPolicy: which redirect hops the authorization's HTTP
// client follows.
func TestRedirectPolicy(t *testing.T) {
	req := func(ctx context.Context, method, raw string) *http.Request {
		r, err := http.NewRequestWithContext(ctx, method, raw, nil)
		require.NoError(t, err)
		return r
	}
	bg := context.Background()
	cases := []struct {
		name     string
		first    *http.Request
		to       string
		loopback bool
		want     string // "follow", "stop" (the 3xx is the answer), "refuse" (an error)
	}{
		{"metadata within the origin", req(bg, "GET", "https://as.example.com/.well-known/x"), "https://as.example.com/.well-known/y", false, "follow"},
		{"metadata to another origin", req(bg, "GET", "https://as.example.com/.well-known/x"), "https://other.example.com/x", false, "stop"},
		{"metadata from https to http", req(bg, "GET", "https://as.example.com/.well-known/x"), "http://as.example.com/x", false, "stop"},
		{"metadata to the cloud metadata service", req(bg, "GET", "https://as.example.com/.well-known/x"), "http://169.254.169.254/latest/meta-data/", false, "stop"},
		{"metadata to this machine", req(bg, "GET", "https://as.example.com/.well-known/x"), "http://127.0.0.1:8080/x", false, "stop"},
		{"loopback metadata within the origin", req(bg, "GET", "http://127.0.0.1:3001/.well-known/x"), "http://127.0.0.1:3001/y", true, "follow"},
		{"loopback metadata to another port", req(bg, "GET", "http://127.0.0.1:3001/.well-known/x"), "http://127.0.0.1:3002/y", true, "stop"},
		{"token within the origin", req(bg, "POST", "https://as.example.com/token"), "https://as.example.com/token2", false, "refuse"},
		{"token to http", req(bg, "POST", "https://as.example.com/token"), "http://as.example.com/token", false, "refuse"},
		{"registration to another origin", req(bg, "POST", "https://as.example.com/register"), "https://evil.example/register", false, "refuse"},
		{"probe within the origin", req(withProbe(bg), "POST", "https://mcp.example.com/mcp"), "https://mcp.example.com/mcp/", false, "follow"},
		{"probe to another origin", req(withProbe(bg), "POST", "https://mcp.example.com/mcp"), "https://evil.example/mcp", false, "refuse"},
		{"probe to the cloud metadata service", req(withProbe(bg), "POST", "http://127.0.0.1/mcp"), "http://169.254.169.254/", true, "refuse"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			next := req(bg, tc.first.Method, tc.to)
			err := redirectPolicy(next, []*http.Request{tc.first}, tc.loopback)
			switch tc.want {
			case "follow":
				assert.NoError(t, err)
			case "stop":
				assert.ErrorIs(t, err, http.ErrUseLastResponse)
			case "refuse":
				assert.ErrorIs(t, err, ErrRedirectRefused)
			}
		})
	}
	// Ten hops at most.
	first := req(bg, "GET", "https://as.example.com/a")
	via := []*http.Request{first}
	for range maxRedirects - 1 {
		via = append(via, req(bg, "GET", "https://as.example.com/a"))
	}
	assert.ErrorIs(t, redirectPolicy(req(bg, "GET", "https://as.example.com/b"), via, false), ErrRedirectRefused)
}

// TestGuardDial: a host name that resolves to a link-local or metadata
// address is refused at the dial, before a byte is sent.
func TestGuardDial(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() {
		_ = ln.Close()
		<-done
	})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	dialed := func(remote string) func(context.Context, string, string) (net.Conn, error) {
		return func(ctx context.Context, network, _ string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, ln.Addr().String())
			if err != nil {
				return nil, err
			}
			return fakeRemote{c, remote}, nil
		}
	}
	conn, err := guardDial(dialed("127.0.0.1:80"), true)(context.Background(), "tcp", "ok.example:80")
	require.NoError(t, err)
	_ = conn.Close()
	for _, bad := range []string{"169.254.169.254:80", "[fe80::1]:443", "[fd00:ec2::254]:80"} {
		_, err = guardDial(dialed(bad), false)(context.Background(), "tcp", "rebound.example:80")
		assert.ErrorIs(t, err, ErrEndpointRefused, bad)
	}
	// A name that resolves to this machine, for a server that is not on it.
	for _, lo := range []string{"127.0.0.1:443", "127.1.2.3:443", "[::1]:443", "[::ffff:127.0.0.1]:443", "[64:ff9b::7f00:1]:443", "[::127.0.0.1]:443"} {
		_, err = guardDial(dialed(lo), false)(context.Background(), "tcp", "rebound.example:443")
		assert.ErrorIs(t, err, ErrEndpointRefused, lo)
		conn, err := guardDial(dialed(lo), true)(context.Background(), "tcp", "dev.example:443")
		if assert.NoError(t, err, "%s for a server on loopback", lo) {
			_ = conn.Close()
		}
	}
	// http lands on loopback only, as checkEndpoint admits it for loopback
	// hosts only.
	plain := context.WithValue(context.Background(), dialForKey{}, dialFor{plainHTTP: true})
	_, err = guardDial(dialed("10.1.2.3:80"), true)(plain, "tcp", "localhost:80")
	assert.ErrorIs(t, err, ErrEndpointRefused)
	conn, err = guardDial(dialed("127.0.0.1:80"), true)(plain, "tcp", "localhost:80")
	require.NoError(t, err)
	_ = conn.Close()
	// The user's proxy may be on this machine; the endpoint behind it is
	// checked before the request. A metadata address is refused even so.
	proxied := context.WithValue(context.Background(), dialForKey{}, dialFor{proxy: "proxy.corp:3128"})
	conn, err = guardDial(dialed("127.0.0.1:3128"), false)(proxied, "tcp", "proxy.corp:3128")
	require.NoError(t, err)
	_ = conn.Close()
	_, err = guardDial(dialed("127.0.0.1:443"), false)(proxied, "tcp", "rebound.example:443")
	assert.ErrorIs(t, err, ErrEndpointRefused, "not the proxy's address")
	_, err = guardDial(dialed("169.254.169.254:3128"), false)(proxied, "tcp", "proxy.corp:3128")
	assert.ErrorIs(t, err, ErrEndpointRefused)
}

// TestAddrRefused: the endpoint policy for an address a host name
// resolved to.
func TestAddrRefused(t *testing.T) {
	cases := []struct {
		addr                   string
		remote, loopback, http bool // admitted: https for a remote server, https for a loopback one, http for a loopback one
	}{
		{"93.184.216.34", true, true, false},
		{"10.1.2.3", true, true, false},
		{"192.168.1.1", true, true, false},
		{"2001:db8::1", true, true, false},
		{"127.0.0.1", false, true, true},
		{"127.9.9.9", false, true, true},
		{"::1", false, true, true},
		{"::ffff:127.0.0.1", false, true, true},
		{"64:ff9b::7f00:1", false, true, true},
		{"::127.0.0.1", false, true, true},
		{"169.254.169.254", false, false, false},
		{"::ffff:169.254.169.254", false, false, false},
		{"64:ff9b::a9fe:a9fe", false, false, false},
		{"fe80::1", false, false, false},
		{"fd00:ec2::254", false, false, false},
		{"100.100.100.200", false, false, false},
		{"0.0.0.0", false, false, false},
		{"::", false, false, false},
	}
	for _, tc := range cases {
		a := netip.MustParseAddr(tc.addr)
		assert.Equal(t, tc.remote, addrRefused(a, false, false) == "", "%s, https, remote server", tc.addr)
		assert.Equal(t, tc.loopback, addrRefused(a, true, false) == "", "%s, https, loopback server", tc.addr)
		assert.Equal(t, tc.http, addrRefused(a, true, true) == "", "%s, http, loopback server", tc.addr)
		assert.NotEmpty(t, addrRefused(a, false, true), "%s, http, remote server", tc.addr)
	}
}

// fakeRemote is a connection that says it is connected to remote.
type fakeRemote struct {
	net.Conn
	remote string
}

func (f fakeRemote) RemoteAddr() net.Addr {
	a, _ := net.ResolveTCPAddr("tcp", f.remote)
	return a
}
