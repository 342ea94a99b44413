// Command flightd serves an Arrow Flight SQL endpoint over a table store in
// a local data directory.
//
//	go run ./cmd/flightd                      # 127.0.0.1:31337, data in ./flightd-data
//	go run ./cmd/flightd -addr :31337 -data /var/lib/flightd -auth-file users.txt -tls-cert c.pem -tls-key k.pem
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"os"
	"os/signal"
	"path"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/engine"
	"github.com/flightd/flightd/flightsql"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
)

func main() {
	if err := run(); err != nil {
		log.Fatalf("flightd: %v", err)
	}
}

func run() error {
	var (
		addr     = flag.String("addr", "127.0.0.1:31337", "listen address")
		dataDir  = flag.String("data", "flightd-data", "data directory (created if missing), or s3://bucket/path of a warehouse on an S3-compatible object store (the bucket must exist; nodes may share it)")
		authFile = flag.String("auth-file", "", "file of user:password (or user:bcrypt-hash) and 'grant: user read|write|admin database|*' lines; enables authentication")
		keyFile  = flag.String("key-file", "", "key that signs tickets and tokens, created if missing (default <data>/.flightd-key, in the bucket for s3://)")
		tokenTTL = flag.Duration("token-lifetime", flightsql.DefaultTokenLifetime, "how long a bearer token from Handshake stays valid")
		maxConns = flag.Int("max-connections", defaultMaxConnections(), "connections served at once, more are closed at once; 0: unlimited (the default is 4096 or half the file descriptor limit, the smaller)")
		connIdle = flag.Duration("connection-idle", flightsql.DefaultMaxConnectionIdle, "close a connection with no call running for this long")
		maxPrep  = flag.Int("max-prepared", flightsql.DefaultLimits.MaxPreparedStatements, "open prepared statements per client (user, or connection without auth)")
		prepIdle = flag.Duration("prepared-idle", flightsql.DefaultLimits.PreparedIdle, "close a prepared statement unused for this long")
		maxParam = flag.Int64("max-param-bytes", flightsql.DefaultLimits.MaxParamBytes, "bytes of parameters one DoPut may send, and of plans (estimated from their SQL, about 200 bytes a token) and bound parameters one client's prepared statements may hold")
		maxTxns  = flag.Int("max-transactions", flightsql.DefaultLimits.MaxTransactions, "open transactions per client (user, or connection without auth)")
		maxQuery = flag.Int("max-running-queries", flightsql.DefaultLimits.MaxRunningQueries, "result and change streams one client (user, or connection without auth) runs at once")
		txnIdle  = flag.Duration("transaction-idle", flightsql.DefaultLimits.TxnIdle, "roll back a transaction unused for this long")
		maxEnds  = flag.Int("max-endpoints", flightsql.DefaultLimits.MaxEndpoints, "endpoints a query result may split into for parallel readers, who ask with the session option flightd.max_endpoints")
		endBytes = flag.Int64("min-endpoint-bytes", flightsql.DefaultLimits.MinEndpointBytes, "stored bytes one endpoint of a split result reads at least")
		endLife  = flag.Duration("endpoint-lifetime", flightsql.DefaultLimits.EndpointLifetime, "how long the tickets of a split result stay redeemable")
		tlsCert  = flag.String("tls-cert", "", "TLS certificate (PEM)")
		tlsKey   = flag.String("tls-key", "", "TLS private key (PEM)")
		clientCA = flag.String("tls-client-ca", "", "CA (PEM) client certificates must be signed by (mTLS)")
		mtThresh = flag.Duration("freshness-threshold", plan.DefaultFreshnessThreshold, "a materialized table with a FRESHNESS below this runs CONTINUOUS, at or above it FULL, unless REFRESH_MODE says")
		grace    = flag.Duration("shutdown-grace", 30*time.Second, "on SIGTERM, how long running queries may go on before they are cancelled")
		force    = flag.Duration("shutdown-timeout", 10*time.Second, "on SIGTERM, how long calls may still run once -shutdown-grace has cancelled the queries; then their connections are closed, the tables closed and flightd exits (what is committed stays committed)")
		parallel = flag.Int("parallelism", 0, "goroutines one query's scans and aggregations use (0: one per core, 1: serial)")
		maxBytes = flag.Int("max-statement-bytes", flightsql.DefaultLimits.MaxStatementBytes, "longest SQL statement accepted, in bytes")
		filesDir = flag.String("files-dir", "", "directory of the server whose files COPY t FROM 'file' and COPY ... TO 'file' read and write (paths relative to it, never outside it); empty: COPY is refused")
		jobCkpt  = flag.Duration("job-checkpoint-interval", engine.DefaultJobCheckpointInterval, "how often a continuous job checkpoints its state and commits its target (its target lags its sources by about as much); negative: never (a restarted job reads its sources again)")
		maxJobs  = flag.Int("max-jobs", engine.DefaultMaxJobs, "continuous jobs (of INSERTs from a stream and of CONTINUOUS materialized tables) that may run in the warehouse; an INSERT or a materialized table's CREATE, RESUME or SET FRESHNESS that would start one more is refused (ResourceExhausted, SQLSTATE 53400); negative: no limit")
		jobLease = flag.Duration("job-lease", engine.DefaultJobLease, "lifetime of the lease in the warehouse by which one of the nodes sharing it runs each continuous job; a job whose node died runs on another within about 1.5 times this")
		advert   = flag.String("advertise", "", "host:port at which clients reach this node, named in the endpoints of query results; a result split over several endpoints (session option flightd.max_endpoints) goes round every live node of the warehouse that advertises (default: endpoints name no location, clients read them where they asked)")
		nodeID   = flag.String("node-id", "", "name of this node among those sharing the warehouse, for job leases: a node restarted under its name takes its jobs back at once, without waiting for -job-lease; must be unique among live nodes (default: random)")
		metaAge  = flag.Duration("metadata-max-age", -1, "how old what a query knows of a table's latest schema and snapshot may be before it asks the warehouse again: another node's commits are seen by queries that start more than this after them, this node's own at once (negative: 1s for an s3:// warehouse, 0 for a local directory)")
		gcPct    = flag.Int("gc-percent", 0, "the garbage collector's GOGC: heap growth between collections in percent of the live heap (0: $GOGC if set, else 200; -1: off, the memory limit alone triggers collections)")
		cpuProf  = flag.String("cpuprofile", "", "write a CPU profile (pprof) of the whole run to this file, ended at shutdown (SIGTERM or SIGINT)")
		pprofAt  = flag.String("pprof-addr", "", "serve Go's profiles (net/http/pprof: heap, allocs, goroutine, profile, and mutex and block, which it turns on) over HTTP on this address, without authentication: keep it on loopback (default: not served)")
		maxToks  = flag.Int("max-statement-tokens", flightsql.DefaultLimits.MaxStatementTokens, "most tokens (names, literals, operators) one SQL statement may have")
	)
	memLimit, queryMem, cacheMem, poolMem, lookupMem := sizeFlag{auto: true}, sizeFlag{auto: true}, sizeFlag{auto: true}, sizeFlag{auto: true}, sizeFlag{auto: true}
	prepMem := sizeFlag{auto: true}
	flag.Var(&prepMem, "max-prepared-memory", "bytes of plans (estimated from their SQL) and bound parameters the prepared statements of all clients may hold together (auto: 1/4 of -memory-limit, none without one; 0 or -1: no bound)")
	flag.Var(&memLimit, "memory-limit", "soft limit of the process's memory in bytes (auto or 0: 3/4 of the machine's or cgroup's memory, -1: none)")
	flag.Var(&queryMem, "query-memory", "bytes one statement's sorts, aggregations and joins may hold before spilling to disk, and its expressions' computed values at once (at least 512 MiB for those) (auto or 0: 1/4 of -memory-limit, at least 64 MiB; -1: unlimited)")
	flag.Var(&poolMem, "query-pool", "bytes the sorts, aggregations, joins and windows of all statements and continuous jobs may hold together; each spills (or fails where it cannot) past its fair share, the pool divided among the operators holding memory (auto: 1/2 of -memory-limit, none without one; 0 or -1: no pool)")
	flag.Var(&cacheMem, "cache-memory", "bytes of decoded table data kept in memory for scans (auto: 1/3 of -memory-limit; 0: no cache)")
	flag.Var(&lookupMem, "lookup-memory", "bytes the row caches of all lookup indexes hold together, whatever their tables' or requests' lookup.partial-cache options say; past it they keep fewer rows (auto or 0: 1/8 of -memory-limit, at least 64 MiB, 1 GiB without a limit; -1: no bound)")
	var obj objectFlags
	flag.StringVar(&obj.cfg.Endpoint, "s3-endpoint", "", "object store endpoint, http(s)://host:port (default $AWS_ENDPOINT_URL_S3, $AWS_ENDPOINT_URL, else AWS S3)")
	flag.StringVar(&obj.cfg.Region, "s3-region", "", "object store region (default $AWS_REGION, $AWS_DEFAULT_REGION, else us-east-1)")
	flag.StringVar(&obj.cfg.AccessKey, "s3-access-key", "", "object store access key (default $AWS_ACCESS_KEY_ID, else ~/.aws/credentials)")
	flag.StringVar(&obj.cfg.SecretKey, "s3-secret-key", "", "object store secret key (default $AWS_SECRET_ACCESS_KEY; prefer the environment: flags show in ps)")
	flag.StringVar(&obj.cacheDir, "object-cache-dir", "", "local directory for the disk cache of an s3:// warehouse's files; the blocks an earlier run left there are removed at start, nothing else (default: a new temporary directory)")
	flag.Int64Var(&obj.cacheBytes, "object-cache-bytes", 4<<30, "bytes of an s3:// warehouse's files kept on local disk so repeated queries do not fetch them again (0: no cache)")
	flag.Parse()
	if *cpuProf != "" {
		stop, err := startCPUProfile(*cpuProf)
		if err != nil {
			return err
		}
		defer stop()
	}
	if *pprofAt != "" {
		stop, err := servePprof(*pprofAt)
		if err != nil {
			return err
		}
		defer stop()
	}

	var (
		users  map[string]string
		grants []flightsql.Grant
	)
	if *authFile != "" {
		var err error
		if users, grants, err = flightsql.ReadAuthFile(*authFile); err != nil {
			return err
		}
		if len(grants) == 0 {
			log.Printf("flightd: %s has no grant: lines; its users can authenticate but not read or change any database", *authFile)
		}
	}
	lim := memoryLimit(memLimit)
	gogc := gcPercent(*gcPct, os.Getenv("GOGC"))
	queryBytes, cacheBytes, poolBytes := queryMemory(queryMem, lim), cacheMemory(cacheMem, lim), queryPool(poolMem, lim)
	lookupBytes := lookupMemory(lookupMem, lim)
	log.Printf("flightd: memory limit %d MiB, GOGC %d, query memory %d MiB, query pool %d MiB, cache %d MiB, lookup caches %d MiB", lim>>20, gogc, queryBytes>>20, poolBytes>>20, cacheBytes>>20, max(lookupBytes, 0)>>20)
	ctx := context.Background()
	wh, err := openWarehouse(ctx, *dataDir, obj)
	if err != nil {
		return err
	}
	defer wh.cleanup()
	var key []byte
	if *keyFile == "" {
		key, err = loadKey(wh.fs, path.Join(wh.root, ".flightd-key"))
	} else {
		key, err = loadKey(tablestore.NewLocalFS(), *keyFile)
	}
	if err != nil {
		return err
	}
	cfg := engine.Config{Mem: memory.NewGoAllocator(), FS: wh.fs, Root: wh.root, QueryMemory: queryBytes, QueryPool: poolBytes, Plan: plan.Options{FreshnessThreshold: *mtThresh}, SpillDir: wh.spill, CacheBytes: cacheBytes, LookupMemory: lookupBytes, Parallelism: *parallel, FilesDir: *filesDir, JobLease: *jobLease, MaxJobs: *maxJobs, NodeID: *nodeID, JobCheckpointInterval: *jobCkpt, MetadataMaxAge: *metaAge,
		Logf: func(format string, args ...any) { log.Printf("flightd: "+format, args...) }}
	if cfg.MetadataMaxAge < 0 {
		cfg.MetadataMaxAge = wh.metadataMaxAge
	}
	if *authFile != "" {
		cfg.OwnerGrants = flightsql.OwnerGrants(grants)
	}
	eng, err := engine.Open(ctx, cfg)
	if err != nil {
		return err
	}
	srv, err := flightsql.NewServer(eng, flightsql.Limits{
		MaxPreparedStatements: *maxPrep, PreparedIdle: *prepIdle, MaxParamBytes: *maxParam, MaxTransactions: *maxTxns, TxnIdle: *txnIdle,
		MaxStatementBytes: *maxBytes, MaxStatementTokens: *maxToks, MaxRunningQueries: *maxQuery,
		MaxPreparedMemory: preparedMemory(prepMem, lim),
		MaxEndpoints:      *maxEnds, MinEndpointBytes: *endBytes, EndpointLifetime: *endLife,
	})
	if err != nil {
		return errors.Join(err, eng.Close())
	}
	if *advert != "" {
		if _, _, err := net.SplitHostPort(*advert); err != nil {
			srv.Close()
			return errors.Join(fmt.Errorf("-advertise %q: want host:port: %w", *advert, err), eng.Close())
		}
		scheme := "grpc+tcp://"
		if *tlsCert != "" {
			scheme = "grpc+tls://"
		}
		if err := srv.Advertise(scheme+*advert, 0); err != nil {
			srv.Close()
			return errors.Join(err, eng.Close())
		}
	}
	fs, err := flightsql.NewFlightServer(srv, flightsql.Options{
		Users: users, Grants: grants, Key: key, TokenLifetime: *tokenTTL, MaxConnectionIdle: *connIdle,
		TLSCertFile: *tlsCert, TLSKeyFile: *tlsKey, ClientCAFile: *clientCA,
	})
	if err != nil {
		srv.Close()
		return errors.Join(err, eng.Close())
	}
	lis, err := flightsql.Listen(*addr, *maxConns)
	if err != nil {
		srv.Close()
		return errors.Join(err, eng.Close())
	}
	fs.InitListener(lis)

	// Graceful shutdown: stop accepting calls, end change streams (they
	// never finish), let running calls finish (commits included), cancel
	// result streams still running after the grace period, close the
	// connections of calls that outlive even that (a client stalled
	// mid-DoPut, a computation deaf to cancellation), then close the
	// store.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sig
		log.Printf("flightd: %v: shutting down", s)
		time.AfterFunc(*grace, func() {
			log.Printf("flightd: cancelling queries still running after %v", *grace)
			srv.CancelQueries()
			time.AfterFunc(*force, func() {
				log.Printf("flightd: closing the connections of calls still running %v after the cancel", *force)
				fs.Stop()
			})
		})
		srv.CancelStreams()
		fs.Shutdown()
	}()
	scheme := "grpc"
	if *tlsCert != "" {
		scheme = "grpc+tls"
	}
	log.Printf("flightd: serving Flight SQL on %s://%s, data in %s", scheme, fs.Addr(), wh.desc)
	serveErr := fs.Serve()
	srv.Close()
	return errors.Join(serveErr, eng.Close())
}

// startCPUProfile profiles the process's CPU into file until the returned
// stop is called.
func startCPUProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Printf("flightd: -cpuprofile: %v", err)
		}
	}, nil
}

// Sampling of the contention profiles -pprof-addr turns on: one mutex
// contention in mutexProfileFraction, and blocking (channels, selects,
// WaitGroups, mutexes) with a chance of its duration over blockProfileRate
// ns, so every wait of 100µs or more. Both are off by default in Go; these
// rates cost little next to the waits they find.
const (
	mutexProfileFraction = 10
	blockProfileRate     = 100_000
)

// servePprof serves net/http/pprof's handlers on addr until stop: heap
// profiles taken while a workload runs show what its memory holds, which a
// profile written at shutdown cannot, and the mutex and block profiles
// show where concurrent queries wait for each other.
func servePprof(addr string) (stop func(), err error) {
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-pprof-addr: %w", err)
	}
	runtime.SetMutexProfileFraction(mutexProfileFraction)
	runtime.SetBlockProfileRate(blockProfileRate)
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", httppprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", httppprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", httppprof.Trace)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Printf("flightd: -pprof-addr: %v", err)
		}
	}()
	log.Printf("flightd: profiles on http://%s/debug/pprof/", lis.Addr())
	return func() { hs.Close() }, nil
}
