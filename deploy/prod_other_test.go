//go:build !linux

package deploy

import "syscall"

// prodProcAttr: only Linux can tie a child's life to its parent's; elsewhere the test's own
// clean-up stops its processes.
func prodProcAttr() *syscall.SysProcAttr { return nil }
