// Package flink drives Apache Flink as an oracle for flightd's SQL (issue
// 20): it builds interop/flink's FlinkOracle with Maven and runs statements
// on it, one at a time, in Flink's batch mode on a local MiniCluster.
// internal/slt (TestFlinkOracle) and bench/difftest use it; both need Java
// 17 and Maven with Flink 2.3 in the local repository (.ci/run installs
// them).
package flink

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Null is how an Answer holds SQL NULL: no value Flink prints is it.
const Null = "\x00NULL"

// Answer is Flink's answer to one statement.
type Answer struct {
	// Types are the result columns' Flink types as Flink names them
	// (`INT`, `DECIMAL(10, 2) NOT NULL`, `VARCHAR(3)`).
	Types []string
	// Rows are the values as Java's String.valueOf writes them (bytes in
	// hex, arrays as JSON), Null for NULL.
	Rows [][]string
	// Err is Flink's error, "" if the statement succeeded: the innermost
	// cause's class and message.
	Err string
}

// DefaultTimeout bounds the wait for one statement's answer: far above
// what a generated query takes on Flink on a loaded machine (seconds),
// far below a test binary's timeout.
const DefaultTimeout = 3 * time.Minute

// ErrTimeout is the error of a statement Flink did not answer in time.
// The process is stopped then: the caller starts another to go on.
var ErrTimeout = errors.New("FlinkOracle did not answer in time")

// TimeoutError is ErrTimeout with what the JVM was doing then.
type TimeoutError struct {
	SQL   string
	After time.Duration
	// MainStack is the JVM's main thread (the one running the statement)
	// as jstack printed it just before the process was stopped: whether
	// Flink was still planning or running the job. "" if jstack failed.
	MainStack string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("%v: no answer within %v to %s (the process is stopped)", ErrTimeout, e.After, e.SQL)
}

func (e *TimeoutError) Unwrap() error { return ErrTimeout }

// Oracle is a running FlinkOracle process, in a process group of its own.
// It runs one statement at a time: callers do not share it between
// goroutines.
type Oracle struct {
	// Timeout bounds the wait for each answer (DefaultTimeout).
	Timeout time.Duration
	cmd     *exec.Cmd
	stderr  *tail
	in      io.WriteCloser
	// lines are the process's stdout lines; closed at its end, after
	// which outErr holds how reading ended.
	lines  chan string
	outErr error
	// pending are the statements sent and not yet answered, for errors.
	pending []string
	// stopped is why the process was stopped, nil while it runs.
	stopped error
	// waited is set once the process is reaped, with how it ended.
	waited  bool
	waitErr error
}

// Start builds FlinkOracle from the Maven project in dir (interop/flink)
// offline and starts it.
func Start(dir string) (*Oracle, error) {
	pom := filepath.Join(dir, "pom.xml")
	build := exec.Command("mvn", "-o", "-q", "-B", "-f", pom, "compile", "dependency:build-classpath", "-Dmdep.outputFile=target/cp.txt")
	if out, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building %s: %w\n%s", dir, err, out)
	}
	target := filepath.Join(dir, "target")
	cp, err := os.ReadFile(filepath.Join(target, "cp.txt"))
	if err != nil {
		return nil, err
	}
	// The serial collector: the oracle is one thread on a shared machine.
	// C1 only: each statement is new code (Flink generates and compiles
	// classes per job) that runs once over small data, so C2's compilations
	// cost more than they gain (bench/difftest: 3.4-4.3 s a query with
	// both, 1.3-1.8 s with C1 only, on 40 queries at load average 18).
	return start(exec.Command("java", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", filepath.Join(target, "classes")+string(os.PathListSeparator)+strings.TrimSpace(string(cp)),
		"dev.flightd.oracle.FlinkOracle"))
}

// start starts cmd, which speaks FlinkOracle's protocol, in a process
// group of its own: Close and a timeout kill the JVM and anything it
// started. On Linux it is killed too when the process that started it
// dies (procAttr).
func start(cmd *exec.Cmd) (*Oracle, error) {
	cmd.SysProcAttr = procAttr()
	o := &Oracle{Timeout: DefaultTimeout, cmd: cmd, stderr: &tail{}, lines: make(chan string, 64)}
	cmd.Stderr = o.stderr
	var err error
	if o.in, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			o.lines <- sc.Text()
		}
		o.outErr = sc.Err()
		close(o.lines)
	}()
	return o, nil
}

// Run runs one statement (line breaks become spaces: the protocol is a line
// a statement). The error is about the process, not the statement:
// Flink's error is in Answer.Err.
func (o *Oracle) Run(sql string) (Answer, error) {
	if err := o.Send(sql); err != nil {
		return Answer{}, err
	}
	return o.Receive()
}

// Send sends one statement without waiting for its answer, so that the
// caller works while Flink runs it; Receive reads the answer. Answers come
// in the order statements were sent.
func (o *Oracle) Send(sql string) error {
	if o.stopped != nil {
		return o.stopped
	}
	line := strings.NewReplacer("\r", " ", "\n", " ").Replace(sql)
	if _, err := fmt.Fprintln(o.in, line); err != nil {
		return fmt.Errorf("FlinkOracle: %w", err)
	}
	o.pending = append(o.pending, line)
	return nil
}

// Receive reads the answer to the earliest statement sent and not yet
// received. If none comes within Timeout, it stops the process and
// returns ErrTimeout, with the statement.
func (o *Oracle) Receive() (Answer, error) {
	if o.stopped != nil {
		return Answer{}, o.stopped
	}
	if len(o.pending) == 0 {
		return Answer{}, errors.New("FlinkOracle: Receive without a statement sent")
	}
	sql := o.pending[0]
	o.pending = o.pending[1:]
	timer := time.NewTimer(o.Timeout)
	defer timer.Stop()
	var a Answer
	for {
		select {
		case line, ok := <-o.lines:
			if !ok {
				// Reaped first: its stderr is complete then.
				o.stopped = fmt.Errorf("FlinkOracle ended: %w\n%s", errors.Join(o.wait(), o.outErr, io.ErrUnexpectedEOF), o.stderr)
				return a, o.stopped
			}
			switch {
			case line == "END":
				return a, nil
			case strings.HasPrefix(line, "TYPES"):
				a.Types = fields(line)
			case strings.HasPrefix(line, "ROW"):
				a.Rows = append(a.Rows, fields(line))
			case strings.HasPrefix(line, "ERR "):
				a.Err = unescape(line[4:])
			}
		case <-timer.C:
			stack := o.mainStack()
			o.kill()
			o.stopped = &TimeoutError{SQL: sql, After: o.Timeout, MainStack: stack}
			return a, o.stopped
		}
	}
}

// Close stops the process and everything in its process group, and waits
// for it. The error is the process's own failure, if it ended by itself.
func (o *Oracle) Close() error {
	o.in.Close()
	if o.waited {
		return o.waitErr
	}
	if o.stopped == nil {
		o.stopped = errors.New("FlinkOracle: closed")
	}
	o.kill()
	err := o.wait()
	if ws, ok := o.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return nil // the kill above
	}
	return err
}

// wait reaps the process, once, after its stdout is read to the end (Wait
// closes it).
func (o *Oracle) wait() error {
	if !o.waited {
		for range o.lines {
		}
		o.waitErr, o.waited = o.cmd.Wait(), true
	}
	return o.waitErr
}

// mainStack returns the JVM's main thread stack, from jstack; "" if the
// process is no JVM or jstack fails (within a bound: the machine may be
// loaded).
func (o *Oracle) mainStack() string {
	if filepath.Base(o.cmd.Path) != "java" {
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "jstack", strconv.Itoa(o.cmd.Process.Pid)).Output()
	if err != nil {
		return ""
	}
	dump := string(out)
	start := strings.Index(dump, "\n\"main\" ")
	if start < 0 {
		return ""
	}
	dump = dump[start+1:]
	if end := strings.Index(dump, "\n\n"); end >= 0 {
		dump = dump[:end]
	}
	return dump
}

// kill kills the process group (its id is the process's, by Setpgid).
func (o *Oracle) kill() {
	_ = syscall.Kill(-o.cmd.Process.Pid, syscall.SIGKILL)
}

// fields are the tab-separated values after a line's tag.
func fields(line string) []string {
	vs := strings.Split(line, "\t")[1:]
	for i, v := range vs {
		vs[i] = unescape(v)
	}
	return vs
}

func unescape(v string) string {
	if v == `\N` {
		return Null
	}
	return strings.NewReplacer(`\\`, `\`, `\t`, "\t", `\n`, "\n").Replace(v)
}

// tail keeps the last bytes written to it: the end of the process's
// stderr, for the error when it ends.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 8<<10 {
		t.buf = t.buf[len(t.buf)-8<<10:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
