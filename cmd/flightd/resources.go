package main

import (
	"bufio"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
)

// memoryLimit sets the Go runtime's soft memory limit: the flag's bytes, or
// by default three quarters of the machine's memory (the smaller of
// /proc/meminfo's MemTotal and the cgroup's limit), leaving the rest to
// the page cache and memory Go does not manage. Near the limit the garbage
// collector runs harder instead of letting the heap grow into the kernel's
// OOM killer. It returns the limit set (0: none).
func memoryLimit(flagBytes int64) int64 {
	switch {
	case flagBytes < 0:
		return 0
	case flagBytes == 0:
		flagBytes = machineMemory() / 4 * 3
		if flagBytes <= 0 {
			return 0
		}
	}
	debug.SetMemoryLimit(flagBytes)
	return flagBytes
}

// defaultMaxConnections serves at most 4096 connections, and at most half
// of the file descriptors the process may open, so that data files, spill
// files and the listener always have descriptors left.
func defaultMaxConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 4096
	}
	return int(max(min(4096, lim.Cur/2), 16))
}

// machineMemory is the memory this process may use, or 0 if unknown.
func machineMemory() int64 {
	total := meminfoTotal()
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// "max" or a huge number mean no cgroup limit.
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 && (total == 0 || n < total) {
			total = n
		}
	}
	return total
}

func meminfoTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
