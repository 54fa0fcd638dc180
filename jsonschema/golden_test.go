package jsonschema

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/txtar"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden sections of testdata/resolve/*.txtar")

// TestGolden runs every testdata/resolve/*.txtar case. Sections:
//
//	input.json         the raw schema (required)
//	output.json        the resolved schema, indented (golden)
//	warnings.txt       Resolve's warnings, one a line, when it has any (golden)
//	error.txt          Resolve's error instead of output.json (golden)
//	good*.json         argument documents the validator must accept
//	bad*.json          argument documents it must reject, with
//	bad*.err           the exact error message (golden)
//
// With -update the golden sections are rewritten from the current behaviour.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "resolve", "*.txtar"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			require.NoError(t, err)
			sections := map[string][]byte{}
			var order []string
			for _, f := range ar.Files {
				sections[f.Name] = f.Data
				order = append(order, f.Name)
			}
			input, ok := sections["input.json"]
			require.True(t, ok, "missing input.json section")

			got := map[string]string{}
			out, warnings, err := Resolve(input)
			if err != nil {
				got["error.txt"] = err.Error() + "\n"
				require.Nil(t, warnings, "warnings beside an error")
			} else {
				var pretty bytes.Buffer
				require.NoError(t, json.Indent(&pretty, out, "", "  "))
				got["output.json"] = pretty.String() + "\n"
				if len(warnings) > 0 {
					var lines strings.Builder
					for _, w := range warnings {
						lines.WriteString(w.String() + "\n")
					}
					got["warnings.txt"] = lines.String()
				}
				again, againWarnings, err := Resolve(out)
				require.NoError(t, err, "resolving the output again")
				require.Empty(t, againWarnings, "the output is self-contained")
				require.JSONEq(t, string(out), string(again), "Resolve is not idempotent")

				v, err := Compile(out)
				require.NoError(t, err)
				for _, name := range order {
					switch {
					case strings.HasPrefix(name, "good") && strings.HasSuffix(name, ".json"):
						require.NoError(t, v.Validate(sections[name]), "%s must validate", name)
					case strings.HasPrefix(name, "bad") && strings.HasSuffix(name, ".json"):
						verr := v.Validate(sections[name])
						require.Error(t, verr, "%s must not validate", name)
						var ve *ValidationError
						require.ErrorAs(t, verr, &ve)
						got[strings.TrimSuffix(name, ".json")+".err"] = verr.Error() + "\n"
					}
				}
			}

			if *update {
				var files []txtar.File
				for _, f := range ar.Files {
					if golden(f.Name) {
						continue
					}
					files = append(files, f)
					if g, ok := got[strings.TrimSuffix(f.Name, ".json")+".err"]; ok {
						files = append(files, txtar.File{Name: strings.TrimSuffix(f.Name, ".json") + ".err", Data: []byte(g)})
					}
				}
				for _, name := range []string{"warnings.txt", "output.json", "error.txt"} {
					if g, ok := got[name]; ok {
						// Right after input.json: output.json, then warnings.txt.
						files = slices.Insert(files, 1, txtar.File{Name: name, Data: []byte(g)})
					}
				}
				ar.Files = files
				require.NoError(t, os.WriteFile(file, txtar.Format(ar), 0o644))
				return
			}
			for name, want := range sections {
				if golden(name) {
					g, ok := got[name]
					require.True(t, ok, "section %s is stale (run with -update)", name)
					require.Equal(t, string(want), g, "section %s", name)
				}
			}
			for name := range got {
				_, ok := sections[name]
				require.True(t, ok, "section %s missing (run with -update)", name)
			}
		})
	}
}

// golden reports whether a section of a testdata/resolve case is written
// by -update.
func golden(name string) bool {
	return name == "output.json" || name == "warnings.txt" || name == "error.txt" || strings.HasSuffix(name, ".err")
}
