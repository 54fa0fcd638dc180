package mcp

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// How a local server that runs out of its start timeout is judged to be
// still working: it wrote a stderr line, or its process group used at least
// progressMinCPU of CPU time, during the last quarter of the budget, at
// most the last progressWindow (a download waits for the network now and
// then; a quarter is long enough to see through that, and still the end).
//
// CPU time is the signal that matters: a cold `npx -y pkg` writes nothing
// to stderr while it downloads and unpacks, but keeps node busy (measured:
// 100 ms or more of CPU in every half second of an 11 to 14 s first start
// of server-filesystem, then none at all once the server waits for
// initialize). A server that hangs, or waits for input, uses none. Stderr
// lines count too, for runners that print their progress.
const (
	progressWindow = 5 * time.Second
	progressMinCPU = 20 * time.Millisecond
)

// clockTicks is the unit of the CPU times in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux architecture Go supports).
const clockTicks = 100

// startMeter watches a local server while it starts, so that a timeout can
// say whether the server was still working (progressed). It samples the
// server's CPU time once, at the start of the last window of the budget,
// and again when asked; a stderr line counts by when it came, which needs
// no sample (on a loaded machine the sample at the start of the window can
// come late: reading /proc takes a while, and the timer's goroutine may
// wait for a CPU).
type startMeter struct {
	pgid  int
	ring  *lineRing
	start time.Time

	mu sync.Mutex // guards mark, window, timer and stopped
	// mark is the CPU time of the server's process group at the start of
	// the window; nil before it, and while it is being taken.
	mark *time.Duration
	// window is when the last window of the budget begins.
	window time.Time
	timer  *time.Timer // takes mark
	// stopped: stop was called; expect arms nothing.
	stopped bool
}

// newStartMeter starts watching the process group pgid, whose stderr goes
// to ring, for a start that began at start (before the process was
// started: the connect's deadline counts from then) and may take budget.
// stop ends it.
func newStartMeter(pgid int, ring *lineRing, start time.Time, budget time.Duration) *startMeter {
	m := &startMeter{pgid: pgid, ring: ring, start: start}
	m.expect(budget)
	return m
}

// expect makes the budget end budget after the start: the mark is taken
// again at the start of the last window before that.
func (m *startMeter) expect(budget time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stopped {
		return
	}
	if m.timer != nil {
		m.timer.Stop()
	}
	m.window = m.start.Add(budget - min(progressWindow, budget/4))
	m.timer = time.AfterFunc(time.Until(m.window), func() {
		cpu := groupCPU(m.pgid)
		m.mu.Lock()
		m.mark = &cpu
		m.mu.Unlock()
	})
}

// stop ends the watch. A sample being taken may still finish; it only sets
// mark.
func (m *startMeter) stop() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stopped = true
	m.timer.Stop()
}

// progressed returns how the server showed it was still working in the
// window before now ("using CPU", "writing to stderr"), or "" if it did
// not, or if the window has not begun.
func (m *startMeter) progressed() string {
	m.mu.Lock()
	mark, window := m.mark, m.window
	m.mu.Unlock()
	// Lines first: they are what the user can look at (freecode mcp logs),
	// and a process that writes also uses some CPU, more of it on a busy
	// machine.
	if now := time.Now(); now.After(window) && !m.ring.lastLine().Before(window) {
		return "writing to stderr"
	}
	if mark != nil && groupCPU(m.pgid)-*mark >= progressMinCPU {
		return "using CPU"
	}
	return ""
}

// groupCPU is the CPU time (user and system, with that of reaped children)
// of the processes in process group pgid, read from /proc; 0 when it cannot
// be read. A process that leaves the group is not counted.
func groupCPU(pgid int) time.Duration {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	for _, path := range stats {
		data, err := os.ReadFile(path)
		if err != nil {
			continue // gone meanwhile
		}
		if pg, t, ok := parseStat(data); ok && pg == pgid {
			ticks += t
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// parseStat reads the process group and the CPU ticks (utime, stime,
// cutime, cstime) of a /proc/<pid>/stat line. The command name, in
// parentheses, may hold spaces and parentheses itself: the fields start
// after the last ')'.
func parseStat(data []byte) (pgid int, ticks int64, ok bool) {
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(data[i+1:])
	// state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	// cmajflt utime stime cutime cstime ...
	if len(f) < 15 {
		return 0, 0, false
	}
	pg, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, 0, false
	}
	for _, field := range f[11:15] {
		n, err := strconv.ParseInt(string(field), 10, 64)
		if err != nil {
			return 0, 0, false
		}
		ticks += n
	}
	return pg, ticks, true
}
