package flink

import "syscall"

// procAttr starts the oracle in a process group of its own, killed by the
// kernel's parent-death signal when the process that started it dies (a
// test binary killed at its timeout). The signal is sent when the starting
// thread ends: Go keeps its threads.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
