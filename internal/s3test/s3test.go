// Package s3test starts a local S3-compatible server (moto's, from PyPI:
// `pip install 'moto[server]'`) on loopback for tests, and gives each test
// a bucket of its own on it.
package s3test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/flightd/flightd/tablestore/objfs"
)

// Server is a running S3-compatible server.
type Server struct {
	Endpoint string       // http://127.0.0.1:port
	Config   objfs.Config // its Transport records into the Server's requests
	Client   *minio.Client

	requests *recorder
}

// recorder is a transport that records each request as "METHOD path"
// ("LIST path" for a listing, the prefix in the path), so tests can count
// what an operation costs.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	what := req.Method + " " + req.URL.Path
	if q := req.URL.Query(); req.Method == http.MethodGet && (q.Has("list-type") || q.Has("prefix")) {
		what = "LIST " + req.URL.Path + "/" + q.Get("prefix")
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, what)
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// TakeRequests returns the requests made through the Server's Config
// since the last call.
func (s *Server) TakeRequests() []string {
	s.requests.mu.Lock()
	defer s.requests.mu.Unlock()
	reqs := s.requests.reqs
	s.requests.reqs = nil
	return reqs
}

// binary finds moto_server: $FLIGHTD_S3_SERVER, the PATH, then the
// module's .venv (where .ci/run installs it).
func binary() string {
	if p := os.Getenv("FLIGHTD_S3_SERVER"); p != "" {
		return p
	}
	if p, err := exec.LookPath("moto_server"); err == nil {
		return p
	}
	dir, _ := os.Getwd()
	for ; dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if p := filepath.Join(dir, ".venv", "bin", "moto_server"); fileExists(p) {
				return p
			}
		}
	}
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Start starts a server for the test and stops it at its end. Without the
// server binary the test is skipped, or fails under CI=true.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binary()
	if bin == "" {
		msg := "no S3 server: install moto's (pip install 'moto[server]==5.2.5', or set FLIGHTD_S3_SERVER to a moto_server)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// Port 0: the server binds a free port and prints it. A port picked
	// here and freed for it could be taken meanwhile by another process
	// (another test's server), which the test would then talk to.
	cmd := serverCommand(bin)
	log, err := os.Create(filepath.Join(t.TempDir(), "s3server.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
		log.Close()
	})
	deadline := time.Now().Add(2 * time.Minute) // a bound on a broken server, not a timing assumption
	var addr string
	for {
		out, _ := os.ReadFile(log.Name())
		if m := listening.FindSubmatch(out); m != nil {
			addr = string(m[1])
			break
		}
		select {
		case err := <-exited:
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("%s exited: %v\n%s", bin, err, out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no listening address in its output:\n%s", bin, out)
		}
	}
	base, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Endpoint: "http://" + addr, Config: Config("http://" + addr), requests: &recorder{next: base}}
	s.Config.Transport = s.requests
	if s.Client, err = objfs.NewClient(s.Config); err != nil {
		t.Fatal(err)
	}
	return s
}

// serverCommand runs moto's server with its writes serialized when the
// Python beside bin (a venv's, or pyenv's shims) imports moto, else bin
// itself. moto checks If-None-Match and then writes, in two steps another
// request can come between (two racing conditional PUTs of one key both
// succeeded under load), where S3 does both atomically: without this the
// tests of conditional publishing would test moto's race.
func serverCommand(bin string) *exec.Cmd {
	python := filepath.Join(filepath.Dir(bin), "python")
	if motoPython(python) {
		return exec.Command(python, "-c", serializedMoto, "127.0.0.1", "0")
	}
	return exec.Command(bin, "-H", "127.0.0.1", "-p", "0")
}

var motoImports sync.Map // python -> bool

func motoPython(python string) bool {
	if ok, seen := motoImports.Load(python); seen {
		return ok.(bool)
	}
	ok := fileExists(python) && exec.Command(python, "-c", "import moto.moto_server.werkzeug_app").Run() == nil
	motoImports.Store(python, ok)
	return ok
}

// serializedMoto serves moto's application as moto_server does, with one
// write (PUT, POST, DELETE) at a time; reads stay concurrent.
const serializedMoto = `
import sys, threading
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app

app = DomainDispatcherApplication(create_backend_app)
writes = threading.Lock()

def serialized(environ, start_response):
    if environ.get("REQUEST_METHOD") in ("PUT", "POST", "DELETE"):
        with writes:
            return list(app(environ, start_response))
    return app(environ, start_response)

run_simple(sys.argv[1], int(sys.argv[2]), serialized, threaded=True)
`

// listening is the line moto's server (werkzeug) prints once it listens.
var listening = regexp.MustCompile(`Running on http://(127\.0\.0\.1:[0-9]+)`)

// Config is how to reach the server at endpoint (it takes any credentials).
func Config(endpoint string) objfs.Config {
	return objfs.Config{Endpoint: endpoint, Region: "us-east-1", AccessKey: "test", SecretKey: "testsecret"}
}

var buckets atomic.Int64

// Bucket creates a new, empty bucket.
func (s *Server) Bucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("b%d-%s", buckets.Add(1), strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name())))
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	if err := s.Client.MakeBucket(context.Background(), name, minio.MakeBucketOptions{}); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// FS returns an FS over a new bucket, with a disk cache of cacheBytes
// (none when 0).
func (s *Server) FS(t testing.TB, cacheBytes int64) *objfs.FS {
	t.Helper()
	var c *objfs.Cache
	if cacheBytes > 0 {
		var err error
		if c, err = objfs.NewCache(filepath.Join(t.TempDir(), "objcache"), cacheBytes); err != nil {
			t.Fatal(err)
		}
	}
	return objfs.New(context.Background(), s.Client, s.Bucket(t), c)
}
