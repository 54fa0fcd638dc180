package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/freecode/freecode/internal/procguard"
)

var update = flag.Bool("update", false, "rewrite the expected output in testdata/script from the actual output")

func TestMain(m *testing.M) {
	// serve and the one-shot commands run their servers under reapers:
	// this same binary.
	procguard.Dispatch()
	if os.Getenv("GORACE") == "" {
		// A race-enabled reaper otherwise sleeps a second before exiting.
		os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	testscript.Main(m, map[string]func(){
		"freecode": func() {
			a := &app{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, lookupEnv: os.LookupEnv}
			// A script sets FREECODE_TEST_START_BOUND to see a one-shot
			// start that is still working run out of time in seconds, not
			// after controller.MaxStartTimeout.
			if bound, err := time.ParseDuration(os.Getenv("FREECODE_TEST_START_BOUND")); err == nil {
				a.startBound = bound
			}
			os.Exit(a.run(os.Args[1:]))
		},
	})
}

// TestScripts runs the command-line sessions in testdata/script: each one is
// what a user types and what they should see.
func TestScripts(t *testing.T) {
	// The scripts start real MCP servers: the test server, built once.
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin, "../../cmd/mcp-testserver")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("build test server: %v", err)
	}
	// Other hosts' configs, for `mcp import`: $HOSTS/<host>/...
	samples, err := filepath.Abs("testdata/hosts")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("FREECODE_HOME", filepath.Join(env.WorkDir, "home"))
			env.Setenv("PATH", bin+string(os.PathListSeparator)+env.Getenv("PATH"))
			env.Setenv("GORACE", os.Getenv("GORACE"))
			env.Setenv("HOSTS", samples)
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "userns" {
				// A mount namespace of one's own: how a script mounts a
				// directory read-only without being root.
				return exec.Command("unshare", "-rm", "true").Run() == nil, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"gone":    cmdGone,
			"waitfor": cmdWaitFor,
			"retry":   cmdRetry,
		},
	})
}

// cmdGone checks that the processes whose ids are in the given pid files are
// dead. A zombie counts as dead only once freecode has exited: it then
// belongs to init (or the nearest subreaper), whose job reaping it is.
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: gone PIDFILE...")
	}
	for _, f := range args {
		pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(f)))
		if err != nil || pid <= 0 {
			ts.Fatalf("%s: no pid: %v", f, err)
		}
		if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		// Fields after "(comm)": state ppid ...
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[0] == "Z" && f[1] == "1" {
				continue
			}
		}
		ts.Fatalf("process %d from %s is still there: %s", pid, f, stat)
	}
}

// cmdWaitFor waits until FILE exists and matches REGEXP: the condition a
// script needs before it goes on, e.g. a background command being ready.
func cmdWaitFor(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfor FILE REGEXP")
	}
	re := regexp.MustCompile(args[1])
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(20 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		if data, err := os.ReadFile(path); err == nil && re.Match(data) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not match %q within 20s", path, args[1])
		}
	}
}

// cmdRetry runs a command (as exec does) until it succeeds and, with
// -stdout REGEXP, its stdout matches: the condition a script waits for on
// a background serve ("the server is ready", "the approval is pending").
// Its last run's stdout and stderr are what the next commands check.
// Negated (! retry), it runs the command until it fails instead: the
// condition of a command whose exit status says what is awaited ("the
// config file has errors").
func cmdRetry(ts *testscript.TestScript, neg bool, args []string) {
	var re *regexp.Regexp
	if len(args) > 2 && args[0] == "-stdout" {
		re = regexp.MustCompile(args[1])
		args = args[2:]
	}
	if len(args) == 0 {
		ts.Fatalf("usage: [!] retry [-stdout REGEXP] COMMAND [ARGS...]")
	}
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for range tick.C {
		err := ts.Exec(args[0], args[1:]...)
		if (err == nil) != neg && (re == nil || re.MatchString(ts.ReadFile("stdout"))) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s did not %s (with stdout matching %v) within 30s: %v", strings.Join(args, " "), pick(neg, "fail", "succeed"), re, err)
		}
	}
}
