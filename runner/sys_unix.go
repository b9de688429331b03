//go:build unix

package runner

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// lockStateDir takes an exclusive lock on <dir>/runner.lock so that two runners cannot share
// one agent's state (journal and turns). The lock goes away with the process, even after a crash.
func lockStateDir(dir string) (func(), error) {
	path := filepath.Join(dir, "runner.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another chorus agent run is using the state directory %s (lock %s); stop it first, "+
			"or give this runner another --state-dir", dir, path)
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
}

// inOwnGroup makes cmd the leader of a new process group, and its cancellation kill the whole
// group (the shell and everything it started).
func inOwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
