package main

import (
	"bufio"
	"fmt"
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
func memoryLimit(flag sizeFlag) int64 {
	n := flag.bytes
	switch {
	case flag.auto || n == 0:
		n = machineMemory() / 4 * 3
		if n <= 0 {
			return 0
		}
	case n < 0:
		return 0
	}
	debug.SetMemoryLimit(n)
	return n
}

// defaultGCPercent is the collector's GOGC when neither -gc-percent nor
// the GOGC environment variable sets it: twice Go's default growth of the
// heap between collections, which halves the collector's CPU. A streaming
// query's state (many small objects, all scanned at every cycle) made the
// collector a fifth of flightd's CPU at Go's default (Nexmark q20, 500,000
// events); the memory limit still bounds the heap, the collector running
// harder near it.
const defaultGCPercent = 200

// gcPercent sets the collector's GOGC: flag when it is not 0 (-1: off),
// else the GOGC environment variable's value (env; the runtime read it
// at start), else defaultGCPercent. It returns the value in force.
func gcPercent(flag int, env string) int {
	switch {
	case flag != 0:
		debug.SetGCPercent(flag)
		return flag
	case env != "":
		p := debug.SetGCPercent(100)
		debug.SetGCPercent(p)
		return p
	}
	debug.SetGCPercent(defaultGCPercent)
	return defaultGCPercent
}

// Derived defaults, as DuckDB derives its memory_limit from the machine: a
// third of the process's memory limit caches decoded table data and a
// quarter is one operator's budget before it spills; half is the pool all
// statements' operators share, so the cache and the pool fit under the
// limit with room for batches in flight; an eighth bounds the lookup
// indexes' row caches together. Without a known limit the caches and the
// budget fall back to 1 GiB each and there is no pool.
const (
	fallbackMemory  = 1 << 30
	minQueryMemory  = 64 << 20
	cacheShareDiv   = 3
	lookupShareDiv  = 8
	queryShareDiv   = 4
	poolShareDiv    = 2
	autoSizeKeyword = "auto"
)

func cacheMemory(flag sizeFlag, limit int64) int64 {
	if !flag.auto {
		return flag.bytes
	}
	if limit <= 0 {
		return fallbackMemory
	}
	return limit / cacheShareDiv
}

func queryMemory(flag sizeFlag, limit int64) int64 {
	return shareOfLimit(flag, limit, queryShareDiv)
}

// shareOfLimit is the flag's bytes when given (not 0), else 1/div of the
// memory limit, at least minQueryMemory (fallbackMemory without a limit).
func shareOfLimit(flag sizeFlag, limit, div int64) int64 {
	if !flag.auto && flag.bytes != 0 {
		return flag.bytes
	}
	if limit <= 0 {
		return fallbackMemory
	}
	return max(limit/div, minQueryMemory)
}

// lookupMemory bounds the lookup caches together (negative: no bound).
func lookupMemory(flag sizeFlag, limit int64) int64 {
	return shareOfLimit(flag, limit, lookupShareDiv)
}

// queryPool is the engine's memory pool (0: none).
func queryPool(flag sizeFlag, limit int64) int64 {
	return boundOfLimit(flag, limit, poolShareDiv)
}

// boundOfLimit is the flag's bytes when given (0 or negative: no bound),
// else 1/div of the memory limit (no bound without a limit).
func boundOfLimit(flag sizeFlag, limit, div int64) int64 {
	switch {
	case !flag.auto:
		return max(flag.bytes, 0)
	case limit <= 0:
		return 0
	}
	return limit / div
}

// sizeFlag is a byte count given as "auto", an integer, a float (6e9) or a
// number with a unit (512MiB, 6GB).
type sizeFlag struct {
	auto  bool
	bytes int64
}

func (f *sizeFlag) String() string {
	if f.auto {
		return autoSizeKeyword
	}
	return strconv.FormatInt(f.bytes, 10)
}

func (f *sizeFlag) Set(s string) error {
	s = strings.TrimSpace(s)
	if strings.EqualFold(s, autoSizeKeyword) {
		*f = sizeFlag{auto: true}
		return nil
	}
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*f = sizeFlag{bytes: n}
	return nil
}

var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

func parseSize(s string) (int64, error) {
	mult, num := 1.0, s
	for _, u := range sizeUnits {
		if len(s) > len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			mult, num = u.mult, strings.TrimSpace(s[:len(s)-len(u.suffix)])
			break
		}
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil && mult == 1 {
		return n, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f != f || f*mult >= 1<<63 || f*mult <= -(1<<63) {
		return 0, fmt.Errorf("%q is not a byte count (a number, optionally with KiB, MiB, GiB, KB, MB or GB, or %q)", s, autoSizeKeyword)
	}
	return int64(f * mult), nil
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

// preparedMemory is -max-prepared-memory: what all prepared statements may
// hold together, by default a quarter of the memory limit (none without
// one; 0 or -1: none).
func preparedMemory(flag sizeFlag, limit int64) int64 {
	return boundOfLimit(flag, limit, queryShareDiv)
}
