package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The scale workload (--only scale) measures what partitions cost: for
// each count of --scale-partitions it starts a broker on an empty data
// directory and
//
//  1. creates the topics one CreateTopics request at a time (topics of 5
//     partitions; one topic of one partition for a count of 1): the
//     requests' p50 and p99;
//  2. writes one 100-byte record to every partition;
//  3. asks Metadata for all topics (p50 of 10 requests);
//  4. stops it cleanly and starts it again (exec to ready), kills it with
//     SIGKILL and starts it again;
//  5. deletes every topic;
//
// and reports the data directory's allocated size (as du counts it) when
// idle, per partition after the writes, and after the deletions, and the
// broker's live Go heap per partition (kbroker-bin only: read from
// --debug-listen after a forced collection). A last case creates 1,000
// one-partition topics in one CreateTopics request.
const scalePartitionsPerTopic = 5

// scaleCase is one partition count.
type scaleCase struct{ partitions int }

func (c scaleCase) name() string {
	if c.partitions == 1 {
		return "1 partition"
	}
	return fmt.Sprintf("%d partitions (%d topics × %d)", c.partitions, c.partitions/scalePartitionsPerTopic, scalePartitionsPerTopic)
}

// topics are the case's topic names and partition counts.
func (c scaleCase) topics() (names []string, parts int32) {
	if c.partitions == 1 {
		return []string{"scale-0"}, 1
	}
	for i := range c.partitions / scalePartitionsPerTopic {
		names = append(names, fmt.Sprintf("scale-%d", i))
	}
	return names, scalePartitionsPerTopic
}

// scaleRound runs every scale case of one round on each broker.
func (b *bench) scaleRound(ctx context.Context, round int) error {
	for _, k := range rotate(b.o.brokers, round) {
		spec := specFor(k, "async")
		for _, n := range b.o.scalePartitions {
			c := scaleCase{n}
			dir := filepath.Join(b.base, fmt.Sprintf("r%d-scale-%d-%s", round, n, k))
			m, err := runScale(ctx, b.e, spec, dir, c)
			os.RemoveAll(dir)
			if err != nil {
				return fmt.Errorf("scale %s on %s: %w", c.name(), spec.name, err)
			}
			b.record("scale", c.name(), &brokerProc{spec: spec}, round, m,
				"create_p50", "create_p99", "du_kb_part", "heap_kb_part", "meta_ms", "start_clean_ms", "start_kill_ms", "deleted_du_mb")
		}
		dir := filepath.Join(b.base, fmt.Sprintf("r%d-scale-batch-%s", round, k))
		m, err := runCreateBatch(ctx, b.e, spec, dir, 1000)
		os.RemoveAll(dir)
		if err != nil {
			return fmt.Errorf("scale batch on %s: %w", spec.name, err)
		}
		b.record("scalebatch", "1,000 topics in one request", &brokerProc{spec: spec}, round, m, "create_ms", "du_mb")
	}
	return nil
}

// runScale measures one scale case on a fresh broker of spec in dir.
func runScale(ctx context.Context, e *env, spec brokerSpec, dir string, c scaleCase) (metrics, error) {
	bp, err := startBroker(e, spec, dir)
	if err != nil {
		return nil, err
	}
	defer func() { bp.kill() }()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bp.addr), kgo.ProducerLinger(0), kgo.RequestRetries(0),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		return nil, err
	}
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	m := metrics{}
	idleDu := duBytes(dir)
	m["idle_du_mb"] = float64(idleDu) / (1 << 20)
	heap0, heapOK := bp.liveHeap()

	names, parts := c.topics()
	var lat []time.Duration
	for _, name := range names {
		t0 := time.Now()
		if err := createTopics(ctx, cl, parts, name); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t0))
	}
	m["create_p50"], m["create_p99"] = ms(percentile(lat, 50)), ms(percentile(lat, 99))
	if heap1, ok := bp.liveHeap(); ok && heapOK {
		m["heap_kb_part"] = (float64(heap1) - float64(heap0)) / 1024 / float64(c.partitions)
	}

	// One record to every partition.
	value := make([]byte, 100)
	var failed atomic.Pointer[error]
	for _, name := range names {
		for p := range parts {
			cl.Produce(ctx, &kgo.Record{Topic: name, Partition: p, Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return nil, err
	}
	if err := failed.Load(); err != nil {
		return nil, fmt.Errorf("produce: %w", *err)
	}
	m["du_kb_part"] = float64(duBytes(dir)-idleDu) / 1024 / float64(c.partitions)

	var mlat []time.Duration
	for range 10 {
		t0 := time.Now()
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12 // all topics
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("metadata: %w", err)
		}
		mlat = append(mlat, time.Since(t0))
		if got := len(resp.Topics); got < len(names) {
			return nil, fmt.Errorf("metadata lists %d topics, want %d", got, len(names))
		}
	}
	m["meta_ms"] = ms(percentile(mlat, 50))
	cl.Close()
	cl = nil

	// Restarts: after a clean stop, then after SIGKILL.
	if err := bp.stop(); err != nil {
		return nil, err
	}
	if bp, err = startBroker(e, spec, dir); err != nil {
		return nil, err
	}
	m["start_clean_ms"] = ms(bp.ready)
	bp.kill()
	if bp, err = startBroker(e, spec, dir); err != nil {
		return nil, err
	}
	m["start_kill_ms"] = ms(bp.ready)

	// Delete everything; the disk should come back.
	if cl, err = kgo.NewClient(kgo.SeedBrokers(bp.addr), kgo.RequestRetries(0)); err != nil {
		return nil, err
	}
	for batch := range slices.Chunk(names, 100) {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TopicNames = batch
		for _, n := range batch {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, t)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("delete topics: %w", err)
		}
		for _, t := range resp.Topics {
			if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
				return nil, fmt.Errorf("delete topic %v: %w", t.Topic, err)
			}
		}
	}
	m["deleted_du_mb"] = float64(duBytes(dir)) / (1 << 20)
	return m, bp.stop()
}

// runCreateBatch times one CreateTopics request for n one-partition topics.
func runCreateBatch(ctx context.Context, e *env, spec brokerSpec, dir string, n int) (metrics, error) {
	bp, err := startBroker(e, spec, dir)
	if err != nil {
		return nil, err
	}
	defer bp.kill()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bp.addr), kgo.RequestRetries(0))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("batch-%d", i)
	}
	t0 := time.Now()
	if err := createTopics(ctx, cl, 1, names...); err != nil {
		return nil, err
	}
	m := metrics{"create_ms": ms(time.Since(t0)), "du_mb": float64(duBytes(dir)) / (1 << 20)}
	return m, bp.stop()
}

// createTopics creates topics of parts partitions in one request.
func createTopics(ctx context.Context, cl *kgo.Client, parts int32, names ...string) error {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 60_000
	for _, n := range names {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = n, parts, 1
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("create topics: %w", err)
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return fmt.Errorf("create topic %s: %w", t.Topic, err)
		}
	}
	return nil
}

// duBytes is what du counts under dir: allocated blocks of every file and
// directory (0 if dir cannot be walked).
func duBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(path string, _ fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(path, &st) == nil {
			n += st.Blocks * 512
		}
		return nil
	})
	return n
}

// liveHeap is the kbroker binary's live heap after a forced collection,
// read from its --debug-listen server; ok is false for other brokers.
func (bp *brokerProc) liveHeap() (bytes uint64, ok bool) {
	if bp.spec.kind != "kbroker-bin" {
		return 0, false
	}
	// heap?gc=1 runs a collection before it answers.
	res, err := http.Get("http://" + bp.debug + "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, false
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	res, err = http.Get("http://" + bp.debug + "/debug/vars")
	if err != nil {
		return 0, false
	}
	defer res.Body.Close()
	var v struct{ Memstats struct{ HeapAlloc uint64 } }
	if json.NewDecoder(res.Body).Decode(&v) != nil {
		return 0, false
	}
	return v.Memstats.HeapAlloc, true
}
