//go:build unix && !linux

package flink

import "syscall"

// procAttr starts the oracle in a process group of its own. Only Linux
// has a parent-death signal: elsewhere an oracle outlives a test binary
// killed before Close.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
