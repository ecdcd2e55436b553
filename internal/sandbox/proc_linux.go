package sandbox

import "syscall"

// sysProcAttr makes a worker die with the process that started it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
