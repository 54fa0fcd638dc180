package mcp

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var updateConvert = flag.Bool("update", false, "rewrite testdata/convert/*.golden")

func TestToolID(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"github", "create_issue", "mcp__github__create_issue"},
		{"my server", "do.it/now", "mcp__my_server__do_it_now"},
		{"fs", "read-file", "mcp__fs__read-file"},
		{"ünï", "日本", "mcp___n___tool_2dbd4664"},
		{"s", "a\x00b", "mcp__s__a_b"},
	} {
		require.Equal(t, tc.want, ToolID(tc.server, tc.tool), "%q %q", tc.server, tc.tool)
	}
}

func TestToolIDShortened(t *testing.T) {
	long := strings.Repeat("x", 80)
	id := ToolID("server", long)
	require.Len(t, id, MaxToolIDLen)
	require.Equal(t, id, ToolID("server", long), "stable")
	require.True(t, strings.HasPrefix(id, "mcp__server__xxx"))
	require.Regexp(t, `^[A-Za-z0-9_-]{55}_[0-9a-f]{8}$`, id)

	// Names that differ only past the cut, or only in characters that
	// sanitise alike, still get distinct ids.
	other := ToolID("server", long[:79]+"y")
	require.Len(t, other, MaxToolIDLen)
	require.NotEqual(t, id, other)
	require.NotEqual(t, ToolID("server", long+"."), ToolID("server", long+"/"))

	exact := strings.Repeat("a", MaxToolIDLen-len("mcp__s__"))
	require.Equal(t, "mcp__s__"+exact, ToolID("s", exact), "64 characters are kept as they are")
	require.Len(t, ToolID("s", exact+"a"), MaxToolIDLen)
}

func TestConvertTool(t *testing.T) {
	raw := json.RawMessage(`{
		"name": "search",
		"title": "Search the web",
		"description": "Searches.",
		"inputSchema": {
			"type": "object",
			"description": "Pick one of query or url.",
			"oneOf": [{"required": ["query"]}, {"required": ["url"]}],
			"properties": {"query": {"$ref": "#/$defs/q"}, "url": {"type": "string"}},
			"$defs": {"q": {"type": "string", "minLength": 1}}
		},
		"annotations": {"title": "Annotated title", "readOnlyHint": true, "openWorldHint": true}
	}`)
	tool, err := ConvertTool("web", raw)
	require.NoError(t, err)
	require.Equal(t, "mcp__web__search", tool.ID)
	require.Equal(t, "web", tool.Server)
	require.Equal(t, "search", tool.Name)
	require.Equal(t, "Search the web", tool.Title)
	require.Equal(t, "Searches.", tool.Description)
	require.True(t, tool.ReadOnly)
	require.JSONEq(t, `{"title": "Annotated title", "readOnlyHint": true, "openWorldHint": true}`, string(tool.Annotations))
	// The top-level oneOf and description are what a decoded mcp-go Tool loses.
	require.JSONEq(t, `{
		"type": "object",
		"description": "Pick one of query or url.",
		"oneOf": [{"required": ["query"]}, {"required": ["url"]}],
		"properties": {"query": {"type": "string", "minLength": 1}, "url": {"type": "string"}}
	}`, string(tool.InputSchema))
	require.NotNil(t, tool.Validator)
	require.NoError(t, tool.Validator.Validate(json.RawMessage(`{"query":"go"}`)))
	require.ErrorContains(t, tool.Validator.Validate(json.RawMessage(`{"query":"go","url":"u"}`)), "exactly one")
	require.ErrorContains(t, tool.Validator.Validate(json.RawMessage(`{"query":""}`)), "/query: minLength")
}

func TestConvertToolTitleFallback(t *testing.T) {
	tool, err := ConvertTool("s", json.RawMessage(`{"name":"t","annotations":{"title":"From annotations"}}`))
	require.NoError(t, err)
	require.Equal(t, "From annotations", tool.Title)
	require.JSONEq(t, `{"type":"object","properties":{}}`, string(tool.InputSchema), "absent schema")

	tool, err = ConvertTool("s", json.RawMessage(`{"name":"t","annotations":{"title":7,"readOnlyHint":true}}`))
	require.NoError(t, err)
	require.Empty(t, tool.Title)
	require.True(t, tool.ReadOnly, "a malformed title does not hide the hint")
}

func TestConvertToolReadOnly(t *testing.T) {
	for _, tc := range []struct {
		annotations string
		want        bool
	}{
		{`{"readOnlyHint": true}`, true},
		{`{"readOnlyHint":  true }`, true},
		{`{"readOnlyHint": false}`, false},
		{`{"readOnlyHint": "true"}`, false},
		{`{"readOnlyHint": 1}`, false},
		{`{"readOnlyHint": null}`, false},
		{`{"destructiveHint": false}`, false},
		{`{}`, false},
		{`null`, false},
		{`"readOnly"`, false},
		{``, false},
	} {
		raw := `{"name":"t","inputSchema":{"type":"object"}`
		if tc.annotations != "" {
			raw += `,"annotations":` + tc.annotations
		}
		tool, err := ConvertTool("s", json.RawMessage(raw+"}"))
		require.NoError(t, err, tc.annotations)
		require.Equal(t, tc.want, tool.ReadOnly, tc.annotations)
		if !strings.HasPrefix(tc.annotations, "{") {
			require.Nil(t, tool.Annotations, tc.annotations)
		}
	}
}

func TestConvertToolErrors(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`{"inputSchema":{}}`, `server "srv": tool has no name`},
		{`{"name":""}`, `tool has no name`},
		{`{"name":3}`, `parse tool`},
		{`[]`, `parse tool`},
		{`{"name":"cycle","inputSchema":{"properties":{"u":{"$ref":"https://example.com/u.json"}},"allOf":[{"$ref":"#"}]}}`, `tool "cycle": inputSchema: $ref "#": reference cycle`},
		{`{"name":"re","inputSchema":{"properties":{"u":{"pattern":"("}}}}`, `tool "re": inputSchema: compile schema`},
		{`{"name":"str","inputSchema":{"type":"string"}}`, `tool "str": inputSchema: schema "type" must be "object"`},
	} {
		_, err := ConvertTool("srv", json.RawMessage(tc.raw))
		require.ErrorContains(t, err, tc.want, tc.raw)
		var ce *ConvertError
		require.ErrorAs(t, err, &ce)
		require.Equal(t, "srv", ce.Server)
	}
}

// TestConvertToolWarnings: a tool whose schema has references that are not
// followed is kept, that part accepting any value, and says so.
func TestConvertToolWarnings(t *testing.T) {
	tool, err := ConvertTool("srv", json.RawMessage(`{"name":"fetch","inputSchema":{"type":"object",
		"properties":{"config":{"$ref":"https://example.com/s.json"},"u":{"$ref":"#/$defs/u"},"n":{"type":"integer"}},"required":["config"]}}`))
	require.NoError(t, err)
	require.Equal(t, "mcp__srv__fetch", tool.ID)
	require.JSONEq(t, `{"type":"object","properties":{"config":{},"u":{},"n":{"type":"integer"}},"required":["config"]}`, string(tool.InputSchema))
	var got []string
	for _, w := range ToolWarnings([]Tool{tool}) {
		got = append(got, w.String())
	}
	require.Equal(t, []string{
		`server "srv": tool "fetch": inputSchema: $ref "https://example.com/s.json" at #/properties/config is not fetched; that value accepts anything`,
		`server "srv": tool "fetch": inputSchema: $ref "#/$defs/u" at #/properties/u: no "$defs" at "#": reference target not found; that value accepts anything`,
	}, got)
	require.NoError(t, tool.Validator.Validate(json.RawMessage(`{"config":{"any":["shape"]},"u":1}`)))
	require.ErrorContains(t, tool.Validator.Validate(json.RawMessage(`{"config":1,"n":"1"}`)), "/n: got string, want integer")
	require.ErrorContains(t, tool.Validator.Validate(json.RawMessage(`{}`)), `missing property "config"`)

	plain, err := ConvertTool("srv", json.RawMessage(`{"name":"plain","inputSchema":{"type":"object"}}`))
	require.NoError(t, err)
	require.Nil(t, plain.Warnings)
}

func TestConvertTools(t *testing.T) {
	raws := []json.RawMessage{
		json.RawMessage(`{"name":"zeta"}`),
		json.RawMessage(`{"name":"a.b","description":"dotted"}`),
		json.RawMessage(`{"inputSchema":{}}`),
		json.RawMessage(`{"name":"alpha"}`),
		json.RawMessage(`{"name":"a_b","description":"underscored"}`),
		json.RawMessage(`{"name":"bad","inputSchema":{"$ref":"other.json"}}`),
		json.RawMessage(`{"name":"zeta"}`),
		json.RawMessage(`{"name":"ok"}`),
	}
	tools, errs := ConvertTools("s", raws)
	var ids []string
	for _, tool := range tools {
		ids = append(ids, tool.ID)
	}
	require.Equal(t, []string{"mcp__s__alpha", "mcp__s__bad", "mcp__s__ok"}, ids, "sorted, collisions dropped")
	require.Len(t, tools[1].Warnings, 1, "bad is kept, with a warning")
	require.Equal(t, []ToolWarning{{Server: "s", Tool: "bad", Warning: tools[1].Warnings[0]}}, ToolWarnings(tools))

	var msgs []string
	for _, err := range errs {
		var ce *ConvertError
		require.ErrorAs(t, err, &ce)
		msgs = append(msgs, fmt.Sprintf("%d %s", ce.Index, err))
	}
	require.Equal(t, []string{
		`0 server "s": tool "zeta": id "mcp__s__zeta" is also the id of tool "zeta" (#6); none of them is kept`,
		`1 server "s": tool "a.b": id "mcp__s__a_b" is also the id of tool "a_b" (#4); none of them is kept`,
		`2 server "s": tool #2: tool has no name`,
		`4 server "s": tool "a_b": id "mcp__s__a_b" is also the id of tool "a.b" (#1); none of them is kept`,
		`6 server "s": tool "zeta": id "mcp__s__zeta" is also the id of tool "zeta" (#0); none of them is kept`,
	}, msgs)
}

func TestConvertToolsEmpty(t *testing.T) {
	tools, errs := ConvertTools("s", nil)
	require.Empty(t, tools)
	require.Empty(t, errs)
}

// TestConvertGolden converts testdata/convert/*.json (each one tools/list
// result) and compares with the .golden file next to it; -update rewrites them.
func TestConvertGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "convert", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			var list struct {
				Tools []json.RawMessage `json:"tools"`
			}
			require.NoError(t, json.Unmarshal(data, &list))
			tools, errs := ConvertTools(strings.TrimSuffix(filepath.Base(file), ".json"), list.Tools)
			type view struct {
				ID, Name, Title, Description string
				ReadOnly                     bool
				InputSchema, Annotations     json.RawMessage
				Warnings                     []string `json:",omitempty"`
			}
			out := struct {
				Tools  []view
				Errors []string
			}{Tools: []view{}, Errors: []string{}}
			for _, tool := range tools {
				var warnings []string
				for _, w := range ToolWarnings([]Tool{tool}) {
					warnings = append(warnings, w.String())
				}
				out.Tools = append(out.Tools, view{tool.ID, tool.Name, tool.Title, tool.Description, tool.ReadOnly, tool.InputSchema, tool.Annotations, warnings})
			}
			for _, err := range errs {
				out.Errors = append(out.Errors, err.Error())
			}
			got, err := json.MarshalIndent(out, "", "  ")
			require.NoError(t, err)
			got = append(got, '\n')
			golden := strings.TrimSuffix(file, ".json") + ".golden"
			if *updateConvert {
				require.NoError(t, os.WriteFile(golden, got, 0o644))
				return
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err, "run with -update to create it")
			require.Equal(t, string(want), string(got))
		})
	}
}

func BenchmarkConvertTool(b *testing.B) {
	simple := json.RawMessage(`{"name":"read_file","description":"Read a file.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"Path."},"offset":{"type":"integer","minimum":0},"limit":{"type":"integer"}},"required":["path"]},"annotations":{"readOnlyHint":true}}`)
	var defs, props []string
	for i := range 20 {
		defs = append(defs, fmt.Sprintf(`"D%d":{"type":"object","description":"def %d","properties":{"v":{"$ref":"#/$defs/Leaf"},"next":{"$ref":"#/$defs/D%d"}},"required":["v"]}`, i, i, (i+1)%20))
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/D%d","description":"prop %d"}`, i, i, i))
	}
	defs = append(defs, `"Leaf":{"anyOf":[{"type":"string"},{"type":"number"}]}`)
	refHeavy := json.RawMessage(`{"name":"graph","inputSchema":{"type":"object","properties":{` + strings.Join(props, ",") +
		`},"allOf":[{"required":["p0"]},{"properties":{"extra":{"$ref":"#/$defs/Leaf"}}}],"$defs":{` + strings.Join(defs, ",") + `}}}`)
	for _, bc := range []struct {
		name string
		raw  json.RawMessage
	}{{"simple", simple}, {"refs", refHeavy}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ConvertTool("bench", bc.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestConvertToolReadsTheSizeHint(t *testing.T) {
	for meta, want := range map[string]int{
		`{"anthropic/maxResultSizeChars": 500000}`:                  500000,
		`{"anthropic/maxResultSizeChars": 0}`:                       0,
		`{"anthropic/maxResultSizeChars": -3}`:                      0,
		`{"anthropic/maxResultSizeChars": 1.5}`:                     0,
		`{"anthropic/maxResultSizeChars": "9"}`:                     0,
		`{"anthropic/maxResultSizeChars": 1e99}`:                    0,
		`{"anthropic/maxResultSizeChars": 99999999999999999999999}`: math.MaxInt32,
		`{"anthropic/maxResultSizeChars": 4294967296}`:              math.MaxInt32,
		`{"other": 1}`: 0,
		`[]`:           0,
		`null`:         0,
	} {
		tool, err := ConvertTool("s", json.RawMessage(`{"name":"t","inputSchema":{"type":"object"},"_meta":`+meta+`}`))
		require.NoError(t, err, meta)
		require.Equal(t, want, tool.MaxResultChars, meta)
	}
}
