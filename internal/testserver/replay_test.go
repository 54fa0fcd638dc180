package testserver

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Replay answers each request with the answer recorded for its method,
// under the request's own id, method-not-found for a method it has none
// for, and nothing for a notification, a line that is not a request, or a
// subscriptions/listen (held open, as a server holds the stream).
func TestReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "answers.json")
	require.NoError(t, os.WriteFile(file, []byte(`{
		"tools/call": {"result": {"content": [{"type": "text", "text": "hello"}], "_meta": {"k": 1}}},
		"prompts/list": {"error": {"code": -32601, "message": "no prompts"}}
	}`), 0o600))
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`not json`,
		`{"jsonrpc":"2.0","id":7,"method":"prompts/list"}`,
		`{"jsonrpc":"2.0","id":8,"method":"resources/list"}`,
		`{"jsonrpc":"2.0","id":9,"result":{}}`,
		`{"jsonrpc":"2.0","id":10,"method":"subscriptions/listen","params":{}}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	require.NoError(t, Replay(context.Background(), file, strings.NewReader(in), &out))
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3)
	require.JSONEq(t, `{"jsonrpc":"2.0","id":"a-1","result":{"content":[{"type":"text","text":"hello"}],"_meta":{"k":1}}}`, lines[0])
	require.JSONEq(t, `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"no prompts"}}`, lines[1])
	require.JSONEq(t, `{"jsonrpc":"2.0","id":8,"error":{"code":-32601,"message":"Method not found"}}`, lines[2])
}

// A file that is not a recording is an error that names it.
func TestReplayBadFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "answers.json")
	require.NoError(t, os.WriteFile(file, []byte(`[1]`), 0o600))
	err := Replay(context.Background(), file, strings.NewReader(""), &bytes.Buffer{})
	require.ErrorContains(t, err, file)
}
