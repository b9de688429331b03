package deploy

import "syscall"

// prodProcAttr makes the kernel kill a process of TestProductionTopology if the test process
// dies first (a timeout, a crash), so that no server outlives the test that started it.
func prodProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
