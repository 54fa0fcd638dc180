package mcp

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
)

func maskOf(written, expanded string) *urlMask {
	srv := remoteServer("x", expanded, TransportAuto)
	srv.Shown = written
	return newURLMask(srv)
}

func TestURLMask(t *testing.T) {
	const secret = "tok-S3CRET-9f2e"
	for _, tc := range []struct {
		name, written, expanded string
		secrets                 []string // none may remain
		msgs                    []error  // what package mcp turns into text
		want                    []string // each masked message contains one of these
	}{{
		name:     "path",
		written:  "https://mcp.example.com/v1/${TOKEN}/mcp",
		expanded: "https://mcp.example.com/v1/" + secret + "/mcp",
		secrets:  []string{secret},
		msgs: []error{
			&url.Error{Op: "Post", URL: "https://mcp.example.com/v1/" + secret + "/mcp", Err: io.ErrUnexpectedEOF},
			// An SSE message endpoint under the same path, with a session id.
			fmt.Errorf("send: %w", &url.Error{Op: "Post", URL: "https://mcp.example.com/v1/" + secret + "/message?sessionId=abc", Err: io.EOF}),
			// A body that echoes the path, percent-encoded.
			errors.New("request failed with status 404: no route for /v1/" + url.PathEscape(secret) + "/mcp"),
			errors.New("redirected to /v1/" + secret + "/mcp/"),
		},
		want: []string{"https://mcp.example.com/v1/${TOKEN}/mcp", "https://mcp.example.com/v1/${TOKEN}/message", "/v1/${TOKEN}/mcp", "/v1/${TOKEN}/mcp/"},
	}, {
		name:     "host and port",
		written:  "https://${HOST}:${PORT}/mcp",
		expanded: "https://" + secret + ".example.com:8443/mcp",
		secrets:  []string{secret},
		msgs: []error{
			&url.Error{Op: "Post", URL: "https://" + secret + ".example.com:8443/mcp", Err: errors.New("dial tcp: lookup " + secret + ".example.com on 127.0.0.53:53: no such host")},
		},
		want: []string{`Post "https://${HOST}:${PORT}/mcp": dial tcp: lookup ${HOST} on 127.0.0.53:53: no such host`},
	}, {
		name:     "userinfo and query",
		written:  "https://me:${PASS}@h.example/mcp?key=${KEY}&v=2",
		expanded: "https://me:" + secret + "@h.example/mcp?key=" + secret + "K&v=2",
		secrets:  []string{secret},
		msgs: []error{
			// net/http shows a password as ***.
			&url.Error{Op: "Get", URL: "https://me:***@h.example/mcp?key=" + secret + "K&v=2", Err: io.EOF},
			errors.New("bad key " + secret + "K"),
		},
		want: []string{`Get "https://h.example/mcp": EOF`, "bad key ${KEY}"},
	}, {
		name:     "two references side by side",
		written:  "https://h.example/${A}${B}/mcp",
		expanded: "https://h.example/" + secret + "/mcp",
		secrets:  []string{secret},
		msgs:     []error{errors.New("GET https://h.example/" + secret + "/mcp failed"), errors.New("path /" + secret + "/mcp")},
		want:     []string{"GET https://h.example/${A}${B}/mcp failed", "path /${A}${B}/mcp"},
	}, {
		name:     "default and $$",
		written:  "https://h.example/$${x}/${T:-" + secret + "}/mcp",
		expanded: "https://h.example/${x}/" + secret + "/mcp",
		secrets:  []string{"/" + secret},
		msgs:     []error{errors.New("at /${x}/" + secret + "/mcp")},
		want:     []string{"at /$${x}/${T:-" + secret + "}/mcp"},
	}, {
		name:     "not written: expanded, without userinfo and query",
		expanded: "http://user:pw@127.0.0.1:1/mcp?key=" + secret,
		secrets:  []string{secret, "pw"},
		msgs:     []error{&url.Error{Op: "Post", URL: "http://user:pw@127.0.0.1:1/mcp?key=" + secret, Err: io.EOF}},
		want:     []string{`Post "http://127.0.0.1:1/mcp": EOF`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := maskOf(tc.written, tc.expanded)
			require.Len(t, tc.want, len(tc.msgs))
			for i, e := range tc.msgs {
				got := m.err(e)
				t.Log(got)
				for _, s := range tc.secrets {
					require.NotContains(t, got, s)
				}
				require.Contains(t, got, tc.want[i])
			}
			for _, s := range tc.secrets {
				require.NotContains(t, m.configured(), s)
			}
		})
	}
}

// The URL shown is the one written, byte for byte: net/url would escape
// the braces of ${VAR}, and userinfo and query are left out.
func TestURLMaskShowsURLAsWritten(t *testing.T) {
	for written, shown := range map[string]string{
		"https://h.example/v1/${TOKEN}/mcp":         "https://h.example/v1/${TOKEN}/mcp",
		"https://${HOST}/mcp":                       "https://${HOST}/mcp",
		"https://u:${P}@h.example/mcp?key=${K}":     "https://h.example/mcp",
		"https://h.example/mcp?key=literal-api-key": "https://h.example/mcp",
	} {
		require.Equal(t, shown, maskOf(written, "https://h.example/x").configured(), written)
	}
}

func TestRefValues(t *testing.T) {
	require.Equal(t, []refValue{{"${A}", "a1"}, {"${B:-x}", "b/2"}},
		refValues("https://${A}.example/p/${B:-x}/q", "https://a1.example/p/b/2/q"))
	require.Nil(t, refValues("https://h/p", "https://h/p"), "no references")
	require.Nil(t, refValues("https://h/${A}/p", "https://other/a/p"), "no match")
	require.Equal(t, []refValue{{"${A}", "v"}}, refValues("https://h/${bad name}/${A}", "https://h/${bad name}/v"),
		"a malformed reference is text")
}

// isVarRef follows the config's grammar of references (schema.Expand).
func TestIsVarRef(t *testing.T) {
	for ref, want := range map[string]bool{
		"${TOKEN}": true, "${_t0}": true, "${T:-default}": true, "${T:-}": true, "${T:-a:-b}": true,
		"${}": false, "${0T}": false, "${bad name}": false, "${T-x}": false, "${T:-${U}": false,
		"$T": false, "${T": false, "T}": false, "${é}": false,
	} {
		require.Equal(t, want, isVarRef(ref), ref)
	}
}

// A remote session's log shows nothing of the expanded URL: not in
// messages, values, errors, or values attached with WithValues.
func TestMaskLogger(t *testing.T) {
	const secret = "tok-S3CRET-9f2e"
	var mu sync.Mutex
	var lines []string
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 2})
	m := maskOf("https://h.example/v1/${TOKEN}/mcp", "https://h.example/v1/"+secret+"/mcp")
	log = maskLogger(log, m).WithValues("endpoint", "https://h.example/v1/"+secret+"/message").WithName("n")
	u, _ := url.Parse("https://h.example/v1/" + secret + "/mcp")
	log.V(1).Info("GET https://h.example/v1/"+secret+"/mcp", "url", u, "urls", []string{"/v1/" + secret}, "n", 3, "d", time.Second)
	log.Error(&url.Error{Op: "Post", URL: u.String(), Err: io.EOF}, "failed", "err", errors.New(secret+" refused"))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, lines, 2)
	all := strings.Join(lines, "\n")
	t.Log(all)
	require.NotContains(t, all, secret)
	require.Contains(t, all, `"url"="https://h.example/v1/${TOKEN}/mcp"`)
	require.Contains(t, all, `"n"=3`)
	require.Contains(t, all, `"d"="1s"`)
	require.Contains(t, all, `Post \"https://h.example/v1/${TOKEN}/mcp\": EOF`)
}
