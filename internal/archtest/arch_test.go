// Package archtest checks that the import graph is the architecture: each
// package of the module imports only the packages of ours that the package
// map (docs/architecture.md, "Package map") allows it, and only package
// mcp — plus test infrastructure — speaks mcp-go.
package archtest

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
)

const module = "github.com/freecode/freecode"

// allowed lists, per package (relative to the module; "" is the root),
// the packages of ours it may import in its non-test files. "*" allows
// any. Leaf utilities (leaves) may be imported by every package.
var allowed = map[string][]string{
	"":                      nil,
	"jsonschema":            nil,
	"internal/procguard":    nil,
	"internal/termtext":     nil,
	"registry/event":        nil,
	"registry":              {"jsonschema", "registry/event"},
	"registry/orchestrator": {"registry", "jsonschema"},
	"registry/defs":         {"registry", "registry/event", "jsonschema"},
	"mcp/auth":              nil,
	"mcp":                   {"jsonschema", "mcp/auth"},
	"bridge":                {"mcp", "registry"},
	"schema":                {""},
	"schema/hosts":          {"schema"},
	"wire":                  nil,
	"api":                   {"wire", "registry", "registry/event", "registry/defs", "registry/orchestrator"},
	"controller":            {"wire", "schema", "mcp", "bridge", "registry", "registry/event"},
	"serve":                 {"api", "wire", "controller", "internal/procguard", "mcp", "mcp/auth", "registry", "registry/defs", "registry/event", "registry/orchestrator", "schema"},
	"gateway":               {"api", "wire", "mcp", "registry", "registry/defs", "schema", "serve"},
	// Composition roots, tools and test infrastructure.
	"cmd/freecode":                 {"*"},
	"cmd/conformance-client":       {"mcp", "mcp/auth", "controller", "bridge", "schema"},
	"cmd/freecode-bench":           {"*"},
	"cmd/mcp-testserver":           {"*"},
	"internal/bench":               {"*"},
	"internal/testserver":          {"*"},
	"internal/testutil":            {"*"},
	"internal/testauth":            {"*"},
	"internal/archtest":            {"*"},
	"internal/servetest":           {"*"},
	"registry/internal/benchtools": {"*"},
}

// leaves import nothing of ours and may be imported by anyone.
var leaves = []string{"internal/termtext"}

// mcpGo lists the packages that may import mcp-go: the protocol package,
// and tools and test infrastructure that measure or imitate it.
var mcpGo = []string{"mcp", "cmd/mcp-testserver", "internal/testserver", "internal/bench", "internal/archtest"}

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = testutil.RepoRoot()
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func TestImportGraphIsTheArchitecture(t *testing.T) {
	pkgs := listPackages(t)
	require.NotEmpty(t, pkgs)
	for _, p := range pkgs {
		name, _ := rel(p.ImportPath)
		allow, known := allowed[name]
		if !known {
			t.Errorf("package %q is not in the package map: add it to docs/architecture.md (Package map) and to this test", name)
			continue
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, "github.com/mark3labs/mcp-go") && !slices.Contains(mcpGo, name) {
				t.Errorf("%s imports %s: only package mcp speaks mcp-go", name, imp)
			}
			dep, ours := rel(imp)
			if !ours || slices.Contains(allow, "*") || slices.Contains(allow, dep) || slices.Contains(leaves, dep) {
				continue
			}
			t.Errorf("%s imports %s, which the package map does not allow (allowed: %v)", displayName(name), displayName(dep), allow)
		}
	}
}

func displayName(rel string) string {
	if rel == "" {
		return "the root package"
	}
	return rel
}
