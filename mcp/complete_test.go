package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testserver"
	"github.com/freecode/freecode/wire"
)

func promptRef(name string) wire.CompletionRef {
	return wire.CompletionRef{Type: wire.RefPrompt, Name: name}
}

// A prompt's and a template's arguments complete as the server says, the
// other arguments' values reaching it as context; what is wrong with the
// request is said before anything is sent.
func TestComplete(t *testing.T) {
	s := connect(t, localServer("c", "--prompts", "--resources", "1", "--completions"))
	ctx := context.Background()
	require.True(t, s.Offers().Completions)

	c, err := s.Complete(ctx, promptRef("greet"), wire.CompletionArgument{Name: "name", Value: "Al"}, nil)
	require.NoError(t, err)
	require.Equal(t, wire.Completion{Server: "c", Values: []string{"Alan", "Alonzo"}}, c)
	b, err := json.Marshal(c)
	require.NoError(t, err)
	require.JSONEq(t, `{"server":"c","values":["Alan","Alonzo"]}`, string(b))

	c, err = s.Complete(ctx, promptRef("greet"), wire.CompletionArgument{Name: "greeting"}, map[string]string{"name": "Ada"})
	require.NoError(t, err)
	require.Equal(t, testserver.CompletionGreetingsAda(), c.Values, "the context reached the server")

	c, err = s.Complete(ctx, wire.CompletionRef{Type: wire.RefResource, URI: testserver.ItemTemplate}, wire.CompletionArgument{Name: "id", Value: "1"}, nil)
	require.NoError(t, err)
	require.Equal(t, wire.Completion{Server: "c", Values: []string{"1", "10", "11"}, Total: 5, HasMore: true}, c)

	c, err = s.Complete(ctx, promptRef("greet"), wire.CompletionArgument{Name: "name", Value: "Zed"}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{}, c.Values, "no match: none, never null")

	for _, tc := range []struct {
		ref  wire.CompletionRef
		arg  string
		is   error
		want string
	}{
		{promptRef("gret"), "name", ErrUnknownPrompt, `server "c" has no prompt "gret" to complete an argument of`},
		{promptRef("greet"), "nmae", ErrPromptArguments, `server "c": prompt "greet" has no argument "nmae"; its arguments: name (required), greeting`},
		{promptRef(""), "name", ErrInvalidParams, `server "c": completion/complete: the prompt's name is empty`},
		{wire.CompletionRef{Type: "ref/tool", Name: "x"}, "name", ErrInvalidParams, `server "c": completion/complete: the ref's type is "ref/tool" (want "ref/prompt" or "ref/resource")`},
		{wire.CompletionRef{Type: wire.RefResource}, "id", ErrInvalidParams, `server "c": completion/complete: the resource template's URI is empty`},
		{promptRef("greet"), "", ErrInvalidParams, `server "c": completion/complete of prompt "greet": the argument's name is empty`},
	} {
		_, err := s.Complete(ctx, tc.ref, wire.CompletionArgument{Name: tc.arg}, nil)
		require.ErrorIs(t, err, tc.is)
		require.EqualError(t, err, tc.want)
	}
	// The server's own refusal is kept as its cause.
	_, err = s.Complete(ctx, wire.CompletionRef{Type: wire.RefResource, URI: "test://other/{x}"}, wire.CompletionArgument{Name: "x"}, nil)
	require.ErrorContains(t, err, `server "c": completion/complete of resource template "test://other/{x}" argument "x": `)
	require.ErrorContains(t, err, `nothing to complete of "test://other/{x}" argument "x"`)
}

// A server without the completions capability is not asked.
func TestCompleteNotOffered(t *testing.T) {
	s := connect(t, localServer("p", "--prompts", "--call-log", t.TempDir()+"/calls"))
	require.False(t, s.Offers().Completions)
	_, err := s.Complete(context.Background(), promptRef("greet"), wire.CompletionArgument{Name: "name"}, nil)
	require.ErrorIs(t, err, ErrNotOffered)
	require.EqualError(t, err, `server "p" offers no completions (its initialize result does not declare them), so completion/complete of prompt "greet" argument "name" is not sent`)
}

// What a server sends is bounded: at most MaxCompletionValues values, a
// value too long left out, and what was left out counted and said
// (HasMore); terminal escapes pass on as the server sent them (a client
// that shows them neutralises them).
func TestCompleteBounded(t *testing.T) {
	s := connect(t, localServer("h", "--prompts", "--completions"))
	ctx := context.Background()
	name := func(v string) wire.CompletionArgument { return wire.CompletionArgument{Name: "name", Value: v} }

	c, err := s.Complete(ctx, promptRef("greet"), name(testserver.CompleteMany), nil)
	require.NoError(t, err)
	require.Len(t, c.Values, MaxCompletionValues)
	require.Equal(t, "v099", c.Values[99])
	require.Equal(t, 50, c.Dropped)
	require.Equal(t, 150, c.Total)
	require.True(t, c.HasMore)

	c, err = s.Complete(ctx, promptRef("greet"), name(testserver.CompleteLong), nil)
	require.NoError(t, err)
	require.Equal(t, []string{"short", "after"}, c.Values)
	require.Equal(t, 1, c.Dropped)
	require.True(t, c.HasMore)

	c, err = s.Complete(ctx, promptRef("greet"), name(testserver.CompleteEvil), nil)
	require.NoError(t, err)
	require.Equal(t, []string{testserver.EvilText}, c.Values)
}

// decodeCompletion keeps within its bounds whatever a result holds.
func TestDecodeCompletion(t *testing.T) {
	many := make([]string, 0, 2000)
	for range 2000 {
		many = append(many, `"`+strings.Repeat("y", 900)+`"`)
	}
	for _, tc := range []struct {
		name, raw string
		want      wire.Completion
		err       string
	}{
		{"plain", `{"completion":{"values":["a","b"],"total":2,"hasMore":false}}`, wire.Completion{Values: []string{"a", "b"}, Total: 2}, ""},
		{"meta and more keys", `{"completion":{"values":["a"],"x-later":{"k":1}},"_meta":{"m":true}}`,
			wire.Completion{Values: []string{"a"}, Meta: json.RawMessage(`{"m":true}`), Raw: json.RawMessage(`{"x-later":{"k":1}}`)}, ""},
		{"not strings and empty", `{"completion":{"values":["a",1,null,"",{"v":"b"}]}}`, wire.Completion{Values: []string{"a"}, Dropped: 4, HasMore: true}, ""},
		{"total below what was sent", `{"completion":{"values":["a","b"],"total":1}}`, wire.Completion{Values: []string{"a", "b"}}, ""},
		{"negative total", `{"completion":{"values":["a"],"total":-5}}`, wire.Completion{Values: []string{"a"}}, ""},
		{"negative total beside other keys", `{"completion":{"values":["a"],"total":-5,"hasMore":true,"x":1}}`,
			wire.Completion{Values: []string{"a"}, HasMore: true, Raw: json.RawMessage(`{"x":1}`)}, ""},
		{"total above", `{"completion":{"values":["a"],"total":7}}`, wire.Completion{Values: []string{"a"}, Total: 7, HasMore: true}, ""},
		{"no completion", `{}`, wire.Completion{}, "completion is not an object: missing"},
		{"no values", `{"completion":{"total":3}}`, wire.Completion{}, "completion.values is not an array: missing"},
		{"values not an array", `{"completion":{"values":"abc"}}`, wire.Completion{}, `completion.values is not an array: "abc"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := decodeCompletion(json.RawMessage(tc.raw))
			if tc.err != "" {
				require.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, c)
		})
	}
	// All together: at most MaxCompletionBytes of values.
	c, err := decodeCompletion(json.RawMessage(`{"completion":{"values":[` + strings.Join(many, ",") + `]}}`))
	require.NoError(t, err)
	require.Len(t, c.Values, MaxCompletionBytes/900)
	require.Equal(t, 2000-len(c.Values), c.Dropped)
	require.True(t, c.HasMore)
}
