//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockDataDir takes an exclusive lock on <dataDir>/dev.lock so that two `chorus dev` cannot
// share one Temporal database. The lock goes away with the process, even after a crash.
func lockDataDir(dataDir string) (func(), error) {
	path := filepath.Join(dataDir, "dev.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another chorus dev is already running on %s (lock %s); stop it first, "+
			"or use another --data-dir", dataDir, path)
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "%d\n", os.Getpid())
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
}
