package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script from the actual output")

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"freecode": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, os.LookupEnv)) },
	})
}

// TestScripts runs the command-line sessions in testdata/script: each one is
// what a user types and what they should see.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("FREECODE_HOME", filepath.Join(env.WorkDir, "home"))
			return nil
		},
	})
}
