package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/freecode/freecode/api"
)

// IdleOptions configure Idle.
type IdleOptions struct {
	Servers int
	// Duration of the idle measurement, split into Windows equal windows
	// (the medians are over windows).
	Duration   time.Duration
	Windows    int
	ServerArgs []string
}

// userHZ is the unit of utime and stime in /proc/<pid>/stat: USER_HZ, 100
// on every Linux architecture Go supports.
const userHZ = 100

// procCPU returns the user+system CPU time pid has used itself (not its
// children), from /proc/<pid>/stat.
func procCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; fields after it are fixed.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// f[0] is field 3 (state); utime is field 14, stime field 15.
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return time.Duration(ut+st) * time.Second / userHZ, nil
}

// procRSS returns VmRSS of pid in bytes.
func procRSS(pid int) (uint64, error) { return procStatus(pid, "VmRSS") }

// procStatus returns a kB field of /proc/<pid>/status (VmRSS, RssAnon) in
// bytes.
func procStatus(pid int, field string) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 2 && f[1] == "kB" {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				return kb * 1024, err
			}
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no %s", pid, field)
}

// procParent returns the parent pid of pid (field 4 of /proc/<pid>/stat).
func procParent(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	return strconv.Atoi(f[1])
}

// Idle runs a real `freecode serve` with Servers test servers, waits until
// all are ready, and measures serve's own CPU time and RSS while idle.
func Idle(ctx context.Context, cfg Config, opts IdleOptions) (rows []Row, err error) {
	home, err := os.MkdirTemp("", "freecode-bench-home-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(home)
	work := filepath.Join(home, "work") // serve's working directory: no project settings
	if err := os.Mkdir(work, 0o700); err != nil {
		return nil, err
	}
	argv := append([]string{cfg.TestServer}, opts.ServerArgs...)
	names := make([]string, opts.Servers)
	for i := range names {
		names[i] = fmt.Sprintf("idle%02d", i)
	}
	if err := os.WriteFile(filepath.Join(home, "config.json"), configJSON(argv, names...), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(home, "serve.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logf.Close()

	cmd := exec.Command(cfg.Freecode, "serve")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "FREECODE_HOME="+home)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s serve: %w", cfg.Freecode, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-exited
			err = errors.Join(err, errors.New("serve did not stop within 30s of SIGTERM"))
		}
		if err != nil {
			if b, rerr := os.ReadFile(logPath); rerr == nil {
				err = fmt.Errorf("%w\n--- serve log:\n%s", err, b)
			}
		}
	}()

	// Wait for the API, then for every server to be ready: polling the
	// status is the only way an outside client can tell.
	start := time.Now()
	var client *api.Client
	var pids []int
	for {
		if time.Since(start) > 60*time.Second {
			return nil, errors.New("serve: servers not all ready within 60s")
		}
		select {
		case e := <-exited:
			exited <- e
			return nil, fmt.Errorf("serve exited early: %v", e)
		case <-time.After(100 * time.Millisecond):
		}
		if client == nil {
			if client, err = api.Dial(api.SocketPath(home)); err != nil {
				client = nil
				continue
			}
			defer client.Close()
		}
		st, err := client.Status(ctx)
		if err != nil {
			continue
		}
		pids = pids[:0]
		for _, s := range st.Servers {
			if s.Phase == "ready" {
				pids = append(pids, s.PID)
			}
		}
		if len(pids) == opts.Servers {
			break
		}
	}
	client.Close()
	ready := time.Since(start)
	cfg.logf("  serve: %d servers ready after %s; idle for %s", opts.Servers, ms(ready), opts.Duration)
	// Let start-up work (GC, deferred goroutines) settle before measuring.
	time.Sleep(2 * time.Second)

	// Each server runs under a reaper, its parent.
	var reapers []int
	for _, p := range pids {
		if r, err := procParent(p); err == nil && r != pid {
			reapers = append(reapers, r)
		}
	}
	cpuOf := func(procs []int) time.Duration {
		var sum time.Duration
		for _, p := range procs {
			if c, err := procCPU(p); err == nil {
				sum += c
			}
		}
		return sum
	}
	childCPU := func() time.Duration { return cpuOf(pids) }
	window := opts.Duration / time.Duration(opts.Windows)
	cpu0, err := procCPU(pid)
	if err != nil {
		return nil, err
	}
	kids0 := childCPU()
	reapers0 := cpuOf(reapers)
	t0 := time.Now()
	var pcts, rsss []float64
	prevCPU, prevT := cpu0, t0
	for range opts.Windows {
		select {
		case <-time.After(window):
		case e := <-exited:
			exited <- e
			return nil, fmt.Errorf("serve exited while idle: %v", e)
		}
		c, err := procCPU(pid)
		if err != nil {
			return nil, err
		}
		now := time.Now()
		pcts = append(pcts, 100*float64(c-prevCPU)/float64(now.Sub(prevT)))
		prevCPU, prevT = c, now
		rss, err := procRSS(pid)
		if err != nil {
			return nil, err
		}
		rsss = append(rsss, float64(rss)/(1<<20))
	}
	total := prevT.Sub(t0)
	cpuAll := prevCPU - cpu0
	kids := childCPU() - kids0
	reaperCPU := cpuOf(reapers) - reapers0
	pct := 100 * float64(cpuAll) / float64(total)
	var reaperRSS, reaperAnon []float64
	for _, r := range reapers {
		rss, err1 := procStatus(r, "VmRSS")
		anon, err2 := procStatus(r, "RssAnon")
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("reaper %d: %w", r, err)
		}
		reaperRSS, reaperAnon = append(reaperRSS, float64(rss)/(1<<20)), append(reaperAnon, float64(anon)/(1<<20))
	}

	group := fmt.Sprintf("4. idle cost (`freecode serve` subprocess, %d servers, %s)", opts.Servers, opts.Duration)
	rows = []Row{
		{Group: group, Name: fmt.Sprintf("serve's own CPU over %s (utime+stime, in 10 ms ticks; children excluded)", total.Round(time.Second)),
			Value: fmt.Sprintf("%.3f%% of one core (%s)", pct, ms(cpuAll)), Target: "< 0.5% of one core", Verdict: verdict(pct < 0.5), Runs: 1},
		{Group: group, Name: fmt.Sprintf("serve's own CPU per %s window", window.Round(time.Second)),
			Value: fmt.Sprintf("%.3f%% of one core", medianF(pcts)), Runs: len(pcts)},
		{Group: group, Name: "serve's RSS (VmRSS)", Value: fmt.Sprintf("%.1f MiB", medianF(rsss)), Runs: len(rsss)},
		{Group: group, Name: "one server's reaper (fc-reaper): RSS (VmRSS; mostly its executable's pages, shared between reapers)", Value: fmt.Sprintf("%.1f MiB", medianF(reaperRSS)), Runs: len(reaperRSS)},
		{Group: group, Name: "one server's reaper (fc-reaper): private memory (RssAnon)", Value: fmt.Sprintf("%.1f MiB", medianF(reaperAnon)), Runs: len(reaperAnon)},
		{Group: group, Name: fmt.Sprintf("the %d reapers' CPU, together", len(reapers)),
			Value: fmt.Sprintf("%.3f%% of one core (%s)", 100*float64(reaperCPU)/float64(total), ms(reaperCPU)), Runs: 1},
		{Group: group, Name: fmt.Sprintf("for reference: the %d test servers' own CPU, together", len(pids)),
			Value: fmt.Sprintf("%.3f%% of one core (%s)", 100*float64(kids)/float64(total), ms(kids)), Runs: 1},
		{Group: group, Name: "for reference: start of serve until all ready (API polled every 100 ms)", Value: ms(ready), Runs: 1},
	}
	return rows, nil
}
