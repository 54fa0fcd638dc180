package registry_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The registry's rooms import only what ARCHITECTURE.md's map lets them:
// the store knows jsonschema and the bus, the orchestrator and the
// definitions know the store, and the bus knows nothing of ours.
func TestRoomImports(t *testing.T) {
	const module = "github.com/freecode/freecode/"
	for dir, allowed := range map[string][]string{
		".":            {"jsonschema", "registry/event"},
		"event":        {},
		"orchestrator": {"registry"},
		"defs":         {"registry", "registry/event", "jsonschema"},
	} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		require.NotEmpty(t, files, dir)
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ImportsOnly)
			require.NoError(t, err)
			for _, imp := range f.Imports {
				path, err := strconv.Unquote(imp.Path.Value)
				require.NoError(t, err)
				if ours, ok := strings.CutPrefix(path, module); ok {
					require.Contains(t, allowed, ours, "%s imports %s", file, path)
				}
			}
		}
	}
}
