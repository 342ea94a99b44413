package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/cache"
	"github.com/flightd/flightd/exec"
	"github.com/flightd/flightd/plan"
	"github.com/flightd/flightd/tablestore"
	"github.com/flightd/flightd/vectorized"
)

// DefaultDatabase is the database a new session starts in. Open creates it.
const DefaultDatabase = "default"

// TempDatabase holds temporary tables (bulk ingest with temporary=true).
// Open empties it, so they last until the server restarts; they are
// visible to every client, not private to a session.
const TempDatabase = "temp"

// Sentinel errors; flightsql maps them to gRPC codes.
var (
	// ErrInvalid marks bad input: a malformed statement, wrong parameters,
	// a type mismatch.
	ErrInvalid = errors.New("invalid argument")
	// ErrInvalidText marks input text that is not UTF-8 (SQLSTATE 22021).
	ErrInvalidText = fmt.Errorf("not UTF-8: %w", ErrInvalid)
	// ErrNotSupported marks valid requests flightd does not implement yet.
	ErrNotSupported = errors.New("not supported")
	// ErrTxnNotFound marks an unknown or finished transaction id.
	ErrTxnNotFound = errors.New("transaction not found")
	// ErrTxnActive marks a BEGIN in a session or statement that is in a
	// transaction already.
	ErrTxnActive = errors.New("a transaction is already in progress")
	// ErrNoTxn marks a COMMIT or ROLLBACK with no transaction in progress.
	ErrNoTxn = errors.New("no transaction is in progress")
	// ErrTxnAborted marks a statement or COMMIT in a transaction that a write
	// statement failed half-way in: it holds part of that statement's
	// rows, so only ROLLBACK is left (SQLSTATE 25P02, as in PostgreSQL).
	ErrTxnAborted = errors.New("current transaction is aborted, statements are refused until ROLLBACK")
	// ErrLimit marks a request refused because it would pass a limit the
	// server is configured with (SQLSTATE 53400).
	ErrLimit = errors.New("configuration limit exceeded")
	// ErrMemoryLimit is exec's: a statement, or what the server holds for
	// its clients, would pass a memory bound (SQLSTATE 53200).
	ErrMemoryLimit = exec.ErrMemoryLimit
)

// MaxMapNesting is how deep MAP types may nest in a type the engine takes
// (vectorized.MaxMapNesting: arrow-go builds a MAP's items twice per level).
const MaxMapNesting = vectorized.MaxMapNesting

// Config configures an Engine.
type Config struct {
	// Mem allocates every Arrow buffer of every statement. Required.
	Mem memory.Allocator
	// FS and Root locate the warehouse; FS defaults to the local file system.
	FS   tablestore.FS
	Root string
	// BatchSize is the target rows per batch; 0 means exec.DefaultBatchSize.
	BatchSize int
	// Plan configures the planner (rules switched off, for tests).
	Plan plan.Options
	// QueryMemory is the bytes sort, hash aggregation and hash join of one
	// statement may hold before they spill to disk; 0 means
	// DefaultQueryMemory, negative means unlimited.
	QueryMemory int64
	// QueryPool is the bytes the operators of all statements and
	// continuous jobs may hold together (exec.MemoryPool): each spills past
	// its fair share of it. 0 means no pool (QueryMemory bounds each
	// operator alone).
	QueryPool int64
	// SpillDir is where operators spill; empty means the system temp dir.
	SpillDir string
	// CacheBytes bounds the table store's cache of decoded columns; 0
	// disables it.
	CacheBytes int64
	// LookupMemory bounds the bytes the row caches of all lookup indexes
	// hold together (each is bounded alone by its table's or request's
	// options); past it they keep fewer rows. 0 means DefaultLookupMemory,
	// negative no bound.
	LookupMemory int64
	// Parallelism is how many goroutines one statement's parallel scans
	// and aggregations use; 0 means runtime.GOMAXPROCS(0), 1 serial.
	Parallelism int
	// Scheduler starts what runs the scheduled refreshes of materialized
	// tables; nil means the embedded one (mtable.go).
	Scheduler func(*Engine) Scheduler
	// OwnerGrants returns the grants of a user (Session.SetUser), with
	// which the refreshes and continuous job of a materialized table that
	// user owns read its sources; nil when there is no authentication
	// (they read everything).
	OwnerGrants func(user string) Authorizer
	// JobLease is the lifetime of the lease by which one of the nodes
	// sharing a warehouse runs each continuous job (job_lease.go): a job
	// whose node died runs again on another within about 1.5 times this.
	// 0 means DefaultJobLease.
	JobLease time.Duration
	// NodeID names this node in job leases; a node restarted under the
	// same id takes its jobs back at once. It must be unique among the
	// live nodes of a warehouse. Empty means random.
	NodeID string
	// FilesDir is the directory of the server whose files COPY reads and
	// writes (copy.go); empty refuses COPY.
	FilesDir string
	// JobCheckpointInterval is how often a continuous job checkpoints its
	// state and commits (job.go); 0 means DefaultJobCheckpointInterval,
	// negative never (a restart then reads the sources in full).
	JobCheckpointInterval time.Duration
	// MaxJobs is how many continuous jobs (of INSERTs and of CONTINUOUS
	// materialized tables) may run in the warehouse before a statement
	// starting another is refused (ErrLimit): each holds its state and
	// goroutines in every node's memory. 0 means DefaultMaxJobs, negative no limit.
	MaxJobs int
	// MetadataMaxAge is how old what a statement learns of a table's
	// latest schema and snapshot may be (tablestore.Options): commits of
	// other nodes are seen by statements that start more than this after
	// them, this node's own at once. 0 asks storage at every statement.
	MetadataMaxAge time.Duration
	// Logf, when set, reports events an operator looks for in a node's
	// log: which node runs a job, and when it stops running it.
	Logf func(format string, args ...any)
}

func (e *Engine) logf(format string, args ...any) {
	if e.cfg.Logf != nil {
		e.cfg.Logf(format, args...)
	}
}

// DefaultQueryMemory is the default per-statement memory budget.
const DefaultQueryMemory = 1 << 30

// DefaultLookupMemory is the default bound of all lookup caches together.
const DefaultLookupMemory = 1 << 30

// Engine runs statements against one table store. It is safe for concurrent
// use; each client works through its own Session.
type Engine struct {
	cfg   Config
	store *tablestore.Store

	mu   sync.Mutex
	txns map[string]*Txn

	sched     Scheduler
	refreshMu sync.Map // tablestore.Ident -> *sync.Mutex: one refresh at a time per table

	// Continuous jobs (job.go) run under jobCtx until Close.
	jobsMu    sync.Mutex
	jobs      map[string]*job
	jobCtx    context.Context
	jobCancel context.CancelFunc
	// node names this engine in job leases; followDone closes when the
	// loop following other nodes' jobs ended.
	node       string
	followDone chan struct{}

	lookups      lookups       // lookup indexes by table version and options (lookup.go)
	lookupBudget *cache.Budget // of their row caches together (Config.LookupMemory)

	pool *exec.MemoryPool // nil without Config.QueryPool
}

// Open opens (or initialises) the warehouse and makes sure the default
// database exists.
func Open(ctx context.Context, cfg Config) (*Engine, error) {
	if cfg.Mem == nil {
		return nil, fmt.Errorf("engine: Config.Mem is required: %w", ErrInvalid)
	}
	if cfg.FS == nil {
		cfg.FS = tablestore.NewLocalFS()
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = exec.DefaultBatchSize
	}
	switch {
	case cfg.QueryMemory == 0:
		cfg.QueryMemory = DefaultQueryMemory
	case cfg.QueryMemory < 0:
		cfg.QueryMemory = 0 // exec: unlimited
	}
	store, err := tablestore.Open(ctx, cfg.FS, cfg.Root, tablestore.Options{Mem: cfg.Mem, CacheBytes: cfg.CacheBytes, MetadataMaxAge: cfg.MetadataMaxAge})
	if err != nil {
		return nil, fmt.Errorf("open warehouse %s: %w", cfg.Root, err)
	}
	if err := store.CreateDatabase(ctx, DefaultDatabase, true); err != nil {
		_ = store.Close()
		return nil, err
	}
	if err := store.DropDatabase(ctx, TempDatabase, true, true); err != nil {
		_ = store.Close()
		return nil, fmt.Errorf("drop temporary tables: %w", err)
	}
	if err := store.CreateDatabase(ctx, TempDatabase, false); err != nil {
		_ = store.Close()
		return nil, err
	}
	e := &Engine{cfg: cfg, store: store, txns: make(map[string]*Txn), jobs: map[string]*job{}, node: newNodeID(), followDone: make(chan struct{})}
	if cfg.QueryPool > 0 {
		e.pool = exec.NewMemoryPool(cfg.QueryPool)
	}
	if cfg.LookupMemory == 0 {
		cfg.LookupMemory = DefaultLookupMemory
	}
	e.lookupBudget = cache.NewBudget(cfg.LookupMemory)
	if cfg.Scheduler == nil {
		cfg.Scheduler = newEmbeddedScheduler
	}
	e.sched = cfg.Scheduler(e)
	if cfg.NodeID != "" {
		e.node = cfg.NodeID
	}
	e.jobCtx, e.jobCancel = context.WithCancel(context.WithoutCancel(ctx))
	go e.followJobs()
	err = e.startJobs(ctx)
	if err == nil {
		err = e.startContinuous(ctx)
	}
	if err != nil {
		e.stopJobs()
		e.sched.Close()
		_ = store.Close()
		return nil, fmt.Errorf("start continuous jobs: %w", err)
	}
	return e, nil
}

// Close stops the continuous jobs, rolls back open transactions and closes
// the store after in-flight commits finished.
func (e *Engine) Close() error {
	e.stopJobs()
	e.mu.Lock()
	txns := e.txns
	e.txns = map[string]*Txn{}
	e.mu.Unlock()
	for _, tx := range txns {
		tx.rollback()
	}
	e.sched.Close()
	e.closeLookups()
	return e.store.Close()
}

// Store gives read access to the catalog for metadata requests.
func (e *Engine) Store() *tablestore.Store { return e.store }

// MemoryPool is the pool statements' operators reserve in (nil: none).
func (e *Engine) MemoryPool() *exec.MemoryPool { return e.pool }

// Mem is the allocator statements use.
func (e *Engine) Mem() memory.Allocator { return e.cfg.Mem }

// execContext starts one statement's execution: its allocator, batch
// size, statement time, memory budget and pool, and spill directory. Its
// reservations must be released (exec.Context.ReleaseMemory) when the
// statement ends.
func (e *Engine) execContext() *exec.Context {
	ec := exec.NewContext(e.cfg.Mem)
	ec.BatchSize = e.cfg.BatchSize
	ec.MemoryLimit = e.cfg.QueryMemory
	ec.Pool = e.pool
	ec.TempDir = e.cfg.SpillDir
	ec.Parallelism = e.cfg.Parallelism
	return ec
}
