package procguard

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// procStat is what /proc/<pid>/stat says of a process.
type procStat struct {
	pid, ppid, pgid, sid int
	state                byte // R, S, D, Z, T, ...
	comm                 string
}

func (p procStat) zombie() bool { return p.state == 'Z' || p.state == 'X' }

// readStat reads /proc/<pid>/stat; ok is false when the process is gone.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	return parseStat(pid, b)
}

// parseStat parses "pid (comm) state ppid pgrp session ..."; comm may hold
// spaces and parentheses, so it ends at the last ')'.
func parseStat(pid int, b []byte) (procStat, bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, false
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 4 || len(f[0]) != 1 {
		return procStat{}, false
	}
	st := procStat{pid: pid, state: f[0][0], comm: string(b[open+1 : end])}
	var err1, err2, err3 error
	st.ppid, err1 = strconv.Atoi(f[1])
	st.pgid, err2 = strconv.Atoi(f[2])
	st.sid, err3 = strconv.Atoi(f[3])
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, false
	}
	return st, true
}

// scanProcs reads the stat of every process. A process that ends during
// the scan is left out.
func scanProcs() []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	out := make([]procStat, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			out = append(out, st)
		}
	}
	return out
}

// childrenOf lists the children of ppid in procs.
func childrenOf(procs []procStat, ppid int) []procStat {
	var out []procStat
	for _, p := range procs {
		if p.ppid == ppid {
			out = append(out, p)
		}
	}
	return out
}

// descendantsOf lists every descendant of root in procs, parents before
// their children.
func descendantsOf(procs []procStat, root int) []procStat {
	byParent := map[int][]procStat{}
	for _, p := range procs {
		byParent[p.ppid] = append(byParent[p.ppid], p)
	}
	var out []procStat
	queue := []int{root}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range byParent[pid] {
			if c.pid == root {
				continue
			}
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// killSubtree sends SIGKILL to every live descendant of this process (self)
// and reports how many it signalled.
//
// A child's pid cannot be reused before we reap it, so children are
// signalled by pid. A deeper descendant may exit, be reaped by its parent
// and have its pid reused between the scan and the signal; so it is
// signalled through a pidfd, and only if, with the pidfd open, its parent
// is still this process or one of the descendants found.
func killSubtree(self int) int {
	desc := descendantsOf(scanProcs(), self)
	inTree := make(map[int]bool, len(desc)+1)
	inTree[self] = true
	for _, p := range desc {
		inTree[p.pid] = true
	}
	n := 0
	for _, p := range desc {
		if p.zombie() {
			continue
		}
		if p.ppid == self {
			if unix.Kill(p.pid, unix.SIGKILL) == nil {
				n++
			}
			continue
		}
		if killVerified(p.pid, inTree) {
			n++
		}
	}
	return n
}

// killVerified SIGKILLs pid if its parent is in tree, checked while a pidfd
// holds on to the process.
func killVerified(pid int, tree map[int]bool) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ENOSYS) {
		// Before Linux 5.3: the race above is left open.
		return unix.Kill(pid, unix.SIGKILL) == nil
	}
	if err != nil {
		return false // gone
	}
	defer unix.Close(fd)
	st, ok := readStat(pid)
	if !ok || !tree[st.ppid] {
		return false
	}
	return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil
}

// setComm names this process (what ps, top and killall show) by writing
// /proc/self/comm, which names the main thread whichever thread writes it.
// Linux keeps the first 15 bytes.
func setComm(name string) {
	_ = os.WriteFile("/proc/self/comm", []byte(name), 0)
}
