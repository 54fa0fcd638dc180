package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/wire"
)

// promptForm is the form of the test server's ask tool.
const promptForm = `{"type":"object","required":["name"],"properties":{
	"name":{"type":"string","title":"Name","description":"Who is asking","minLength":1},
	"count":{"type":"integer","title":"Count","minimum":1,"maximum":10,"default":3},
	"color":{"type":"string","title":"Color","enum":["red","green","blue"],"default":"green"},
	"tags":{"type":"array","items":{"type":"string","enum":["a","b"]}}}}`

// A form is asked field by field: bad values and a missing required one
// are asked again with the reason; an empty line leaves a field to its
// default (or out); the answer holds only what was typed.
func TestFormPrompt(t *testing.T) {
	e := wire.Elicitation{ID: "e1", Server: "ts", Mode: "form", RequestedSchema: json.RawMessage(promptForm)}
	type step struct{ question, line, problem string }
	for name, tc := range map[string]struct {
		steps []step
		want  wire.ElicitationAnswer
	}{
		"accept": {steps: []step{
			{"Answer the form? [a]ccept, [d]ecline, [c]ancel: ", "maybe", "type a (accept), d (decline) or c (cancel)"},
			{"Answer the form? [a]ccept, [d]ecline, [c]ancel: ", "a", ""},
			{"  name (text, at least 1 character, required) — Name: ", "", "name is required"},
			{"  name (text, at least 1 character, required) — Name: ", "Ada\n", ""},
			{"  color (one of red, green, blue, default green) — Color: ", "purple", `the answer does not fit the requested form: color: "purple" is not one of "red", "green", "blue" (or their numbers, 1 to 3)`},
			{"  color (one of red, green, blue, default green) — Color: ", "", ""},
			{"  count (whole number from 1 to 10, default 3) — Count: ", "11", "the answer does not fit the requested form: count: at most 10, got 11"},
			{"  count (whole number from 1 to 10, default 3) — Count: ", "7", ""},
			{"  tags (any of a, b, separated by commas): ", "b, a", ""},
		}, want: wire.ElicitationAnswer{Action: "accept", Content: map[string]any{"name": "Ada", "count": 7.0, "tags": []any{"b", "a"}}}},
		"decline": {steps: []step{{"Answer the form? [a]ccept, [d]ecline, [c]ancel: ", "d", ""}}, want: wire.ElicitationAnswer{Action: "decline"}},
		"cancel":  {steps: []step{{"Answer the form? [a]ccept, [d]ecline, [c]ancel: ", "cancel", ""}}, want: wire.ElicitationAnswer{Action: "cancel"}},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := newFormPrompt(e)
			require.NoError(t, err)
			for i, st := range tc.steps {
				assert.Equal(t, st.question, p.question(), "step %d", i)
				problem, done := p.feed(st.line)
				assert.Equal(t, st.problem, problem, "step %d", i)
				assert.Equal(t, i == len(tc.steps)-1, done, "step %d", i)
			}
			assert.Equal(t, tc.want, p.answer())
		})
	}

	// A page to open: accepting sends no content, and the host is shown.
	p, err := newFormPrompt(wire.Elicitation{ID: "e2", Mode: "url", URL: "https://login.example.com/x", Host: "login.example.com"})
	require.NoError(t, err)
	assert.Equal(t, "Will you open the page on login.example.com yourself (FreeCode opens nothing)? [a]ccept, [d]ecline, [c]ancel: ", p.question())
	_, done := p.feed("a")
	assert.True(t, done)
	assert.Equal(t, wire.ElicitationAnswer{Action: "accept"}, p.answer())
}
