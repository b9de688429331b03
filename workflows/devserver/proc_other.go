//go:build !linux && !windows

package devserver

import "syscall"

// childProcAttr puts a child in its own process group so the terminal's Ctrl-C reaches only
// chorus, which stops the child in order.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
