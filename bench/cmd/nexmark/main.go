// Command nexmark runs the Nexmark queries on flightd: it starts flightd
// (or uses a running one), loads generated events, runs each query as a
// batch query and then as a streaming query while the events are ingested,
// and reports events/s, flightd's CPU time, latency and whether the
// streamed answer equals the batch answer.
//
//	go run -C bench ./cmd/nexmark -queries ../../shared/bench/nexmark/queries -events 1000000 -out results/
//	go run -C bench ./cmd/nexmark -ci    # 10,000 events; exits 1 if a streamed or job answer differs
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightd/flightd/bench/nexmark"
)

func main() {
	log.SetFlags(0)
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	var (
		queriesDir = flag.String("queries", sharedQueries(), "directory of the nexmark query files qN.sql")
		only       = flag.String("only", "", "queries to run, comma-separated (q0,q7); default all")
		events     = flag.Int64("events", 100_000, "events to generate")
		commit     = flag.Int("commit", 10_000, "events per commit")
		rate       = flag.Float64("rate", 0, "events per second of wall time while streaming (0: as fast as possible)")
		genRate    = flag.Int64("event-rate", 10_000, "the generator's events per second of event time (Beam's firstEventRate)")
		delayed    = flag.Float64("delayed", 0, "share of events emitted up to 3 s (event time) late")
		stream     = flag.Bool("stream", true, "also run the queries as streaming queries")
		paced      = flag.Float64("paced", 0, "with -stream, stream each query again with ingest paced at this share (0.8: 80%) of the events/s its first run reached, for the latency below the maximum rate; 0: no paced run")
		jobs       = flag.Bool("jobs", true, "with -stream, also run the queries that have a key as continuous jobs (INSERT INTO a keyed sink)")
		timeout    = flag.Duration("timeout", 10*time.Minute, "longest one query may take, batch or streaming")
		connect    = flag.String("connect", "", "use the flightd at this URI (grpc://host:port) instead of starting one")
		pid        = flag.Int("pid", 0, "with -connect: flightd's process id, for its CPU time")
		dataDir    = flag.String("data", "", "with -connect: flightd's data directory, for the latency")
		bin        = flag.String("flightd", "", "flightd binary to start (default: built from -src)")
		src        = flag.String("src", "..", "the flightd module to build cmd/flightd from")
		out        = flag.String("out", "", "write nexmark.json and nexmark.png into this directory")
		flinkDir   = flag.String("flink", "", "also run the queries on the Flink peer built in this directory (bench/nexmark/flink)")
		flinkReads = flag.String("flink-reads", string(nexmark.ReadsAll), "which events each Flink job reads: all (the kinds of events its query does not name into a blackhole, as flightd ingests every kind whichever query runs) or named (only the kinds its query names)")
		rounds     = flag.Int("rounds", 1, "run it all this many times, flightd and then the Flink peer each round, and print each query's flightd/Flink ratio per round and their median (the machine's speed drifts between the two systems' phases); with -out, each round's files go in DIR/round-N and the summary in DIR/rounds.json")
		ci         = flag.Bool("ci", false, "CI mode: 10,000 events in commits of 1,000 at 200 events/s of event time unless set; exit 1 if a streamed or job answer differs from the batch answer (also if it is equal only after a later progress marker), a stream or job fails, or a windowed query compared no row")
	)
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if *ci {
		if !set["events"] {
			*events = 10_000
		}
		if !set["commit"] {
			*commit = 1_000
		}
		if !set["event-rate"] {
			// 50 s of event time: most windows close before the input
			// ends (the watermark trails the last event by 4 s).
			*genRate = 200
		}
	}
	var names []string
	for _, n := range strings.Split(*only, ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	queries, err := nexmark.LoadQueries(*queriesDir, names)
	if err != nil {
		return err
	}
	reads, err := nexmark.ParseFlinkReads(*flinkReads)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	srv := &nexmark.Server{URI: *connect, Pid: *pid, DataDir: *dataDir}
	if *connect == "" {
		dir, err := os.MkdirTemp("", "nexmark")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		if *bin == "" {
			log.Printf("building flightd from %s", *src)
			if *bin, err = nexmark.BuildFlightd(ctx, *src, dir); err != nil {
				return err
			}
		}
		if srv, err = nexmark.StartFlightd(ctx, *bin, dir); err != nil {
			return err
		}
		defer srv.Stop()
	}
	cfg := nexmark.DefaultConfig()
	cfg.Rate = *genRate
	cfg.ProbDelayedEvent = *delayed
	opt := nexmark.Options{
		Events: *events, CommitEvents: *commit, Rate: *rate, Generator: cfg,
		Timeout: *timeout, Stream: *stream, Jobs: *jobs, PacedShare: *paced, Log: os.Stderr,
	}
	if *rounds < 1 {
		return fmt.Errorf("-rounds %d: want at least 1", *rounds)
	}
	var flinkWork string
	if *flinkDir != "" {
		if flinkWork, err = os.MkdirTemp("", "nexmark-flink"); err != nil {
			return err
		}
		defer os.RemoveAll(flinkWork)
	}
	var reps []*nexmark.Report
	for round := 1; round <= *rounds; round++ {
		roundOut := *out
		if *rounds > 1 && *out != "" {
			roundOut = filepath.Join(*out, fmt.Sprintf("round-%d", round))
			log.Printf("round %d of %d", round, *rounds)
		}
		rep, err := runRound(ctx, srv, queries, opt, roundOut, *flinkDir, flinkWork, *queriesDir, reads)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
	}
	if *rounds > 1 && *flinkDir != "" {
		sums := nexmark.SummarizeRounds(reps)
		fmt.Printf("\n%d rounds:\n", *rounds)
		nexmark.WriteRounds(os.Stdout, sums)
		if *out != "" {
			if err := nexmark.WriteRoundsFile(filepath.Join(*out, "rounds.json"), sums); err != nil {
				log.Print(err)
			}
		}
	}
	if !*ci {
		return nil
	}
	for i, rep := range reps {
		if c := nexmark.Count(rep); c.Differs+c.Late+c.Failed+c.Vacuous+c.JobDiffers+c.JobFailed+c.PacedDiffers+c.PacedFailed > 0 {
			return fmt.Errorf("nexmark, round %d: %d streamed answers differ from the batch answers, %d more only after a later progress marker, %d streams failed, %d compared nothing; jobs: %d differ, %d failed; paced: %d differ, %d failed",
				i+1, c.Differs, c.Late, c.Failed, c.Vacuous, c.JobDiffers, c.JobFailed, c.PacedDiffers, c.PacedFailed)
		}
	}
	return nil
}

// runRound runs the queries on flightd and then, with flinkDir, on the
// Flink peer (its CSV files written once into flinkWork), prints the
// table and writes the files into out.
func runRound(ctx context.Context, srv *nexmark.Server, queries []nexmark.Query, opt nexmark.Options, out, flinkDir, flinkWork, queriesDir string, reads nexmark.FlinkReads) (*nexmark.Report, error) {
	if out != "" {
		opt.Progress = func(rep *nexmark.Report) {
			if err := nexmark.WriteFiles(out, rep); err != nil {
				log.Print(err)
			}
		}
	}
	rep, err := nexmark.Run(ctx, memory.NewGoAllocator(), srv, queries, opt)
	if err != nil {
		return nil, err
	}
	if flinkDir != "" {
		log.Printf("running the queries on the Flink peer")
		if err := nexmark.RunFlink(ctx, flinkDir, flinkWork, queriesDir, reads, opt, rep); err != nil {
			return nil, err
		}
	}
	rep.Date = time.Now().UTC().Format("2006-01-02")
	rep.Machine = machine()
	nexmark.WriteTable(os.Stdout, rep)
	if out != "" {
		if err := nexmark.WriteFiles(out, rep); err != nil {
			log.Print(err)
		}
	}
	return rep, nil
}

// sharedQueries finds shared/bench/nexmark/queries beside the repository.
func sharedQueries() string {
	for _, d := range []string{"../shared/bench/nexmark/queries", "../../shared/bench/nexmark/queries"} {
		if _, err := os.Stat(d); err == nil {
			return d
		}
	}
	return "../../shared/bench/nexmark/queries"
}

// machine names the CPU and the cores this process sees.
func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%s, %d cores", model, runtime.NumCPU())
}
