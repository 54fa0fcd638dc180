package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/freecode/freecode/internal/testutil"
)

const (
	module = "github.com/freecode/freecode"
	mcpGo  = "github.com/mark3labs/mcp-go"
	// mapDoc is the page that holds the package map, relative to the
	// repository root.
	mapDoc = "docs/architecture.md"
)

type pkg struct {
	ImportPath string
	// Imports are the imports of the package's non-test files.
	Imports []string
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

// rel names an import path of ours as the package map does: relative to
// the module, the root as ".".
func rel(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	return strings.CutPrefix(path, module+"/")
}

func loadMap(t *testing.T) Map {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testutil.RepoRoot(), mapDoc))
	require.NoError(t, err)
	m, err := ParseMap(string(doc))
	require.NoError(t, err, "%s: the package map does not parse", mapDoc)
	return m
}

func TestImportGraphIsTheArchitecture(t *testing.T) {
	m := loadMap(t)
	pkgs := listPackages(t)
	require.NotEmpty(t, pkgs)
	for _, problem := range graphProblems(m, pkgs) {
		t.Error(problem)
	}
}

// graphProblems compares the package map with the module's packages: a
// package without a row, a row without a package, an import its row does
// not allow, a product package importing test or bench support, mcp-go
// imported outside the packages that may speak it.
func graphProblems(m Map, pkgs []pkg) []string {
	var out []string
	exists := map[string]bool{}
	for _, p := range pkgs {
		name, _ := rel(p.ImportPath)
		exists[name] = true
		row, known := m.Rows[name]
		if !known {
			out = append(out, fmt.Sprintf("package %s has no row in the package map: add one to %s (%q)", name, mapDoc, MapHeading))
			continue
		}
		for _, imp := range p.Imports {
			if (imp == mcpGo || strings.HasPrefix(imp, mcpGo+"/")) && !slices.Contains(m.MCPGo, name) {
				out = append(out, fmt.Sprintf("%s imports %s: only package mcp speaks mcp-go (the %q rule of %s)", name, imp, ruleMCPGo, mapDoc))
			}
			dep, ours := rel(imp)
			switch {
			case !ours:
			case m.Product(name) && slices.Contains(m.Support, dep):
				out = append(out, fmt.Sprintf("%s imports %s: a product package imports no test or bench support (the %q rule of %s)", name, dep, ruleSupport, mapDoc))
			case !m.Allows(name, dep):
				out = append(out, fmt.Sprintf("%s imports %s, which its row (%s:%d) does not allow", name, dep, mapDoc, row.Line))
			}
		}
	}
	for name, row := range m.Rows {
		if !exists[name] {
			out = append(out, fmt.Sprintf("%s:%d: the package map names %s, which is not a package of the module", mapDoc, row.Line, name))
		}
	}
	slices.Sort(out)
	return out
}
