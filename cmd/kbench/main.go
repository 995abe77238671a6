// Command kbench compares kbroker with franz-go's kfake, or measures any
// Kafka broker, with franz-go (kgo) clients.
//
//	go run ./cmd/kbench --quick                     # smoke run, about 20 s
//	go run ./cmd/kbench --rounds 5                  # the full comparison
//	go run ./cmd/kbench --only produce,consume --case '1 KiB × 1 ' --rounds 7
//	go run ./cmd/kbench --addr localhost:9092 --pid $(pgrep -x kbroker) --only produce,consume,e2e
//
// It starts the brokers itself, each in its own process so that the
// broker's CPU time (utime+stime from /proc/<pid>/stat) is measured apart
// from the clients', which run in kbench:
//
//   - kbroker: broker.StartInProcess in a child kbench (the hidden
//     "kbench serve" subcommand), with the kbroker command's defaults
//     (128 MiB commit-log files, async flush unless --flush sync);
//   - kbroker-bin: the kbroker binary, built from ./cmd/kbroker of the
//     module kbench runs in (or --kbroker-bin);
//   - kfake-disk: kfake.NewCluster with one node and kfake.DataDir, the
//     peer to beat (with kfake.SyncWrites for the sync flush rows);
//   - kfake-mem: kfake without a data directory, a second reference;
//   - kafka: Apache Kafka's own broker (single-node KRaft, 1 GiB heap as
//     its start script sets), its jars resolved by scripts/kafka-ref.sh
//     with Maven, its data beside the others'; sync flushing is
//     flush.messages=1, its closest equivalent;
//   - floor-null, floor-write (produce only): the least a broker can do,
//     reading and answering produce requests without storing them, or
//     writing their batches to files with write(2) and nothing else; they
//     show what the client, loopback TCP and the page cache cost alone;
//   - floor-read (produce, direct consume, e2e): the consume floor, which
//     keeps the produced batches in memory and answers fetches with one
//     writev of them: no files, no validation, no groups.
//
// Every round starts fresh brokers on empty data directories and runs
// each case on each broker in turn, the order rotating from round to
// round, so that a noisy moment of a shared machine does not always hit
// the same broker. Medians over the rounds are reported as Markdown
// tables with the spread of the first column ((max−min)/median) and the
// ratios kbroker/kfake. Workloads (--only):
//
//   - produce: 100 B and 1 KiB records to 1 and 8 partitions, one kgo
//     client (acks=all, idempotent, linger 0, no compression), to 64
//     partitions from 8 clients, and 1 KiB records to 1,000 partitions,
//     as fast as they go: records/s, MB/s, the produce requests' round trips (ack
//     p50/p99: from writing a request to reading its response, kgo's
//     BrokerE2E hook), broker and client CPU seconds per GB of record
//     values, and the broker's Go heap allocation per GB;
//   - consume: the produce cases' topics read back from the start, by
//     direct partition assignment (1 partition) and through a consumer
//     group of one and of four members (8 partitions), new clients per
//     pass;
//   - e2e: 1 KiB records at a fixed rate (10 k records/s) from one client
//     to another through a one-partition topic: latency p50/p99/p99.9
//     from the Produce call to the record's arrival in PollFetches;
//   - sync: 8 producers at once (8 clients, 8 partitions) against each
//     broker flushing before it acknowledges (kbroker --flush sync,
//     kfake SyncWrites) and not (async);
//   - startup: exec to answering ApiVersions and Metadata, on an empty
//     data directory and on one holding --start-data-mb of records after
//     a clean stop;
//   - raw (only when named): produce without a client library, one
//     prebuilt request per connection sent over and over (rawproduce.go),
//     so that the broker rather than kgo is the limit: 100 B and 1 KiB
//     records to 1 and 1,000 partitions;
//   - rawconsume (only when named): consume without a client library,
//     Fetch requests on raw connections with kgo's default limits, the
//     responses walked batch header by batch header (rawconsume.go), so
//     that the broker rather than the kgo consumer's decoding is the
//     limit: 100 B and 1 KiB records, 1 and 8 partitions (1,000 with
//     --case), read by 1 and 4 connections (--rawconsume-conns).
//
// Every case also reports the broker process's resident memory from
// /proc/<pid>/status: its peak during the case (VmHWM, reset at the
// start), and the medians of VmRSS and of its anonymous part (RssAnon:
// heaps, as opposed to resident pages of mapped files) sampled every
// 100 ms; for start-up, the RSS once ready and the peak since exec.
//
// With --addr no broker is started: produce, consume and e2e run against
// that address (CPU figures only with --pid). --profile DIR writes CPU and
// allocation profiles of the broker for each case, and its live heap at
// the end of the case with the runtime's memory figures (kbroker and kfake,
// not kbroker-bin). --latency-log DIR writes every produce ack and
// end-to-end latency with the time it was recorded, to find when the slow
// ones happen. Progress goes to standard error, the tables to standard
// output.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "serve" {
		err = serveMain(os.Args[2:])
	} else {
		err = benchMain(os.Args[1:], os.Stdout, os.Stderr)
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	default:
		fmt.Fprintf(os.Stderr, "kbench: %v\n", err)
		os.Exit(1)
	}
}

// workloads are the names --only accepts, in the order they run; scale,
// raw and rawconsume run only when named.
var workloads = []string{"produce", "consume", "e2e", "sync", "startup", "scale", "raw", "rawconsume"}

// defaultWorkloads are the workloads run without --only.
var defaultWorkloads = workloads[:5]

// options is the command line.
type options struct {
	latencyLog    string
	addr          string
	pid           int
	brokers       []string
	rounds        int
	only          []string
	caseFilter    string
	flush         string
	segmentBytes  int64
	kbrokerSet    []string
	produceMB     int64
	consumePasses int
	// consumeBatch is the batch size of the consume topics (fillTopic);
	// 0 reads the produce cases' topics.
	consumeBatch int
	e2eRate      int
	e2eSeconds   float64
	// e2eLinger is the end-to-end producer's linger (0: none, as kgo's
	// default).
	e2eLinger   time.Duration
	syncMB      int64
	startDataMB int64
	// scalePartitions are the partition counts of the scale workload.
	scalePartitions []int
	settle          time.Duration
	dir             string
	profile         string
	jsonOut         string
	kbrokerBin      string
	raw             rawOptions
	rawConsume      rawConsumeOptions
}

func parseOptions(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("kbench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	quick := fs.Bool("quick", false, "smoke run (about 20 s): 1 round, small volumes; flags given explicitly still apply")
	fs.StringVar(&o.addr, "addr", "", "benchmark the broker at `host:port` instead of starting brokers (produce, consume, e2e)")
	fs.IntVar(&o.pid, "pid", 0, "with --addr: the broker's `pid`, for its CPU time")
	brokers := fs.String("brokers", "kbroker,kfake-disk,kfake-mem", "brokers to start: `list` of "+strings.Join(brokerKinds, ", "))
	fs.IntVar(&o.rounds, "rounds", 3, "`rounds`: every case runs once per round on each broker; medians are reported")
	only := fs.String("only", strings.Join(defaultWorkloads, ","), "workloads to run: `list` of "+strings.Join(workloads, ", ")+" (scale, raw and rawconsume only when named)")
	fs.StringVar(&o.caseFilter, "case", "", "run only the produce and consume cases whose name matches `regexp` (e.g. '1 KiB × 1 ')")
	fs.StringVar(&o.flush, "flush", "async", "kbroker's flush `mode` for produce, consume and e2e: async or sync")
	fs.Int64Var(&o.segmentBytes, "segment-bytes", 128<<20, "kbroker's commit-log file size in `bytes` (kbroker and kbroker-bin)")
	fs.Func("kbroker-set", "kbroker (in-process) setting `name=value`, Kafka property names as in --config files, e.g.\n"+
		"kbroker.fetch.copy.threshold.bytes=1048576 (repeatable)", func(v string) error {
		if _, _, ok := strings.Cut(v, "="); !ok {
			return fmt.Errorf("%q is not name=value", v)
		}
		o.kbrokerSet = append(o.kbrokerSet, v)
		return nil
	})
	fs.Int64Var(&o.produceMB, "produce-mb", 512, "`MB` of record values per produce case")
	fs.IntVar(&o.consumePasses, "consume-passes", 2, "reads of the topic per consume case (`n`), after one unmeasured")
	fs.IntVar(&o.consumeBatch, "consume-batch-bytes", 0, "write the consume cases' topics in batches of `bytes` (the same data on every broker),\n"+
		"instead of reading the produce cases' topics, whose batches depend on the broker's speed (0)")
	fs.IntVar(&o.e2eRate, "e2e-rate", 10000, "end-to-end `records/s`")
	fs.Float64Var(&o.e2eSeconds, "e2e-seconds", 10, "end-to-end measured `seconds` (after a warm-up second)")
	fs.DurationVar(&o.e2eLinger, "e2e-linger", 0, "end-to-end producer's `linger` (e.g. 5ms, the Java producer's default),\n"+
		"for batches of many records at a low rate")
	fs.Int64Var(&o.syncMB, "sync-mb", 256, "`MB` of record values per flush case")
	fs.Int64Var(&o.startDataMB, "start-data-mb", 1024, "`MB` of record values in the data directory of the second start-up case")
	scaleParts := fs.String("scale-partitions", "1,100,1000,10000", "partition `counts` of the scale workload (topics of 5 partitions)")
	fs.DurationVar(&o.settle, "settle", time.Second, "pause after starting brokers, before the first case")
	fs.StringVar(&o.dir, "dir", os.TempDir(), "`directory` for the brokers' data directories (removed afterwards)")
	fs.StringVar(&o.profile, "profile", "", "write CPU, allocation and heap profiles of the broker for each case into `directory`")
	fs.StringVar(&o.jsonOut, "json", "", "also write every sample to `file` as JSON")
	fs.StringVar(&o.latencyLog, "latency-log", "", "write every produce ack and end-to-end latency of each case, in the order measured, into `directory`\n"+
		"(one CSV file per case, broker and round; produce, raw produce and end to end: unix_ns,latency_ns), to see when slow ones happen")
	fs.IntVar(&o.raw.conns, "raw-conns", 4, "raw workload: `connections` producing at once")
	fs.IntVar(&o.raw.inflight, "raw-inflight", 4, "raw workload: outstanding `requests` per connection")
	fs.IntVar(&o.raw.requestKB, "raw-request-kb", 1024, "raw workload: `KiB` of record values per request")
	fs.IntVar(&o.raw.batchKB, "raw-batch-kb", 0, "raw workload: `KiB` of record values per batch, the requests taking each connection's\npartitions in turn (16: the Java producer's batch.size); 0 spreads a request over all of them")
	rawConsumeConns := fs.String("rawconsume-conns", "1,4", "rawconsume workload: `counts` of connections reading at once, one case each")
	fs.BoolVar(&o.rawConsume.crc, "rawconsume-crc", false, "rawconsume workload: check every batch's CRC-32C (the client's cost; off to compare brokers)")
	fs.DurationVar(&o.rawConsume.minTime, "rawconsume-time", 2*time.Second, "rawconsume workload: read whole passes, after --consume-passes, until this `duration` has passed\n(one pass from the page cache is too short for the CPU times' 10 ms tick)")
	fs.StringVar(&o.kbrokerBin, "kbroker-bin", "", "kbroker `binary` for kbroker-bin (default: go build ./cmd/kbroker)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "Usage: kbench [flags]\n\n"+
				"Benchmarks kbroker against franz-go's kfake (or the broker at --addr) with kgo clients:\n"+
				"produce, consume, end-to-end latency, sync flush and start-up, in rounds, reporting\n"+
				"medians and kbroker/kfake ratios as Markdown tables. Brokers run in child processes,\n"+
				"so broker CPU is measured apart from the clients'. raw and rawconsume produce and consume\n"+
				"without a client library (prebuilt Produce requests; Fetch requests whose responses are\n"+
				"walked batch by batch), so that the broker, not kgo, is the limit. See docs/BENCHMARKS.md.\n\nFlags:\n\n")
			fs.SetOutput(stderr)
			fs.PrintDefaults()
		}
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q (kbench -h for usage)", fs.Args())
	}
	if *quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		quickDefaults := map[string]func(){
			"rounds":           func() { o.rounds = 1 },
			"produce-mb":       func() { o.produceMB = 32 },
			"consume-passes":   func() { o.consumePasses = 1 },
			"e2e-seconds":      func() { o.e2eSeconds = 1 },
			"sync-mb":          func() { o.syncMB = 16 },
			"start-data-mb":    func() { o.startDataMB = 32 },
			"scale-partitions": func() { *scaleParts = "1,100" },
			"settle":           func() { o.settle = 100 * time.Millisecond },
			"rawconsume-time":  func() { o.rawConsume.minTime = 200 * time.Millisecond },
		}
		for name, apply := range quickDefaults {
			if !set[name] {
				apply()
			}
		}
	}
	for _, f := range splitList(*rawConsumeConns) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > 64 {
			return o, fmt.Errorf("--rawconsume-conns: %q is not a count from 1 to 64", f)
		}
		o.rawConsume.conns = append(o.rawConsume.conns, n)
	}
	for _, f := range splitList(*scaleParts) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || (n > 1 && n%5 != 0) {
			return o, fmt.Errorf("--scale-partitions: %q is not 1 or a positive multiple of 5", f)
		}
		o.scalePartitions = append(o.scalePartitions, n)
	}
	o.brokers = splitList(*brokers)
	for _, b := range o.brokers {
		if !slices.Contains(brokerKinds, b) {
			return o, fmt.Errorf("--brokers: unknown broker %q", b)
		}
	}
	o.only = splitList(*only)
	for _, w := range o.only {
		if !slices.Contains(workloads, w) {
			return o, fmt.Errorf("--only: unknown workload %q", w)
		}
	}
	for _, b := range o.brokers {
		served := []string{"produce", "raw"}
		if b == "floor-read" {
			served = append(served, "consume", "e2e", "rawconsume")
		}
		for _, w := range o.only {
			if strings.HasPrefix(b, "floor") && !slices.Contains(served, w) {
				return o, fmt.Errorf("--brokers %s serves only the %s workloads: name them with --only", b, strings.Join(served, ", "))
			}
		}
	}
	if o.caseFilter != "" {
		if _, err := regexp.Compile(o.caseFilter); err != nil {
			return o, fmt.Errorf("--case: %w", err)
		}
	}
	if o.flush != "async" && o.flush != "sync" {
		return o, fmt.Errorf("--flush: %q is not async or sync", o.flush)
	}
	if o.raw.conns < 1 || o.raw.inflight < 1 || o.raw.requestKB < 1 {
		return o, errors.New("--raw-conns, --raw-inflight and --raw-request-kb must be positive")
	}
	if o.rawConsume.minTime < 0 {
		return o, errors.New("--rawconsume-time must not be negative")
	}
	if o.raw.batchKB < 0 {
		return o, errors.New("--raw-batch-kb must not be negative")
	}
	if o.consumeBatch < 0 || o.consumeBatch > 64<<20 {
		return o, errors.New("--consume-batch-bytes: 0 to 64 MiB")
	}
	if o.rounds < 1 || o.produceMB < 1 || o.consumePasses < 1 || o.e2eRate < 1 || o.e2eSeconds <= 0 || o.e2eLinger < 0 || o.syncMB < 1 || o.startDataMB < 1 {
		return o, errors.New("rounds, volumes, passes, rate and seconds must be positive")
	}
	if o.addr != "" {
		o.brokers = []string{"external"}
		o.only = slices.DeleteFunc(o.only, func(w string) bool { return w == "sync" || w == "startup" || w == "scale" })
	}
	return o, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// benchMain runs the benchmarks and prints the report.
func benchMain(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	e := &env{self: self, kbroker: o.kbrokerBin, addr: o.addr, pid: o.pid, segmentBytes: o.segmentBytes, kbrokerSet: o.kbrokerSet}
	base, err := os.MkdirTemp(o.dir, "kbench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}
	start := time.Now()
	b := &bench{o: o, e: e, base: base, log: stderr, res: &results{}, started: start}
	runErr := b.run(ctx)
	fmt.Fprintf(stderr, "kbench: %v in %.1f s\n", statusWord(runErr), time.Since(start).Seconds())
	b.res.print(stdout)
	if o.jsonOut != "" {
		if err := b.res.writeJSON(o.jsonOut); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

func statusWord(err error) string {
	if err != nil {
		return "stopped by an error"
	}
	return "done"
}

// bench is one run of the benchmarks.
type bench struct {
	o    options
	e    *env
	base string
	log  io.Writer
	res  *results
	// started names the run's topics.
	started time.Time
}

func (b *bench) has(w string) bool { return slices.Contains(b.o.only, w) }

// run runs every round.
func (b *bench) run(ctx context.Context) error {
	var filled map[string]string
	if b.has("startup") {
		var err error
		if filled, err = b.fillStartDirs(ctx); err != nil {
			return err
		}
	}
	for round := 1; round <= b.o.rounds; round++ {
		if b.has("produce") || b.has("consume") || b.has("e2e") || b.has("raw") || b.has("rawconsume") {
			if err := b.loadRound(ctx, round); err != nil {
				return err
			}
		}
		if b.has("sync") {
			if err := b.syncRound(ctx, round); err != nil {
				return err
			}
		}
		if b.has("startup") {
			if err := b.startRound(round, filled); err != nil {
				return err
			}
		}
		if b.has("scale") {
			if err := b.scaleRound(ctx, round); err != nil {
				return err
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// specs are the brokers of the load workloads.
func (b *bench) specs() []brokerSpec {
	var out []brokerSpec
	for _, k := range b.o.brokers {
		flush := "async"
		if strings.HasPrefix(k, "kbroker") {
			flush = b.o.flush
		}
		out = append(out, specFor(k, flush))
	}
	return out
}

// startAll starts specs on fresh directories under the round's directory.
func (b *bench) startAll(specs []brokerSpec, round int) ([]*brokerProc, error) {
	var procs []*brokerProc
	for _, s := range specs {
		bp, err := startBroker(b.e, s, filepath.Join(b.base, fmt.Sprintf("r%d-%s", round, s.name)))
		if err != nil {
			stopAll(procs)
			return nil, err
		}
		procs = append(procs, bp)
	}
	time.Sleep(b.o.settle)
	return procs, nil
}

// stopAll stops the brokers and removes their directories.
func stopAll(procs []*brokerProc) error {
	var errs []error
	for _, bp := range procs {
		errs = append(errs, bp.stop())
	}
	return errors.Join(errs...)
}

// rotate is procs starting at the round's turn.
func rotate[T any](xs []T, round int) []T {
	k := (round - 1) % len(xs)
	return append(slices.Clone(xs[k:]), xs[:k]...)
}

// loadRound runs the produce, consume and e2e cases of one round.
func (b *bench) loadRound(ctx context.Context, round int) error {
	procs, err := b.startAll(b.specs(), round)
	if err != nil {
		return err
	}
	defer func() {
		stopAll(procs)
		for _, bp := range procs {
			os.RemoveAll(filepath.Join(b.base, fmt.Sprintf("r%d-%s", round, bp.spec.name)))
		}
	}()
	order := rotate(procs, round)
	tag := fmt.Sprintf("%d-r%d", b.started.UnixNano(), round) // new topics on an external broker too
	match := func(name string) bool {
		ok, _ := regexp.MatchString(b.o.caseFilter, name)
		return ok
	}
	for _, pc := range produceCases {
		// A produce case runs if selected, or if a selected consume case
		// reads its topic (then it is not reported).
		report := b.has("produce") && match(pc.name())
		needed := report
		for _, cc := range consumeCases {
			needed = needed || (b.has("consume") && b.o.consumeBatch == 0 && cc.from == pc && match(cc.name()))
		}
		if !needed {
			continue
		}
		for _, bp := range order {
			m, err := b.measureLogged(bp, "produce", pc.name(), round, func(lw *latencyFile) (metrics, error) {
				return runProduce(ctx, bp, pc, pc.topic(tag), b.o.produceMB*1e6, lw)
			})
			if err != nil {
				return err
			}
			if report {
				b.record("produce", pc.name(), bp, round, m, "records_s", "mb_s", "ack_p99", "broker_cpu", "rss_peak_mb")
			}
		}
	}
	if b.has("raw") {
		if err := b.rawCases(ctx, order, tag, round, match); err != nil {
			return err
		}
	}
	if b.has("consume") {
		filled := map[string]bool{}
		for _, cc := range consumeCases {
			if !match(cc.name()) {
				continue
			}
			topic := cc.from.topic(tag)
			if b.o.consumeBatch > 0 {
				topic = fmt.Sprintf("consume-%d-%d-%d-%s", cc.from.size, cc.from.partitions, b.o.consumeBatch, tag)
			}
			for _, bp := range order {
				if cc.group && bp.spec.kind == "floor-read" {
					continue // the floor has no group coordinator
				}
				if b.o.consumeBatch > 0 && !filled[bp.spec.name+topic] {
					fmt.Fprintf(b.log, "round %d/%d filling %s on %s\n", round, b.o.rounds, topic, bp.spec.name)
					if err := fillTopic(ctx, bp.addr, cc.from, topic, b.o.produceMB*1e6, b.o.consumeBatch); err != nil {
						return fmt.Errorf("%s on %s: %w", cc.name(), bp.spec.name, err)
					}
					filled[bp.spec.name+topic] = true
				}
				m, err := b.measure(bp, "consume", cc.name(), round, func() (metrics, error) {
					return runConsume(ctx, bp, cc, topic, b.o.consumePasses)
				})
				if err != nil {
					return err
				}
				b.record("consume", cc.name(), bp, round, m, "records_s", "mb_s", "broker_cpu", "rss_peak_mb")
			}
		}
	}
	if b.has("rawconsume") {
		if err := b.rawConsumeCases(ctx, order, tag, round, match); err != nil {
			return err
		}
	}
	if b.has("e2e") {
		name := fmt.Sprintf("%d records/s", b.o.e2eRate)
		if b.o.e2eLinger > 0 {
			name += fmt.Sprintf(", linger %v", b.o.e2eLinger)
		}
		for _, bp := range order {
			d := time.Duration(b.o.e2eSeconds * float64(time.Second))
			m, err := b.measureLogged(bp, "e2e", name, round, func(lw *latencyFile) (metrics, error) {
				return runE2E(ctx, bp, b.o.e2eRate, b.o.e2eLinger, d, lw)
			})
			if err != nil {
				return err
			}
			b.record("e2e", name, bp, round, m, "p50", "p99", "p999", "rss_peak_mb")
		}
	}
	return nil
}

// syncRound runs the flush comparison of one round: each kbroker and
// kfake-disk of --brokers, async and sync.
func (b *bench) syncRound(ctx context.Context, round int) error {
	var specs []brokerSpec
	for _, k := range b.o.brokers {
		if k != "kfake-mem" {
			specs = append(specs, specFor(k, "async"), specFor(k, "sync"))
		}
	}
	if len(specs) == 0 {
		return nil
	}
	procs, err := b.startAll(specs, round)
	if err != nil {
		return err
	}
	defer stopAll(procs)
	name := fmt.Sprintf("%d producers", syncProducers)
	for _, bp := range rotate(procs, round) {
		m, err := b.measure(bp, "sync", name, round, func() (metrics, error) {
			return runSyncFlush(ctx, bp, b.o.syncMB*1e6)
		})
		if err != nil {
			return err
		}
		b.record("sync", name, bp, round, m, "records_s", "ack_p99", "rss_peak_mb")
	}
	return nil
}

// fillStartDirs fills one data directory per broker kind with
// --start-data-mb of records (kbroker-bin shares kbroker's format and so
// its directory; kfake-mem keeps nothing).
func (b *bench) fillStartDirs(ctx context.Context) (map[string]string, error) {
	dirs := map[string]string{}
	for _, k := range b.o.brokers {
		if k == "kfake-mem" {
			continue
		}
		family := k
		if k == "kbroker-bin" {
			family = "kbroker"
		}
		if d, ok := dirs[family]; ok {
			dirs[k] = d
			continue
		}
		d := filepath.Join(b.base, "start-"+family)
		fmt.Fprintf(b.log, "filling %s with %d MB for the start-up case\n", d, b.o.startDataMB)
		if err := fillForStart(ctx, b.e, specFor(k, "async"), d, b.o.startDataMB*1e6); err != nil {
			return nil, err
		}
		dirs[k], dirs[family] = d, d
	}
	return dirs, nil
}

// startRound measures each broker's start on an empty directory and on
// its filled one.
func (b *bench) startRound(round int, filled map[string]string) error {
	withData := fmt.Sprintf("%d MB after a clean stop", b.o.startDataMB)
	for _, k := range rotate(b.o.brokers, round) {
		spec := specFor(k, "async")
		empty := filepath.Join(b.base, fmt.Sprintf("r%d-empty-%s", round, k))
		m, err := runStart(b.e, spec, empty)
		os.RemoveAll(empty)
		if err != nil {
			return err
		}
		b.record("startup", "empty", &brokerProc{spec: spec}, round, m, "ready_ms", "open_ms", "rss_mb")
		if d, ok := filled[k]; ok {
			m, err := runStart(b.e, spec, d)
			if err != nil {
				return err
			}
			b.record("startup", withData, &brokerProc{spec: spec}, round, m, "ready_ms", "open_ms", "rss_mb")
		}
	}
	return nil
}

// measure runs one case on bp, profiling the broker if asked, and adds
// the broker's resident memory during the case (rssSampler.finish).
//
// Each case starts with the machine's dirty pages written back (sync(2),
// outside the measured window): floor-write and kfake-disk never sync,
// and data directories go only at the end of a round, so without it the
// kernel would write back GBs of the earlier cases' pages during the
// later ones. (The 4-5x CPU per GB that later cases showed on the
// benchmark VM was not that but its first touch of fresh guest memory,
// which sync does not prevent: docs/BENCHMARKS.md, "The third
// quiet-machine pass".)
func (b *bench) measure(bp *brokerProc, workload, caseName string, round int, f func() (metrics, error)) (metrics, error) {
	syscall.Sync()
	if b.o.profile != "" {
		file := filepath.Join(b.o.profile, fmt.Sprintf("%s-%s-%s-r%d.pprof", workload, slug(caseName), bp.spec.name, round))
		if err := bp.profile(file); err != nil {
			return nil, err
		}
		defer bp.profile("")
	}
	rss := startRSS(bp.pid)
	m, err := f()
	if err != nil {
		rss.finish(metrics{})
		return nil, fmt.Errorf("%s %s on %s: %w", workload, caseName, bp.spec.name, err)
	}
	rss.finish(m)
	return m, nil
}

// measureLogged is measure for a case whose latencies --latency-log
// writes: f gets the case's latency file, closed when it returns.
func (b *bench) measureLogged(bp *brokerProc, workload, caseName string, round int, f func(*latencyFile) (metrics, error)) (metrics, error) {
	return b.measure(bp, workload, caseName, round, func() (metrics, error) {
		lw, err := b.latencyLogFile(bp, workload, caseName, round)
		if err != nil {
			return nil, err
		}
		defer lw.Close()
		return f(lw)
	})
}

// latencyLogFile opens the --latency-log file of one case, broker and round,
// or an empty latencyFile (whose writer is nil) without the flag.
func (b *bench) latencyLogFile(bp *brokerProc, workload, caseName string, round int) (*latencyFile, error) {
	if b.o.latencyLog == "" {
		return &latencyFile{}, nil
	}
	if err := os.MkdirAll(b.o.latencyLog, 0o755); err != nil {
		return nil, err
	}
	file := filepath.Join(b.o.latencyLog, fmt.Sprintf("%s-%s-%s-r%d.csv", workload, slug(caseName), bp.spec.name, round))
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	return &latencyFile{f}, nil
}

// latencyFile is a --latency-log file, or nothing (f nil) without the flag.
type latencyFile struct{ f *os.File }

// writer is where latencies writes, nil without the flag.
func (l *latencyFile) writer() io.Writer {
	if l.f == nil {
		return nil
	}
	return l.f
}

// Close closes the file, if any.
func (l *latencyFile) Close() error {
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// record adds a sample and logs the given metrics of it.
func (b *bench) record(workload, caseName string, bp *brokerProc, round int, m metrics, show ...string) {
	var parts []string
	for _, k := range show {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%s", k, format(v, 2)))
		}
	}
	fmt.Fprintf(b.log, "round %d/%d %-8s %-32s %-16s %s\n", round, b.o.rounds, workload, caseName, bp.spec.name, strings.Join(parts, " "))
	b.res.add(workload, caseName, bp.spec.name, round, m)
}

// slug makes a case name usable in a file name.
func slug(s string) string {
	var sb strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			sb.WriteRune(r)
		case sb.Len() > 0 && !strings.HasSuffix(sb.String(), "-"):
			sb.WriteByte('-')
		}
	}
	return strings.TrimSuffix(sb.String(), "-")
}
