// Command flightd serves an Arrow Flight SQL endpoint over a table store in
// a local data directory.
//
//	go run ./cmd/flightd                      # 127.0.0.1:31337, data in ./flightd-data
//	go run ./cmd/flightd -addr :31337 -data /var/lib/flightd -auth-file users.txt -tls-cert c.pem -tls-key k.pem
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
)

func main() {
	if err := run(); err != nil {
		log.Fatalf("flightd: %v", err)
	}
}

func run() error {
	var (
		addr     = flag.String("addr", "127.0.0.1:31337", "listen address")
		dataDir  = flag.String("data", "flightd-data", "data directory (created if missing)")
		authFile = flag.String("auth-file", "", "file of user:password lines; enables authentication")
		tlsCert  = flag.String("tls-cert", "", "TLS certificate (PEM)")
		tlsKey   = flag.String("tls-key", "", "TLS private key (PEM)")
		clientCA = flag.String("tls-client-ca", "", "CA (PEM) client certificates must be signed by (mTLS)")
		queryMem = flag.Int64("query-memory", engine.DefaultQueryMemory, "bytes one statement's sorts, aggregations and joins may hold before spilling to disk (-1: unlimited)")
		cacheMem = flag.Int64("cache-memory", 1<<30, "bytes of decoded table data kept in memory for scans (0: no cache)")
		grace    = flag.Duration("shutdown-grace", 30*time.Second, "on SIGTERM, how long running queries may go on before they are cancelled")
		parallel = flag.Int("parallelism", 0, "goroutines one query's scans and aggregations use (0: one per core, 1: serial)")
		maxBytes = flag.Int("max-statement-bytes", flightsql.DefaultLimits.MaxStatementBytes, "longest SQL statement accepted, in bytes")
		maxToks  = flag.Int("max-statement-tokens", flightsql.DefaultLimits.MaxStatementTokens, "most tokens (names, literals, operators) one SQL statement may have")
	)
	flag.Parse()

	users, err := readUsers(*authFile)
	if err != nil {
		return err
	}
	root, err := filepath.Abs(*dataDir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	spill := filepath.Join(root, ".spill")
	if err := os.RemoveAll(spill); err != nil { // files of a crashed run
		return err
	}
	if err := os.MkdirAll(spill, 0o755); err != nil {
		return err
	}
	eng, err := engine.Open(ctx, engine.Config{Mem: memory.NewGoAllocator(), Root: root, QueryMemory: *queryMem, SpillDir: spill, CacheBytes: *cacheMem, Parallelism: *parallel})
	if err != nil {
		return err
	}
	srv, err := flightsql.NewServer(eng, flightsql.Limits{MaxStatementBytes: *maxBytes, MaxStatementTokens: *maxToks})
	if err != nil {
		return errors.Join(err, eng.Close())
	}
	fs, err := flightsql.NewFlightServer(srv, flightsql.Options{
		Users: users, TLSCertFile: *tlsCert, TLSKeyFile: *tlsKey, ClientCAFile: *clientCA,
	})
	if err != nil {
		return errors.Join(err, eng.Close())
	}
	if err := fs.Init(*addr); err != nil {
		return errors.Join(err, eng.Close())
	}

	// Graceful shutdown: stop accepting calls, end change streams (they
	// never finish), let running calls finish (commits included), cancel
	// result streams still running after the grace period, then close the
	// store.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sig
		log.Printf("flightd: %v: shutting down", s)
		time.AfterFunc(*grace, func() {
			log.Printf("flightd: cancelling queries still running after %v", *grace)
			srv.CancelQueries()
		})
		srv.CancelStreams()
		fs.Shutdown()
	}()
	scheme := "grpc"
	if *tlsCert != "" {
		scheme = "grpc+tls"
	}
	log.Printf("flightd: serving Flight SQL on %s://%s, data in %s", scheme, fs.Addr(), root)
	serveErr := fs.Serve()
	srv.Close()
	return errors.Join(serveErr, eng.Close())
}

// readUsers parses user:password lines ('#' starts a comment).
func readUsers(path string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	users := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, pass, ok := strings.Cut(line, ":")
		if !ok || user == "" {
			return nil, fmt.Errorf("%s:%d: want user:password", path, n)
		}
		users[user] = pass
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(users) == 0 {
		return nil, fmt.Errorf("%s: no users", path)
	}
	return users, nil
}
