// Package flink drives Apache Flink as an oracle for flightd's SQL (issue
// 20): it builds interop/flink's FlinkOracle with Maven and runs statements
// on it, one at a time, in Flink's batch mode on a local MiniCluster.
// internal/slt (TestFlinkOracle) and bench/difftest use it; both need Java
// 17 and Maven with Flink 2.3 in the local repository (.ci/run installs
// them).
package flink

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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

// Oracle is a running FlinkOracle process. It runs one statement at a
// time: callers do not share it between goroutines.
type Oracle struct {
	cmd    *exec.Cmd
	stderr *tail
	in     io.WriteCloser
	out    *bufio.Scanner
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
	cmd := exec.Command("java", "-XX:+UseSerialGC", "-cp", filepath.Join(target, "classes")+string(os.PathListSeparator)+strings.TrimSpace(string(cp)),
		"dev.flightd.oracle.FlinkOracle")
	o := &Oracle{cmd: cmd, stderr: &tail{}}
	cmd.Stderr = o.stderr
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
	o.out = bufio.NewScanner(out)
	o.out.Buffer(make([]byte, 1<<20), 1<<24)
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
	if _, err := fmt.Fprintln(o.in, strings.NewReplacer("\r", " ", "\n", " ").Replace(sql)); err != nil {
		return fmt.Errorf("FlinkOracle: %w", err)
	}
	return nil
}

// Receive reads the answer to the earliest statement sent and not yet
// received.
func (o *Oracle) Receive() (Answer, error) {
	var a Answer
	for o.out.Scan() {
		line := o.out.Text()
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
	}
	return a, fmt.Errorf("FlinkOracle ended: %w\n%s", errors.Join(o.out.Err(), io.ErrUnexpectedEOF), o.stderr)
}

// Close ends the process.
func (o *Oracle) Close() error {
	o.in.Close()
	return o.cmd.Wait()
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
