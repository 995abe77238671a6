package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testenv"
)

// BenchmarkConsume measures consume throughput from the kbroker binary in
// its own process, so that the broker's CPU time (utime+stime from
// /proc/<pid>/stat) is measured apart from the client's (this process's
// getrusage). For records of 100 B and 1 KiB, produced by kgo with normal
// batching (linger 5 ms, no compression) or one record per batch (raw
// Produce requests of one-record batches), a kgo consumer in this process
// (ConsumePartitions, no group, fetches of up to 16 MiB) reads the
// partition from the start again and again, at least 256 MiB of record
// batches per op, with the copy threshold at 0 (every batch with its own
// sendfile), 16384 (the default) and 1048576 (every batch copied out of
// the mapping into the connection's chunk and written: the read+write
// path; the pread+write fallback proper is taken only where sendfile
// cannot be, so this row stands in for it).
//
// Metrics: MB/s of record batches served (the broker's sendfile + copied
// counters over wall time), records/s polled, broker and client CPU
// seconds per GB served, broker bytes allocated per GB (memstats
// TotalAlloc), B/batch, the share of bytes copied and the connections the
// consumer opened per op. Results are in docs/BENCHMARKS.md ("Consume");
// run with
//
//	go test -run '^$' -bench BenchmarkConsume -benchtime 3s -count 3 ./integration/
func BenchmarkConsume(b *testing.B) {
	if raceEnabled {
		b.Skip("under the race detector the broker's numbers mean nothing")
	}
	const (
		valueBytes = 32 << 20  // record values produced per data set
		volume     = 256 << 20 // record-batch bytes consumed per op, at least
		fetchMax   = 16 << 20
	)
	for _, size := range []int{100, 1024} {
		for _, mode := range []string{"linger", "single"} {
			b.Run(fmt.Sprintf("record=%dB/batch=%s", size, mode), func(b *testing.B) {
				dir := b.TempDir()
				topic := "consume"
				records := int64(valueBytes / size)
				br := startBenchBroker(b, dir)
				createBenchTopic(b, br.addr, topic)
				if mode == "linger" {
					produceLingering(b, br.addr, topic, records, size)
				} else {
					produceRawBatches(b, br.addr, topic, rawRecordBatch(1, size, 'v'), int(records))
				}
				br.stop(b)

				for _, threshold := range []int{0, 16 << 10, 1 << 20} {
					b.Run(fmt.Sprintf("threshold=%d", threshold), func(b *testing.B) {
						conf := filepath.Join(b.TempDir(), "server.properties")
						text := fmt.Sprintf("kbroker.fetch.copy.threshold.bytes=%d\n", threshold)
						if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
							b.Fatal(err)
						}
						br := startBenchBroker(b, dir, "--config", conf)
						defer br.stop(b)
						// Warm-up: the page cache, the connection, the data
						// set's size.
						v0 := readDebugVars(b, br.debug, false)
						r := newRereader(b, br.addr, topic, fetchMax)
						r.readAll(b, records)
						v1 := readDebugVars(b, br.debug, false)
						setBytes := servedBytes(v1) - servedBytes(v0)
						batches := r.hooks.batches.Load()
						passes := int((volume + setBytes - 1) / setBytes)

						cpu0, self0, dials0 := br.cpu(b), selfCPU(b), r.hooks.dials.Load()
						var polled int64
						start := time.Now()
						for b.Loop() {
							for range passes {
								polled += r.readAll(b, records)
							}
						}
						elapsed := time.Since(start).Seconds()
						cpu1, self1 := br.cpu(b), selfCPU(b)
						v2 := readDebugVars(b, br.debug, false)

						n := float64(servedBytes(v2) - servedBytes(v1))
						gb := n / 1e9
						b.ReportMetric(n/1e6/elapsed, "MB/s")
						b.ReportMetric(float64(polled)/elapsed, "records/s")
						b.ReportMetric((cpu1-cpu0).Seconds()/gb, "broker-CPU-s/GB")
						b.ReportMetric((self1-self0).Seconds()/gb, "client-CPU-s/GB")
						b.ReportMetric(float64(v2.Memstats.TotalAlloc-v1.Memstats.TotalAlloc)/1e6/gb, "broker-alloc-MB/GB")
						b.ReportMetric(float64(v2.Kbroker.CopiedBytes-v1.Kbroker.CopiedBytes)/n*100, "%copied")
						b.ReportMetric(float64(setBytes)/float64(batches), "B/batch")
						b.ReportMetric(float64(r.hooks.dials.Load()-dials0)/float64(b.N), "dials/op")
						if v2.Kbroker.FallbackBytes != 0 {
							b.Errorf("%d bytes through the pread+write fallback", v2.Kbroker.FallbackBytes)
						}
					})
				}
			})
		}
	}
}

// servedBytes is the record-batch bytes a broker has sent, by any path.
func servedBytes(v debugVars) int64 {
	return v.Kbroker.SendfileBytes + v.Kbroker.FallbackBytes + v.Kbroker.CopiedBytes
}

// createBenchTopic creates topic with one partition.
func createBenchTopic(tb testing.TB, addr, topic string) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	created, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic)
	if err != nil || created.Err != nil {
		tb.Fatalf("CreateTopic %s: %v %v", topic, err, created.Err)
	}
}

// produceLingering produces n records with values of size bytes to topic with
// kgo's usual batching (linger 5 ms, idempotent), uncompressed so that
// what is served is what was produced.
func produceLingering(tb testing.TB, addr, topic string, n int64, size int) {
	tb.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
		kgo.ProducerLinger(5*time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		tb.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	value := bytes.Repeat([]byte{'v'}, size)
	var failed atomic.Pointer[error]
	for range n {
		cl.Produce(ctx, &kgo.Record{Value: value}, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	if err := cl.Flush(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := failed.Load(); err != nil {
		tb.Fatalf("produce: %v", *err)
	}
}

// benchBroker is a kbroker process for benchmarks (startBinary wants a
// *testing.T), with its debug server.
type benchBroker struct {
	cmd         *exec.Cmd
	addr, debug string
	logs        *lockedBuffer
	exited      chan struct{}
	err         error
}

// startBenchBroker starts the kbroker binary on dir with 128 MiB commit-log
// files (the command's default), --debug-listen and args, and waits for
// its listening line and debug address.
func startBenchBroker(tb testing.TB, dir string, args ...string) *benchBroker {
	tb.Helper()
	path := kbrokerBinaryTB(tb)
	args = append([]string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--segment-bytes", "134217728",
		"--debug-listen", "127.0.0.1:0", "--log-format", "json"}, args...)
	br := &benchBroker{logs: &lockedBuffer{}, exited: make(chan struct{})}
	lines := &lineWriter{first: make(chan string, 1)}
	br.cmd = exec.Command(path, args...)
	br.cmd.Stdout, br.cmd.Stderr = lines, br.logs
	dieWithParent(br.cmd)
	if err := br.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		br.err = br.cmd.Wait()
		close(br.exited)
	}()
	select {
	case line := <-lines.first:
		addr, ok := strings.CutPrefix(line, "kbroker listening on ")
		if !ok {
			br.stop(tb)
			tb.Fatalf("kbroker printed %q", line)
		}
		br.addr = addr
	case <-br.exited:
		tb.Fatalf("kbroker exited before listening: %v\n%s", br.err, br.logs)
	case <-time.After(startTimeout):
		br.stop(tb)
		tb.Fatalf("kbroker printed no listening line within %v:\n%s", startTimeout, br.logs)
	}
	br.debug = awaitDebugAddr(tb, br.logs)
	return br
}

// stop stops the broker with SIGTERM (SIGKILL after stopTimeout); it must
// exit with status 0.
func (br *benchBroker) stop(tb testing.TB) {
	tb.Helper()
	select {
	case <-br.exited:
		return
	default:
	}
	br.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-br.exited:
		if br.err != nil {
			tb.Errorf("kbroker did not stop cleanly: %v\n%s", br.err, br.logs)
		}
	case <-time.After(stopTimeout):
		br.cmd.Process.Kill()
		<-br.exited
		tb.Errorf("kbroker still running %v after SIGTERM: killed", stopTimeout)
	}
}

// cpu is the broker's user+system CPU time so far, from /proc/<pid>/stat
// (utime and stime, fields 14 and 15, in clock ticks of 1/100 s: USER_HZ
// is 100 on every Linux platform Go supports).
func (br *benchBroker) cpu(tb testing.TB) time.Duration {
	tb.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", br.cmd.Process.Pid))
	if err != nil {
		tb.Fatal(err)
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	fields := strings.Fields(string(stat[i+1:])) // from field 3 on
	if i < 0 || len(fields) < 13 {
		tb.Fatalf("unreadable /proc/%d/stat: %q", br.cmd.Process.Pid, stat)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		tb.Fatalf("unreadable /proc/%d/stat: %q", br.cmd.Process.Pid, stat)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// selfCPU is this process's user+system CPU time so far (the client's;
// the broker is a child and not included).
func selfCPU(tb testing.TB) time.Duration {
	tb.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// kbrokerBinaryTB is kbrokerBinary for benchmarks: the same binary, built
// once per test process.
func kbrokerBinaryTB(tb testing.TB) string {
	tb.Helper()
	skipIfExternal(tb, "starts the kbroker binary")
	if testing.Short() && testenv.Flag(tb, "KBROKER_SKIP_BINARY") {
		tb.Skip("needs the kbroker binary: skipped under -short with KBROKER_SKIP_BINARY=1")
	}
	build.once.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			build.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		if build.dir, build.err = os.MkdirTemp("", "kbroker-bin-"); build.err != nil {
			return
		}
		path := filepath.Join(build.dir, "kbroker")
		args := []string{"build", "-o", path}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, "./cmd/kbroker")...)
		cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/kbroker: %w\n%s", err, out)
			return
		}
		build.path = path
	})
	if build.err != nil {
		tb.Fatal(build.err)
	}
	return build.path
}
