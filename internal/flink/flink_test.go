// The tests read process states from /proc, and TestParentKilled checks
// Linux's parent-death signal.

//go:build linux

package flink

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeOracle starts a shell speaking FlinkOracle's protocol: it answers
// "SELECT 1" with one row and hangs on anything else; it also starts a
// child that sleeps, in its process group, and reports its pid first.
func fakeOracle(t *testing.T) (o *Oracle, child int) {
	t.Helper()
	script := `sleep 600 & echo "PID $!"
while read -r line; do
  if [ "$line" = "SELECT 1" ]; then printf 'TYPES\tINT NOT NULL\nROW\t1\nOK\nEND\n'; else sleep 600; fi
done`
	o, err := start(exec.Command("sh", "-c", script))
	if err != nil {
		t.Fatal(err)
	}
	line := <-o.lines
	child, err = strconv.Atoi(strings.TrimPrefix(line, "PID "))
	if err != nil {
		t.Fatalf("first line %q: %v", line, err)
	}
	return o, child
}

// alive reports whether process pid runs: it exists and is no zombie
// waiting to be reaped.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the command's closing parenthesis.
	s := string(stat)
	return !strings.HasPrefix(s[strings.LastIndexByte(s, ')')+1:], " Z")
}

func waitDead(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); alive(pid); {
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still alive", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestTimeout checks that a statement with no answer fails with
// ErrTimeout, naming it, after the Timeout and not later, and that the
// process group is stopped then.
func TestTimeout(t *testing.T) {
	o, child := fakeOracle(t)
	o.Timeout = 500 * time.Millisecond
	a, err := o.Run("SELECT 1")
	if err != nil || len(a.Rows) != 1 || a.Rows[0][0] != "1" || a.Types[0] != "INT NOT NULL" {
		t.Fatalf("SELECT 1: %+v, %v", a, err)
	}
	start := time.Now()
	_, err = o.Run("SELECT hang")
	if took := time.Since(start); !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "SELECT hang") || took < o.Timeout || took > o.Timeout+5*time.Second {
		t.Fatalf("a hanging statement: %v after %v, want ErrTimeout naming it after %v", err, took, o.Timeout)
	}
	waitDead(t, o.cmd.Process.Pid)
	waitDead(t, child)
	if _, err := o.Run("SELECT 1"); !errors.Is(err, ErrTimeout) {
		t.Errorf("a statement after the timeout: %v, want the timeout again", err)
	}
	if err := o.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	waitDead(t, child)
}

// TestCloseKillsGroup checks that Close ends the process and what it
// started, even while a statement runs.
func TestCloseKillsGroup(t *testing.T) {
	o, child := fakeOracle(t)
	if err := o.Send("SELECT hang"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- o.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	if alive(o.cmd.Process.Pid) {
		t.Error("the process is alive after Close")
	}
	waitDead(t, child)
}

// TestEnded checks that a process that ends mid-answer is an error with
// its stderr, not a hang.
func TestEnded(t *testing.T) {
	o, err := start(exec.Command("sh", "-c", `read -r line; printf 'TYPES\tINT\n'; echo "boom" >&2; exit 3`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Run("SELECT 1"); err == nil || errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "boom") {
		t.Errorf("ended process: %v, want its end with stderr", err)
	}
	if err := o.Close(); err == nil {
		t.Error("Close of a process that failed: no error")
	}
}

// TestParentKilled checks that the oracle dies with the process that
// started it: a copy of this test binary starts one, gives it a statement
// that hangs, reports its pid and is killed with SIGKILL, which gives it
// no chance to Close.
func TestParentKilled(t *testing.T) {
	if os.Getenv("FLINK_TEST_PARENT") != "" {
		o, _ := fakeOracle(t)
		// Busy: it does not see its stdin end.
		if err := o.Send("SELECT hang"); err != nil {
			t.Fatal(err)
		}
		fmt.Println("ORACLE", o.cmd.Process.Pid)
		time.Sleep(time.Minute)
		return
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestParentKilled$")
	parent.Env = append(os.Environ(), "FLINK_TEST_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Fscanf(out, "ORACLE %d\n", &pid); err != nil {
		parent.Process.Kill()
		t.Fatalf("reading the oracle's pid: %v", err)
	}
	if !alive(pid) {
		t.Fatalf("oracle %d is not running", pid)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	waitDead(t, pid)
}

// TestTimeoutStack checks that a timeout on the real FlinkOracle reports
// the JVM's main thread, the one serving statements (FLIGHTD_FLINK=1: Java
// 17 and Maven with Flink in the local repository).
func TestTimeoutStack(t *testing.T) {
	if os.Getenv("FLIGHTD_FLINK") == "" {
		t.Skip("set FLIGHTD_FLINK=1 to run FlinkOracle")
	}
	o, err := Start("../../interop/flink")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	// No statement is planned and run in 10 ms, least of all the first.
	o.Timeout = 10 * time.Millisecond
	_, err = o.Run("SELECT count(*) FROM (VALUES (1), (2)) AS v (x) WHERE x > 1")
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want a TimeoutError", err)
	}
	if !strings.HasPrefix(te.MainStack, `"main" `) || !strings.Contains(te.MainStack, "dev.flightd.oracle.FlinkOracle") {
		t.Errorf("main thread stack:\n%s", te.MainStack)
	}
}
