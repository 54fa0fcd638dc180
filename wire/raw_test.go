package wire

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// A descriptor's JSON is the server's object with FreeCode's fields over
// it: keys FreeCode does not know pass, keys it rewrites take its value,
// and a raw that is not an object adds nothing.
func TestMarshalOver(t *testing.T) {
	server := `{"name":"srv-name","uri":"file:///a","title":"T","_meta":{"vendor/x":{"deep":[1,2]},"anthropic/maxResultSizeChars":500000},
		"icons":[{"src":"https://x/i.png","mimeType":"image/png","sizes":["48x48"]}],"future":{"field":true},"big":123456789012345678901234567890}`
	r := Resource{URI: "freecode://srv/file:///a", Name: "srv__srv-name", Title: "T", Raw: json.RawMessage(server)}
	got, err := json.Marshal(r)
	require.NoError(t, err)
	require.JSONEq(t, `{"uri":"freecode://srv/file:///a","name":"srv__srv-name","title":"T",
		"_meta":{"vendor/x":{"deep":[1,2]},"anthropic/maxResultSizeChars":500000},
		"icons":[{"src":"https://x/i.png","mimeType":"image/png","sizes":["48x48"]}],"future":{"field":true},
		"big":123456789012345678901234567890}`, string(got))
	// FreeCode's fields first, in its order, then the server's others in
	// theirs; numbers byte for byte.
	require.Regexp(t, `^\{"uri":.*"name":.*"title":"T","_meta":.*"icons":.*"future":.*"big":123456789012345678901234567890\}$`, string(got))

	// Decoding keeps the whole object: a client re-encodes what it got.
	var back Resource
	require.NoError(t, json.Unmarshal(got, &back))
	require.Equal(t, r.URI, back.URI)
	again, err := json.Marshal(back)
	require.NoError(t, err)
	require.JSONEq(t, string(got), string(again))

	// An object of known keys alone keeps nothing: its fields say it all.
	var plain Tool
	require.NoError(t, json.Unmarshal([]byte(`{"id":"mcp__s__t","name":"t","readOnly":true,"inputSchema":{}}`), &plain))
	require.Nil(t, plain.Raw)
	require.Equal(t, "mcp__s__t", plain.ID)

	// A field FreeCode writes always wins, even when the server's is
	// richer; one it leaves out (omitempty) keeps the server's.
	tool := Tool{ID: "mcp__s__t", Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`),
		Raw: json.RawMessage(`{"name":"t","inputSchema":{"$ref":"#/$defs/x","$defs":{"x":{"type":"object"}}},"outputSchema":{"type":"object"},"description":"d"}`)}
	got, err = json.Marshal(tool)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"mcp__s__t","name":"t","readOnly":false,"inputSchema":{"type":"object"},"outputSchema":{"type":"object"},"description":"d"}`, string(got))

	// A server's key that differs from one of FreeCode's only in case
	// is left out, written or not: encoding/json would decode it as
	// FreeCode's field (the last one wins), so an "Id" could pass a tool
	// off as another server's. Not valid UTF-8: FreeCode's fields alone.
	spoof := Tool{ID: "mcp__s__t", Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`),
		Raw: json.RawMessage(`{"name":"t","Id":"mcp__other__rm","ReadOnly":true,"InputSchema":{"x":1},"TITLE":"t2","future":1}`)}
	got, err = json.Marshal(spoof)
	require.NoError(t, err)
	require.JSONEq(t, `{"id":"mcp__s__t","name":"t","readOnly":false,"inputSchema":{"type":"object"},"future":1}`, string(got))
	var decoded Tool
	require.NoError(t, json.Unmarshal(got, &decoded))
	require.Equal(t, "mcp__s__t", decoded.ID)
	require.False(t, decoded.ReadOnly)
	require.Empty(t, decoded.Title)
	bad := Tool{ID: "mcp__s__t", Name: "t", Raw: json.RawMessage("{\"x\":\"\xff\"}")}
	got, err = json.Marshal(bad)
	require.NoError(t, err)
	require.NotContains(t, string(got), `"x"`)

	// Decoding into a value that held a Raw keeps none of it.
	decoded.Raw = json.RawMessage(`{"stale":true}`)
	require.NoError(t, json.Unmarshal([]byte(`{"id":"a","name":"a","readOnly":false,"inputSchema":{}}`), &decoded))
	require.Nil(t, decoded.Raw)

	// A raw that is not an object, or not JSON at all: FreeCode's fields
	// alone.
	for _, bad := range []string{`[1,2]`, `"x"`, `{"a":`, `{"a":1} {"b":2}`, `null`} {
		tool.Raw = json.RawMessage(bad)
		got, err = json.Marshal(tool)
		require.NoError(t, err, bad)
		require.JSONEq(t, `{"id":"mcp__s__t","name":"t","readOnly":false,"inputSchema":{"type":"object"}}`, string(got), bad)
	}

	// A key the server repeats is written once.
	got, err = json.Marshal(PromptArgument{Name: "a", Raw: json.RawMessage(`{"name":"a","x":1,"x":2}`)})
	require.NoError(t, err)
	require.Equal(t, `{"name":"a","x":1}`, string(got))

	// Without Raw the JSON is what it always was.
	got, err = json.Marshal(Prompt{Name: "p", Arguments: []PromptArgument{{Name: "a", Required: true}}})
	require.NoError(t, err)
	require.Equal(t, `{"name":"p","arguments":[{"name":"a","required":true}]}`, string(got))
}
