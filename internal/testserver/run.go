package testserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Run is the whole mcp-testserver process: the start-up behaviours (--hold,
// --start-log, --require-env, --exit-at-start, --stderr-flood, --pid-file, --grandchild,
// --setsid-helper), SIGUSR1 adding
// dyn_<n> tools, then stdio on in/out or HTTP (--http, --sse) until in
// reaches EOF or ctx ends.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	if cfg.Hold {
		<-ctx.Done()
		return nil
	}
	if cfg.Replay != "" {
		return Replay(ctx, cfg.Replay, in, out)
	}
	if cfg.EvilText {
		fmt.Fprintf(cfg.Stderr, "%s\n", EvilStderr)
	}
	if cfg.StartLog != "" {
		if err := appendLine(cfg.StartLog, strconv.Itoa(os.Getpid())); err != nil {
			return err
		}
	}
	if cfg.RequireEnv != "" && os.Getenv(cfg.RequireEnv) == "" {
		fmt.Fprintf(cfg.Stderr, "Error: %s environment variable is required\n", cfg.RequireEnv)
		cfg.Exit(1)
		return fmt.Errorf("%s is not set", cfg.RequireEnv)
	}
	if cfg.ExitAtStart != nil {
		fmt.Fprintf(cfg.Stderr, "exiting at start with status %d\n", *cfg.ExitAtStart)
		cfg.Exit(*cfg.ExitAtStart)
		return fmt.Errorf("exit at start with status %d", *cfg.ExitAtStart)
	}
	for i := range cfg.StderrFlood {
		fmt.Fprintf(cfg.Stderr, "flood line %d\n", i)
	}
	if cfg.PIDFile != "" {
		if err := writePID(cfg.PIDFile, os.Getpid()); err != nil {
			return err
		}
	}
	if cfg.Grandchild {
		if err := startGrandchild(cfg, out); err != nil {
			return err
		}
	}
	if cfg.SetsidHelper != "" {
		if err := startSetsidHelper(cfg.SetsidHelper); err != nil {
			return err
		}
	}

	s, err := New(cfg)
	if err != nil {
		return err
	}
	defer s.Close()

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	wg.Go(func() {
		for {
			select {
			case <-usr1:
				name := s.AddDynamicTool()
				fmt.Fprintf(cfg.Stderr, "SIGUSR1: added %s\n", name)
			case <-ctx.Done():
				return
			}
		}
	})

	if cfg.HTTP == "" {
		if cfg.SSE {
			return errors.New("--sse needs --http ADDR")
		}
		if cfg.StdoutFlood == FloodStart {
			// Until the reader gives up: then the write fails.
			return s.flood(ctx, out, "", nil)
		}
		if cfg.StartDelay > 0 {
			t := time.NewTimer(cfg.StartDelay)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil
			}
		}
		return s.ServeStdio(ctx, in, out)
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		return fmt.Errorf("listen %s: %w", cfg.HTTP, err)
	}
	mode := ModeStreamable
	if cfg.SSE {
		mode = ModeSSE
	}
	if _, err := fmt.Fprintf(out, "listening on %s\n", urlUnder(ln.Addr(), mode, cfg.BasePath)); err != nil {
		_ = ln.Close()
		return fmt.Errorf("write stdout: %w", err)
	}
	return s.ServeHTTP(ctx, ln, mode)
}

func writePID(path string, pid int) error {
	if err := os.WriteFile(path, []byte(strconv.Itoa(pid)+"\n"), 0o644); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// appendLine appends line and a newline to path in one write.
func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start log: %w", err)
	}
	_, err = f.WriteString(line + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("start log: %w", err)
	}
	return nil
}

// startGrandchild re-executes this binary with --hold, sharing out and the
// server's stderr, in the server's process group. It is not waited for: it
// lives until something kills it.
func startGrandchild(cfg Config, out io.Writer) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("grandchild: %w", err)
	}
	stdout, ok := out.(*os.File)
	if !ok {
		return errors.New("grandchild: stdout must be a file so that the grandchild can inherit it")
	}
	cmd := exec.Command(self, "--hold")
	cmd.Stdout = stdout
	if f, ok := cfg.Stderr.(*os.File); ok {
		cmd.Stderr = f
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("grandchild: %w", err)
	}
	pid := cmd.Process.Pid
	fmt.Fprintf(cfg.Stderr, "grandchild pid %d\n", pid)
	if cfg.GrandchildPID != "" {
		if err := writePID(cfg.GrandchildPID, pid); err != nil {
			return err
		}
	}
	return nil
}

// startSetsidHelper re-executes this binary with --hold in a new session,
// with stdin, stdout and stderr on /dev/null, and writes its pid to
// pidFile. It is not waited for: it lives until something kills it.
func startSetsidHelper(pidFile string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("setsid helper: %w", err)
	}
	cmd := exec.Command(self, "--hold")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("setsid helper: %w", err)
	}
	return writePID(pidFile, cmd.Process.Pid)
}
