package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCallInputResolve(t *testing.T) {
	const schema = `{"type": "object", "properties": {
		"s": {"type": "string"}, "i": {"type": "integer"}, "n": {"type": "number"},
		"b": {"type": "boolean"}, "a": {"type": "array"}, "o": {"type": "object"},
		"either": {"type": ["integer", "string"]}, "maybe": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}}}`
	for _, tc := range []struct {
		words []string
		want  string // the JSON sent, or the error's text
	}{
		{[]string{"s=3", "i=-7", "n=2.5", "b=true"}, `{"b":true,"i":-7,"n":2.5,"s":"3"}`},
		{[]string{"a=[1, 2]", `o={"k": "v"}`, "untyped=x=y"}, `{"a":[1,2],"o":{"k":"v"},"untyped":"x=y"}`},
		{[]string{"either=5", "maybe=null", "s="}, `{"either":5,"maybe":null,"s":""}`},
		{[]string{"either=five", "maybe=false"}, `{"either":"five","maybe":false}`},
		{[]string{"n=1e3"}, `{"n":1000}`},
		{[]string{"i=2.5"}, `argument i: the tool's input schema wants an integer (3), not "2.5"`},
		{[]string{"n=NaN"}, `argument n: the tool's input schema wants a number (2.5), not "NaN"`},
		{[]string{"b=yes"}, `argument b: the tool's input schema wants true or false, not "yes"`},
		{[]string{"o=[1]"}, `wants a JSON object ({"k": "v"}), not "[1]"`},
		{[]string{"maybe=1"}, `wants null or true or false, not "1"`},
	} {
		in, err := parseCallInput(tc.words)
		if err != nil {
			t.Fatalf("%q: %v", tc.words, err)
		}
		got, err := in.resolve(json.RawMessage(schema))
		text := string(got)
		if err != nil {
			text = err.Error()
		}
		if !strings.Contains(text, tc.want) {
			t.Errorf("%q: got %s, want %s", tc.words, text, tc.want)
		}
	}
}

func TestParseCallInput(t *testing.T) {
	for _, tc := range []struct {
		words []string
		err   string // "" for none
	}{
		{nil, ""},
		{[]string{`{"a": 1}`}, ""},
		{[]string{` {"a": 1`}, "arguments are not valid JSON"},
		{[]string{"a=1", `{"b": 2}`}, "not both"},
		{[]string{"=1"}, `argument "=1" is not key=value`},
		{[]string{"a=1", "a=2"}, `argument "a" is given twice`},
	} {
		_, err := parseCallInput(tc.words)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: got %v, want %q", tc.words, err, tc.err)
		}
	}
}
