package archtest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validMap is a small package map in the form of docs/architecture.md; the
// table after the next heading is not part of it.
const validMap = "# Architecture\n\n" +
	"## Package map\n\n" +
	"Intro.\n\n" +
	"| package | owns | imports of ours |\n" +
	"| --- | --- | --- |\n" +
	"| `.` | the root | — |\n" +
	"| `schema` | config | `.` |\n" +
	"| `mcp` | protocol, an escaped \\| pipe | schema, internal/termtext |\n" +
	"| `internal/termtext` | text | — |\n" +
	"| `internal/testutil` | helpers | anything |\n" +
	"| `cmd/tool` | a tool | * |\n" +
	"\n" +
	"- **Leaves**: `internal/termtext`. Anyone may\n" +
	"  import it.\n" +
	"- **mcp-go**: `mcp`,\n" +
	"  `internal/testutil`. Only these speak `github.com/mark3labs/mcp-go`.\n" +
	"- **Test and bench support**: `internal/testutil`. Never in a product.\n" +
	"\n" +
	"## Next\n\n" +
	"| package | owns | imports of ours |\n" +
	"| --- | --- | --- |\n" +
	"| `ignored` | x | not, parsed, here |\n"

func TestParseMap(t *testing.T) {
	m, err := ParseMap(validMap)
	require.NoError(t, err)
	assert.Equal(t, Map{
		Rows: map[string]Row{
			".":                 {Line: 9},
			"schema":            {Imports: []string{"."}, Line: 10},
			"mcp":               {Imports: []string{"schema", "internal/termtext"}, Line: 11},
			"internal/termtext": {Line: 12},
			"internal/testutil": {Any: true, Line: 13},
			"cmd/tool":          {Any: true, Line: 14},
		},
		Leaves:  []string{"internal/termtext"},
		MCPGo:   []string{"mcp", "internal/testutil"},
		Support: []string{"internal/testutil"},
	}, m)

	assert.True(t, m.Allows("mcp", "schema"))
	assert.True(t, m.Allows("schema", "internal/termtext"), "a leaf needs no arrow")
	assert.False(t, m.Allows("schema", "mcp"))
	assert.False(t, m.Allows("nothere", "schema"), "a package without a row imports nothing")
	assert.True(t, m.Allows("cmd/tool", "internal/testutil"))
	assert.True(t, m.Product("mcp"))
	assert.False(t, m.Product("cmd/tool"))
	assert.False(t, m.Product("internal/testutil"))
}

func TestParseMapRejectsMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"no section", "## Package map", "## Packages", `no "## Package map" section`},
		{"no table", "| package | owns | imports of ours |\n| --- | --- | --- |\n| `.`", "| `.`", "header"},
		{"section without a table", "| package", "\n## Other\n\n| package", "has no table"},
		{"wrong header", "| package | owns | imports of ours |\n| ---", "| package | owns | imports |\n| ---", "the table's header is"},
		{"no separator", "| --- | --- | --- |\n| `.`", "| `.`", "not followed by a | --- | --- | --- | line"},
		{"two cells", "| `schema` | config | `.` |", "| `schema` | `.` |", "line 10: a row has 2 cells"},
		{"an unescaped pipe", "an escaped \\| pipe", "a bare | pipe", "line 11: a row has 4 cells"},
		{"bare package cell", "| `schema` | config", "| schema | config", `the package cell "schema" is not one package path`},
		{"two packages in a cell", "| `schema` | config", "| `schema`, `mcp` | config", "is not one package path"},
		{"duplicate row", "| `cmd/tool` | a tool | * |", "| `cmd/tool` | a tool | * |\n| `schema` | again | — |", "package schema has a second row (the first is on line 10)"},
		{"empty imports", "| config | `.` |", "| config |  |", "the imports cell of schema is empty"},
		{"none mixed with a package", "| config | `.` |", "| config | —, `.` |", `holds "—", which is not a package path`},
		{"anything mixed with a package", "| a tool | * |", "| a tool | anything, schema |", `holds "anything"`},
		{"prose in the imports", "| config | `.` |", "| config | the root package (`config.cue`) |", "which is not a package path"},
		{"self import", "| config | `.` |", "| config | schema |", "names itself"},
		{"twice", "| schema, internal/termtext |", "| schema, schema |", "names schema twice"},
		{"import without a row", "| config | `.` |", "| config | registry |", "schema may import registry, which has no row"},
		{"missing rule", "- **Leaves**: `internal/termtext`. Anyone may\n  import it.\n", "", `no rule "Leaves"`},
		{"unknown rule", "- **Leaves**:", "- **Leaf**:", `unknown rule "Leaf"`},
		{"rule given twice", "- **Test and bench support**: `internal/testutil`. Never in a product.\n",
			"- **Test and bench support**: `internal/testutil`. Never in a product.\n- **Leaves**: `.`. Again.\n", `rule "Leaves" is given twice (first on line 16)`},
		{"rule without a colon", "- **Leaves**:", "- **Leaves** are", "does not start with - **<rule>**:"},
		{"rule without a full stop", "`internal/testutil`. Never in a product.", "`internal/testutil`", "does not end with a full stop"},
		{"rule item not in backquotes", "- **Leaves**: `internal/termtext`.", "- **Leaves**: internal/termtext.", `"internal/termtext" is not a package path in backquotes`},
		{"rule names a package without a row", "- **Leaves**: `internal/termtext`.", "- **Leaves**: `internal/termtext`, `wire`.", `rule "Leaves" names wire, which has no row`},
		{"leaf with imports", "| `internal/termtext` | text | — |", "| `internal/termtext` | text | schema |", "internal/termtext is a leaf but its row allows imports"},
		{"product that imports anything", "| config | `.` |", "| config | anything |", "schema is a product package and may not import anything"},
		{"product that imports support", "| config | `.` |", "| config | internal/testutil |", "schema is a product package and may not import internal/testutil"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := strings.Replace(validMap, tc.old, tc.new, 1)
			require.NotEqual(t, validMap, doc, "the case changes nothing")
			_, err := ParseMap(doc)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestGraphProblems(t *testing.T) {
	m, err := ParseMap(validMap)
	require.NoError(t, err)
	pkgs := []pkg{
		{ImportPath: module},
		{ImportPath: module + "/schema", Imports: []string{module, module + "/internal/termtext", "strings", mcpGo + "/mcp"}},
		{ImportPath: module + "/mcp", Imports: []string{module + "/schema", mcpGo + "/server", module + "/internal/testutil"}},
		{ImportPath: module + "/internal/testutil", Imports: []string{module + "/mcp", mcpGo}},
		{ImportPath: module + "/internal/termtext", Imports: []string{module + "/schema"}},
		{ImportPath: module + "/cmd/other", Imports: []string{mcpGo + "/mcp"}},
	}
	assert.Equal(t, []string{
		"docs/architecture.md:14: the package map names cmd/tool, which is not a package of the module",
		"internal/termtext imports schema, which its row (docs/architecture.md:12) does not allow",
		`mcp imports internal/testutil: a product package imports no test or bench support (the "Test and bench support" rule of docs/architecture.md)`,
		`package cmd/other has no row in the package map: add one to docs/architecture.md ("## Package map")`,
		`schema imports github.com/mark3labs/mcp-go/mcp: only package mcp speaks mcp-go (the "mcp-go" rule of docs/architecture.md)`,
	}, graphProblems(m, pkgs))
}
