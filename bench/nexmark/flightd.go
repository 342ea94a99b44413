package nexmark

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Server is the flightd under test: where to reach it and, when known, its
// process (for CPU time) and data directory (for snapshot ids, which the
// latency needs).
type Server struct {
	URI     string
	Pid     int    // 0: CPU time is not measured
	DataDir string // "": latency is not measured
	exited  chan error
}

// StartFlightd starts the flightd binary bin on a free loopback port with a
// new data directory under dir, and waits until it listens.
func StartFlightd(ctx context.Context, bin, dir string, args ...string) (*Server, error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := lis.Addr().String()
	lis.Close()
	data := filepath.Join(dir, "data")
	logf, err := os.Create(filepath.Join(dir, "flightd.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, append([]string{"-addr", addr, "-data", data}, args...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start flightd %s: %w", bin, err)
	}
	s := &Server{URI: "grpc://" + addr, Pid: cmd.Process.Pid, DataDir: data, exited: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		logf.Close()
		s.exited <- err
	}()
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return s, nil
		}
		select {
		case err := <-s.exited:
			return nil, fmt.Errorf("flightd exited before listening (%v); see %s", err, logf.Name())
		case <-ctx.Done():
			s.Stop()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Stop kills a flightd that StartFlightd started and waits for it to exit.
func (s *Server) Stop() {
	if s.exited == nil {
		return
	}
	if p, err := os.FindProcess(s.Pid); err == nil {
		_ = p.Kill()
	}
	<-s.exited
	s.exited = nil
}

// BuildFlightd builds cmd/flightd of the module at src into dir.
func BuildFlightd(ctx context.Context, src, dir string) (string, error) {
	bin := filepath.Join(dir, "flightd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/flightd")
	cmd.Dir = src
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build flightd in %s: %v\n%s", src, err, out)
	}
	return bin, nil
}

// latestSnapshot is the id of table's newest snapshot in flightd's data
// directory (Paimon's layout: <db>.db/<table>/snapshot/snapshot-N), 0 when
// it has none.
func latestSnapshot(dataDir, db, table string) (int64, error) {
	entries, err := os.ReadDir(filepath.Join(dataDir, db+".db", table, "snapshot"))
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, e := range entries {
		if n, ok := strings.CutPrefix(e.Name(), "snapshot-"); ok {
			if id, err := strconv.ParseInt(n, 10, 64); err == nil {
				latest = max(latest, id)
			}
		}
	}
	return latest, nil
}

// resetPeakRSS resets the peak resident set size of process pid (Linux
// clear_refs 5), so that peakRSSMB then gives the peak since; a process
// not ours, or no Linux, leaves it alone.
func resetPeakRSS(pid int) {
	if pid != 0 {
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	}
}

// peakRSSMB is the peak resident set size (VmHWM) of process pid in MB, 0
// when unknown.
func peakRSSMB(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			f := strings.Fields(v) // "123456 kB"
			if len(f) != 2 || f[1] != "kB" {
				return 0
			}
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				return kb / 1024
			}
		}
	}
	return 0
}
