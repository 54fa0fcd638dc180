//go:build amd64 || arm64

package procguard

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigaction is the kernel's struct sigaction on amd64 and arm64.
type kernelSigaction struct {
	handler  uintptr
	flags    uint64
	restorer uintptr
	mask     uint64
}

// setDefaultAction restores sig's default action (SIG_DFL), under the Go
// runtime's feet: only for a process about to die by sig.
func setDefaultAction(sig syscall.Signal) {
	var sa kernelSigaction // handler 0 is SIG_DFL
	_, _, _ = unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&sa)), 0, unsafe.Sizeof(sa.mask), 0, 0)
}
