//go:build !linux

package sandbox

import "syscall"

// sysProcAttr has nothing to add where Pdeathsig does not exist: a worker
// still exits when its standard input closes.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
