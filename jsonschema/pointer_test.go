package jsonschema

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// The examples of RFC 6901 §5, and the fragment forms of §6.
func TestPointerRFC6901(t *testing.T) {
	doc, err := Decode([]byte(`{"foo":["bar","baz"],"":0,"a/b":1,"c%d":2,"e^f":3,"g|h":4,"i\\j":5,"k\"l":6," ":7,"m~n":8}`))
	require.NoError(t, err)
	for ptr, want := range map[string]string{
		"":       `{"":0," ":7,"a/b":1,"c%d":2,"e^f":3,"foo":["bar","baz"],"g|h":4,"i\\j":5,"k\"l":6,"m~n":8}`,
		"/foo":   `["bar","baz"]`,
		"/foo/0": `"bar"`,
		"/":      `0`,
		"/a~1b":  `1`,
		"/c%d":   `2`,
		"/e^f":   `3`,
		"/g|h":   `4`,
		"/i\\j":  `5`,
		"/k\"l":  `6`,
		"/ ":     `7`,
		"/m~0n":  `8`,
	} {
		got, err := Pointer(doc, ptr)
		require.NoError(t, err, ptr)
		b, err := Encode(got)
		require.NoError(t, err)
		require.Equal(t, want, string(b), ptr)
	}
	for ref, want := range map[string]string{
		"#":       `{"":0," ":7`,
		"#/foo/1": `"baz"`,
		"#/a~1b":  `1`,
		"#/c%25d": `2`,
		"#/%20":   `7`,
		"#/m~0n":  `8`,
		"":        `{"":0," ":7`,
	} {
		got, err := Lookup(doc, ref)
		require.NoError(t, err, ref)
		b, _ := Encode(got)
		require.Contains(t, string(b), want, ref)
	}
}

func TestPointerAndLookupErrors(t *testing.T) {
	doc, err := Decode([]byte(`{"a":[{"b":1}],"s":"x"}`))
	require.NoError(t, err)
	for _, tc := range []struct {
		ref  string
		want string
		is   error
	}{
		{"#/nope", `$ref "#/nope": no "nope" at "#": reference target not found`, ErrUnresolvedRef},
		{"#/a/01", `$ref "#/a/01": no index "01" at "#/a"`, ErrUnresolvedRef},
		{"#/a/1", `no index "1" at "#/a"`, ErrUnresolvedRef},
		{"#/a/-", `no index "-" at "#/a"`, ErrUnresolvedRef},
		{"#/s/x", `"#/s" is not an object or array`, ErrUnresolvedRef},
		{"#/a~2", "bad JSON pointer escape", ErrUnresolvedRef},
		{"#/%zz", "bad percent-encoding", ErrUnresolvedRef},
		{"#anchor", `no anchor "anchor"`, ErrUnresolvedRef},
		{"other.json#/a", `$ref "other.json#/a"`, ErrExternalRef},
		{"https://example.com/s.json", "not fetched", ErrExternalRef},
	} {
		_, err := Lookup(doc, tc.ref)
		require.ErrorIs(t, err, tc.is, tc.ref)
		require.ErrorContains(t, err, tc.want, tc.ref)
	}
	_, err = Pointer(doc, "a")
	require.ErrorIs(t, err, ErrUnresolvedRef, "a pointer starts with /")
}
