package devserver

import "syscall"

// childProcAttr puts a child in its own process group (so the terminal's Ctrl-C reaches only
// chorus, which stops the child in order) and has the kernel stop it if chorus dies first.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
