//go:build !amd64 && !arm64

package procguard

import "syscall"

// setDefaultAction is not implemented on this architecture: dieBySignal
// falls back to exit status 128+sig for signals the Go runtime handles.
func setDefaultAction(syscall.Signal) {}
