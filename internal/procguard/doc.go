// Package procguard keeps the processes a program starts from outliving it,
// whatever happens to the program. It knows nothing of what the processes
// are; package mcp uses it for local servers.
//
// Three pieces, each covering what the others cannot:
//
//   - A [Reaper] runs each command under a small reaper process of its own:
//     the dedicated helper cmd/fc-reaper installed beside the program
//     ([NewHelperReaper]), or this same executable run as [ReaperName]
//     (see [Dispatch]) where there is none or it speaks another protocol
//     version. Both run the same reaper code; the helper only spares each
//     reaper the program's size (its package initialisation and data:
//     about 0.8 MiB private instead of 3.6 MiB, and a few ms of start). It
//     stays one reaper per command because a subreaper is the only record
//     the kernel keeps of which subtree an orphan left: one reaper for
//     several commands could not tell whose a reparented daemon was. The
//     reaper is a child
//     subreaper (PR_SET_CHILD_SUBREAPER): whatever the command starts, even a
//     helper that moved to a new session and lost its parent, stays in the
//     reaper's subtree. When the command exits, the reaper kills and reaps
//     that whole subtree, then exits the way the command did (same status,
//     or the same signal). When the program that started it dies, however
//     it dies, the reaper's end of its control socket reaches end of file
//     and it kills the subtree at once. If the reaper itself is SIGKILLed,
//     the command dies by its parent-death signal and its descendants are
//     reparented to the next subreaper up.
//   - A [Subreaper] makes the program a child subreaper too and kills the
//     foreign children that get reparented to it (what a killed reaper left
//     behind), while leaving its own children alone.
//   - A [Guard] is a process outside the program's tree that is told the
//     process groups of the commands and SIGKILLs them when the program dies:
//     it covers the program and a reaper being killed together. The program
//     watches it and starts a new one if it dies. It runs as the helper
//     too, with the same fallback ([Helper], [GuardOptions]).
//
// The helpers are named [ReaperName] and [GuardName] (their comm and
// argv[0]), so `killall freecode` reaches neither, and they start before
// anything heavy in main: call [Dispatch] first thing in main, and in the
// TestMain of any test binary that is used as the executable.
//
// Not covered: a process that leaves the tree entirely (a daemon started
// through another service such as systemd-run, at or a container engine), a
// process that changes its user id (it can no longer be signalled), and a
// reaper killed at the same moment as the program that started it: then
// only the guard's group kill is left, which misses what left the
// command's process group.
package procguard
