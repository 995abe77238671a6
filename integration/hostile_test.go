package integration

// TestHostileInput: a fuzzer against the running broker binary. About 50
// connections at once send real request frames (built for every API and
// version the broker serves, and captured from kgo and kadm traffic),
// mutated or not, and hostile byte streams: random bytes, negative and
// huge frame sizes, frames cut short, sizes that disagree with the bytes,
// slow partial frames, pipelined requests whose responses are never read,
// decompression bombs and garbage inside compressed batches of every
// codec (and a storm of 16 bombs at once, 6 under -race). Meanwhile well-behaved kgo
// producers and a group consumer work on their own topic. The broker must
// not crash (the process stays up, its log shows no panic, fatal error,
// race or error-level line), its anonymous memory must stay within a
// bound derived from queued.max.request.bytes (socket.request.max.bytes
// is 2 MiB), the 64 MiB bound of one decompression and the number of
// connections (hostileMemBound), every good produce must succeed, and the
// good topic must read back exactly what was acknowledged.
//
// Deterministic per seed (what is sent, not its timing):
// KBROKER_HOSTILE_SEED (default 1). KBROKER_HOSTILE_DURATION (a Go
// duration, default 12s) sets how long the hostile connections run; for
// example
//
//	KBROKER_HOSTILE_DURATION=5m KBROKER_HOSTILE_SEED=7 go test -run TestHostileInput -v ./integration/
//
// testdata/hostile/*.bin are whole wire inputs (size prefixes included)
// that found bugs or stand for a class of attack (TestHostileWriteCorpus
// writes them); each is sent on its own connection first. When
// the broker dies, the last inputs of every hostile connection are written
// to a directory named in the failure, ready to become such files.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// Settings of the broker under attack.
const (
	hostileMaxRequest = 2 << 20  // socket.request.max.bytes
	hostileQueued     = 16 << 20 // queued.max.request.bytes
	hostileConns      = 50       // hostile connections at once
	// hostileGrace is how long past the attack's deadline a hostile
	// connection may live (bomb answers are read up to 30 s after the
	// request): every connection gets that deadline when it is opened, so
	// no read or write of the test can block for good on a broker that
	// hangs or is gone.
	hostileGrace = 45 * time.Second
)

func TestHostileInput(t *testing.T) {
	t.Parallel()
	needProc(t)
	seed, dur := testenv.Seed(t, "KBROKER_HOSTILE_SEED", 1), testenv.Duration(t, "KBROKER_HOSTILE_DURATION", 12*time.Second)
	rng := rand.New(rand.NewPCG(seed, 0))
	o := brokerOpts{props: map[string]string{
		"socket.request.max.bytes":                                    strconv.Itoa(hostileMaxRequest),
		"queued.max.request.bytes":                                    strconv.Itoa(hostileQueued),
		"connections.max.idle.ms":                                     "3000",
		"group.min.session.timeout.ms":                                "1000",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms": "500",
		"transaction.max.timeout.ms":                                  "60000",
	}}
	o.check(t)
	b := startBinary(t, o.args(t)...)
	pid := b.cmd.Process.Pid
	start, err := readProcMem(pid)
	if err != nil {
		t.Fatal(err)
	}
	mem := startMemSampler(pid)

	// The hostile topics and the good one.
	adm := newAdmin(t, b.Addr())
	ctx := testCtx(t)
	const goodTopic, goodGroup = "good-hostile-data", "good-hostile-group"
	env := &hostileEnv{ids: map[string][16]byte{}}
	for i := range 4 {
		env.topics = append(env.topics, fmt.Sprintf("h-%d", i))
	}
	for i := range 6 {
		env.newNames = append(env.newNames, fmt.Sprintf("h-new-%d", i))
		env.groups = append(env.groups, fmt.Sprintf("hg-%d", i))
		env.txnIDs = append(env.txnIDs, fmt.Sprintf("htx-%d", i))
	}
	created, err := adm.CreateTopics(ctx, 3, 1, map[string]*string{"message.timestamp.after.max.ms": kadmStr("86400000")}, append([]string{goodTopic}, env.topics...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range created.Sorted() {
		if r.Err != nil {
			t.Fatalf("create %s: %v", r.Topic, r.Err)
		}
		if r.Topic != goodTopic {
			env.ids[r.Topic] = r.ID
		}
	}
	env.batches = hostileBatches(rng)

	// The frames: built for every served API and version, and captured.
	apis := servedAPIs(t, b.Addr())
	frames := buildBaseFrames(rng, env, apis, 2)
	captured := captureKgoFrames(t, b.Addr(), env)
	for _, body := range captured {
		key := int16(binary.BigEndian.Uint16(body))
		frames = append(frames, hostileFrame{name: "captured " + kmsg.NameForKey(key), key: key, body: body})
	}
	bombs := bombFrames(rng, env, apis)
	corpus := loadHostileCorpus(t)
	t.Logf("seed %d, %v: %d base frames (%d captured from kgo/kadm) for %d APIs, %d record batches, %d corpus inputs; broker at start: %v",
		seed, dur, len(frames), len(captured), len(apis), len(env.batches), len(corpus), start)

	// The well-behaved clients.
	good := startGoodClients(t, b.Addr(), goodTopic, goodGroup)

	// The attack.
	st := &hostileStats{}
	workers := make([]*hostileWorker, hostileConns)
	// Bombs in flight at once, and in the storm. A bomb costs the broker
	// up to 64 MiB of decompression, several times slower under -race,
	// where fewer keep the test brief (the memory bound is looser there
	// anyway).
	inFlight, stormSize := 8, 16
	if raceEnabled {
		inFlight, stormSize = 2, 6
	}
	bombTokens := make(chan struct{}, inFlight)
	deadline := time.Now().Add(dur)
	gone := make(chan struct{}) // closed when the broker died: the workers stop
	var wg sync.WaitGroup
	for i := range workers {
		w := &hostileWorker{id: i, addr: b.Addr(), frames: frames, bombs: bombs, bombTokens: bombTokens, corpus: corpus, st: st, deadline: deadline,
			gone: gone, rng: rand.New(rand.NewPCG(seed, uint64(i)+1))}
		workers[i] = w
		wg.Add(1)
		go func() { defer wg.Done(); w.run() }()
	}
	// A storm: 16 connections send a decompression bomb each at once.
	// Without the broker's bound on large decompressions each would get a
	// buffer of up to 64 MiB, all at the same time.
	storm := bombStorm(b.Addr(), bombs, stormSize, deadline.Add(hostileGrace))
	attackStart := time.Now()
	died := false
	waitDone := make(chan struct{})
	go func() { wg.Wait(); close(waitDone) }()
	select {
	case <-waitDone:
	case <-b.exited:
		died = true
		close(gone)
		<-waitDone
	}
	attack := time.Since(attackStart)
	stormed := <-storm
	select {
	case <-b.exited:
		died = true
	default:
	}
	if died {
		dir := saveHostileInputs(t, workers)
		t.Fatalf("the broker died under hostile input (%v); the last inputs of each connection are in %s; log:\n%s", b.err, dir, logTail(b.logs.String(), 100))
	}

	// The good clients kept working and their data is intact.
	phase := time.Now()
	good.stop(t)
	last, peakAnon := mem.finish()
	stopped := time.Since(phase)
	good.verify(t, b.Addr())
	t.Logf("after the attack: good clients stopped and caught up in %v, read back in %v", stopped.Round(time.Millisecond), (time.Since(phase) - stopped).Round(time.Millisecond))

	st.report(t, attack)
	t.Logf("bomb storm: %d bombs sent at once, %d answered", stormSize, stormed)
	bound := hostileMemBound(start)
	dataDir := dirBytes(b.dir)
	t.Logf("broker memory: at start %v; peak anon %s (bound %s); at the end %v; data dir %s",
		start, fmtMiB(peakAnon), fmtMiB(bound), last, fmtMiB(dataDir))
	if peakAnon > bound {
		t.Errorf("anonymous memory of the broker peaked at %s, above the bound of %s", fmtMiB(peakAnon), fmtMiB(bound))
	}
	if last.HWM > bound+dataDir+start.File {
		t.Errorf("VmHWM %s is above the bound of %s plus the mapped data (%s)", fmtMiB(last.HWM), fmtMiB(bound), fmtMiB(dataDir+start.File))
	}
	if p := brokerLogProblems(b.logs.String()); len(p) > 0 {
		t.Errorf("the broker logged %d problem lines, the first:\n%s", len(p), strings.Join(p[:min(len(p), 20)], "\n"))
	}
}

func kadmStr(s string) *string { return &s }

// hostileMemBound is the most anonymous memory the broker may use under
// attack: what it used at start plus twice (the Go heap grows to twice
// what is live before it collects, and returns freed pages lazily) what
// may be live at once: the request budget (queued.max.request.bytes), the
// one decompression that may grow to the 64 MiB bound (twice that while
// its buffer doubles), and per hostile connection 4 MiB: the codec state
// and first MiB of output of a decompression, its buffers and the answers
// in flight; plus 64 MiB for the rest. The race detector's shadow memory
// grows with the heap: four times that under -race.
func hostileMemBound(start procMem) int64 {
	live := int64(hostileQueued) + 2*64<<20 + hostileConns*4<<20
	b := 2*live + 64<<20
	if raceEnabled {
		b *= 4
	}
	return start.Anon + b
}

// servedAPIs asks the broker which APIs and versions it serves.
func servedAPIs(t *testing.T, addr string) []hostileAPI {
	t.Helper()
	cl := newKgo(t, addr)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(testCtx(t), cl)
	if err != nil {
		t.Fatal(err)
	}
	var out []hostileAPI
	for _, k := range resp.ApiKeys {
		out = append(out, hostileAPI{k.ApiKey, k.MinVersion, k.MaxVersion})
	}
	return out
}

// captureKgoFrames runs a short kgo and kadm workload on the hostile
// topics through a recording dialer and returns the request frames it
// wrote: produce with every codec, idempotent and transactional, a group
// consumer that commits, and admin requests.
func captureKgoFrames(t *testing.T, addr string, env *hostileEnv) [][]byte {
	t.Helper()
	rec := &recordingDialer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i, c := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		cl := newKgo(t, addr, kgo.Dialer(rec.dial), kgo.DefaultProduceTopic(env.topics[i%len(env.topics)]), kgo.ProducerBatchCompression(c))
		var recs []*kgo.Record
		for j := range 20 {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "cap-%d", j), Value: bytes.Repeat([]byte("captured "), 1+j)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("capture: produce: %v", err)
		}
		cl.Close()
	}
	txn := newKgo(t, addr, kgo.Dialer(rec.dial), kgo.DefaultProduceTopic(env.topics[2]), kgo.TransactionalID(env.txnIDs[0]), kgo.TransactionTimeout(10*time.Second))
	for _, commit := range []bool{true, false} {
		if err := txn.BeginTransaction(); err != nil {
			t.Fatalf("capture: begin transaction: %v", err)
		}
		if err := txn.ProduceSync(ctx, &kgo.Record{Value: []byte("in a transaction")}).FirstErr(); err != nil {
			t.Fatalf("capture: transactional produce: %v", err)
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("capture: end transaction: %v", err)
		}
	}
	txn.Close()
	cons := newKgo(t, addr, kgo.Dialer(rec.dial), kgo.ConsumerGroup(env.groups[0]), kgo.ConsumeTopics(env.topics[0]),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
	for n := 0; n < 20; {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("capture: group consumer: %v", err)
		}
		n += fs.NumRecords()
	}
	if err := cons.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("capture: commit: %v", err)
	}
	cons.Close()
	adm := kadm.NewClient(newKgo(t, addr, kgo.Dialer(rec.dial)))
	adm.ListTopics(ctx)
	adm.DescribeTopicConfigs(ctx, env.topics...)
	adm.DescribeBrokerConfigs(ctx)
	adm.ListEndOffsets(ctx, env.topics...)
	adm.ListStartOffsets(ctx, env.topics...)
	adm.ListOffsetsAfterMilli(ctx, time.Now().Add(-time.Minute).UnixMilli(), env.topics...)
	adm.ListGroups(ctx)
	adm.DescribeGroups(ctx, env.groups[0])
	adm.FetchOffsets(ctx, env.groups[0])
	adm.CreateTopic(ctx, 2, 1, nil, env.newNames[0])
	adm.CreatePartitions(ctx, 2, env.newNames[0])
	adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "retention.ms", Value: kadmStr("600000")}}, env.newNames[0])
	adm.DeleteRecords(ctx, kadm.Offsets{env.topics[3]: {0: {At: 1}}})
	adm.DescribeProducers(ctx, kadm.TopicsSet{env.topics[0]: {0: {}}})
	adm.DescribeTransactions(ctx, env.txnIDs[0])
	adm.ListTransactions(ctx, nil, nil)
	adm.DeleteTopics(ctx, env.newNames[0])
	return rec.take()
}

// loadHostileCorpus reads testdata/hostile/*.bin.
func loadHostileCorpus(t *testing.T) [][]byte {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join("testdata", "hostile", "*.bin"))
	sort.Strings(paths)
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// hostileStats counts what the hostile connections did.
type hostileStats struct {
	inputs          atomic.Int64 // frames and byte streams written
	valid           atomic.Int64 // of them, unmutated frames
	mutated         atomic.Int64 // mutated frames
	raw             atomic.Int64 // random bytes, length attacks, slow partial frames, corpus
	conns           atomic.Int64
	responses       atomic.Int64
	closedByIt      atomic.Int64 // connections the broker closed on us
	bytes           atomic.Int64
	hostileMutators [16]atomic.Int64
}

func (s *hostileStats) report(t *testing.T, d time.Duration) {
	t.Helper()
	var ms []string
	for i, m := range hostileMutators {
		ms = append(ms, fmt.Sprintf("%s %d", m.name, s.hostileMutators[i].Load()))
	}
	t.Logf("hostile inputs: %d in %v over %d connections (%d at once): %d valid frames, %d mutated, %d raw streams; %s sent; %d responses read; %d connections closed by the broker",
		s.inputs.Load(), d.Round(time.Millisecond), s.conns.Load(), hostileConns, s.valid.Load(), s.mutated.Load(), s.raw.Load(),
		fmtMiB(s.bytes.Load()), s.responses.Load(), s.closedByIt.Load())
	t.Logf("mutations applied: %s", strings.Join(ms, ", "))
}

// bombStorm sends n bomb frames (cycling through bombs) on n connections
// at once, and reports on the channel how many were answered; no
// connection outlives end.
func bombStorm(addr string, bombs [][]byte, n int, end time.Time) <-chan int {
	out := make(chan int, 1)
	var answered atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				return
			}
			defer nc.Close()
			nc.SetDeadline(end)
			<-start
			if _, err := nc.Write(bombs[(i*7)%len(bombs)]); err != nil {
				return
			}
			var hdr [4]byte
			if _, err := io.ReadFull(nc, hdr[:]); err != nil {
				return
			}
			if _, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(hdr[:]))); err == nil {
				answered.Add(1)
			}
		}()
	}
	close(start)
	go func() { wg.Wait(); out <- int(answered.Load()) }()
	return out
}

// hostileWorker is one hostile client: it opens connection after
// connection until the deadline.
type hostileWorker struct {
	id     int
	addr   string
	frames []hostileFrame
	bombs  [][]byte // produce frames carrying decompression bombs
	// bombTokens bounds the bombs in flight, across workers.
	bombTokens chan struct{}
	corpus     [][]byte
	st         *hostileStats
	deadline   time.Time
	// gone is closed when the broker died: the worker stops at once
	// rather than dialling a dead address until the deadline.
	gone <-chan struct{}
	rng  *rand.Rand

	recent [6][]byte // the last inputs sent, for saveHostileInputs
	next   int
	mu     sync.Mutex
}

func (w *hostileWorker) remember(in []byte) {
	w.mu.Lock()
	w.recent[w.next%len(w.recent)] = in
	w.next++
	w.mu.Unlock()
}

func (w *hostileWorker) run() {
	// The corpus first, spread over the workers.
	for i := w.id; i < len(w.corpus); i += hostileConns {
		w.rawConn(w.corpus[i], 100*time.Millisecond)
	}
	for time.Now().Before(w.deadline) && !w.stopped() {
		switch m := w.rng.IntN(100); {
		case m < 5:
			w.sendBombs()
		case m < 55:
			w.session(true)
		case m < 65:
			w.session(false)
		case m < 73:
			w.garbage()
		case m < 88:
			w.lengthAttack()
		default:
			w.slowloris()
		}
	}
}

// stopped reports whether the broker died.
func (w *hostileWorker) stopped() bool {
	select {
	case <-w.gone:
		return true
	default:
		return false
	}
}

// dial opens a connection that no read or write outlives the attack's
// deadline plus hostileGrace (the operations set shorter ones of their
// own), or nil.
func (w *hostileWorker) dial() net.Conn {
	nc, err := net.DialTimeout("tcp", w.addr, 5*time.Second)
	if err != nil {
		return nil // the broker's death is noticed by the test
	}
	nc.SetDeadline(w.deadline.Add(hostileGrace))
	w.st.conns.Add(1)
	return nc
}

// write sends in with a bounded wait; false when the broker closed the
// connection (or stopped reading it for 2 s).
func (w *hostileWorker) write(nc net.Conn, in []byte) bool {
	w.remember(in)
	w.st.inputs.Add(1)
	w.st.bytes.Add(int64(len(in)))
	nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_, err := nc.Write(in)
	return err == nil
}

// drain reads and counts responses until the connection ends.
func (w *hostileWorker) drain(nc net.Conn, done chan<- struct{}) {
	defer close(done)
	var hdr [4]byte
	for {
		if _, err := io.ReadFull(nc, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || isConnReset(err) {
				w.st.closedByIt.Add(1)
			}
			return
		}
		n := int64(binary.BigEndian.Uint32(hdr[:]))
		if n < 0 || n > 256<<20 {
			return
		}
		if _, err := io.CopyN(io.Discard, nc, n); err != nil {
			return
		}
		w.st.responses.Add(1)
	}
}

func isConnReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

// session sends 1 to 40 frames on one connection, pacing them a little,
// the last one most likely mutated, and reads the responses; or (read
// false) it pipelines 30 to 150 requests that have large answers, never
// reads any, and holds the connection for a while.
func (w *hostileWorker) session(read bool) {
	nc := w.dial()
	if nc == nil {
		time.Sleep(10 * time.Millisecond)
		return
	}
	defer nc.Close()
	done := make(chan struct{})
	if read {
		go w.drain(nc, done)
	} else {
		close(done)
	}
	n := 1 + w.rng.IntN(40)
	if !read {
		n = 30 + w.rng.IntN(120)
	}
	// Half the sessions are mostly valid requests (so that there are
	// answers to read: a frame the broker cannot parse ends the
	// connection, dropping the answers still due), half mostly mutated.
	pMutate := []float64{0.1, 0.75}[w.rng.IntN(2)]
	for i := range n {
		var in []byte
		switch {
		case !read:
			in = w.bigAnswerFrame()
		case i < n-1:
			in = w.frameWithBody(pMutate)
		default:
			in = w.frameWithBody(0.9)
		}
		if !w.write(nc, in) {
			break
		}
		if read && w.rng.IntN(4) == 0 {
			time.Sleep(time.Duration(w.rng.IntN(3)) * time.Millisecond)
		}
	}
	if !read {
		w.hold(time.Duration(200+w.rng.IntN(1500)) * time.Millisecond)
		return
	}
	select {
	case <-done:
	case <-time.After(time.Duration(w.rng.IntN(300)) * time.Millisecond):
	}
}

// frameWithBody returns a base frame with its size prefix, mutated (one
// to three mutations) with probability pMutate.
func (w *hostileWorker) frameWithBody(pMutate float64) []byte {
	f := &w.frames[w.rng.IntN(len(w.frames))]
	body := append([]byte(nil), f.body...)
	if w.rng.Float64() >= pMutate {
		w.st.valid.Add(1)
	} else {
		w.st.mutated.Add(1)
		for range 1 + w.rng.IntN(3) {
			if len(body) == 0 {
				break
			}
			i := w.rng.IntN(len(hostileMutators))
			if f.batchLen > 0 && w.rng.IntN(3) == 0 {
				i = len(hostileMutators) - 1
			}
			w.st.hostileMutators[i].Add(1)
			body = hostileMutators[i].fn(w.rng, f, body, w.frames)
		}
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// bigAnswerFrame is an unmutated request whose answer is much larger
// than the request: fetches, metadata of every topic, configs.
func (w *hostileWorker) bigAnswerFrame() []byte {
	for {
		f := &w.frames[w.rng.IntN(len(w.frames))]
		switch f.key {
		case 1, 3, 32, 35, 15, 16:
			w.st.valid.Add(1)
			return append(binary.BigEndian.AppendUint32(nil, uint32(len(f.body))), f.body...)
		}
	}
}

// sendBombs sends a produce request whose batch is a decompression bomb
// (a few bytes or KiB that expand to 80 MiB, or a snappy block declaring
// 60 MiB) and reads the answer, even past the deadline. A bomb costs the
// broker CPU (it decodes up to its 64 MiB bound; decompressions past 1 MiB
// take turns), which no broker can spend without limit, so at most eight
// (two under -race) are in flight at once (bombTokens): what is tested is
// that the broker's memory stays bounded while many connections send
// them, not that it decompresses without end.
func (w *hostileWorker) sendBombs() {
	if time.Until(w.deadline) < 3*time.Second {
		return // leave the last seconds for answers to the bombs in flight
	}
	select {
	case w.bombTokens <- struct{}{}:
		defer func() { <-w.bombTokens }()
	default:
		return
	}
	nc := w.dial()
	if nc == nil {
		return
	}
	defer nc.Close()
	w.st.valid.Add(1)
	if !w.write(nc, w.bombs[w.rng.IntN(len(w.bombs))]) {
		return
	}
	var hdr [4]byte
	nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadFull(nc, hdr[:]); err != nil {
		return
	}
	if _, err := io.CopyN(io.Discard, nc, int64(binary.BigEndian.Uint32(hdr[:]))); err == nil {
		w.st.responses.Add(1)
	}
}

// garbage sends random bytes, with a plausible size prefix half the time.
func (w *hostileWorker) garbage() {
	nc := w.dial()
	if nc == nil {
		return
	}
	defer nc.Close()
	b := make([]byte, 1+w.rng.IntN(8192))
	for i := range b {
		b[i] = byte(w.rng.Uint32())
	}
	if w.rng.IntN(2) == 0 && len(b) > 4 {
		binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	}
	w.st.raw.Add(1)
	w.write(nc, b)
	w.readBriefly(nc, 100*time.Millisecond)
}

// lengthAttack sends frames whose size prefix lies.
func (w *hostileWorker) lengthAttack() {
	nc := w.dial()
	if nc == nil {
		return
	}
	defer nc.Close()
	w.st.raw.Add(1)
	f := w.frames[w.rng.IntN(len(w.frames))].body
	var in []byte
	hold := time.Duration(0)
	switch w.rng.IntN(7) {
	case 0: // negative size
		in = binary.BigEndian.AppendUint32(nil, []uint32{0xffffffff, 0x80000000, 0xfffffff0}[w.rng.IntN(3)])
		in = append(in, f...)
	case 1: // above socket.request.max.bytes
		in = binary.BigEndian.AppendUint32(nil, []uint32{hostileMaxRequest + 1, 100 << 20, 0x7fffffff}[w.rng.IntN(3)])
		in = append(in, f...)
	case 2: // the largest allowed size, a little of it, then a stall
		in = binary.BigEndian.AppendUint32(nil, hostileMaxRequest)
		in = append(in, f...)
		in = append(in, make([]byte, w.rng.IntN(64<<10))...)
		hold = time.Duration(200+w.rng.IntN(1500)) * time.Millisecond
	case 3: // a size shorter than the frame: the rest reads as the next frame
		in = binary.BigEndian.AppendUint32(nil, uint32(w.rng.IntN(len(f)+1)))
		in = append(in, f...)
	case 4: // tiny frames, shorter than a request header
		for range 1 + w.rng.IntN(5) {
			n := w.rng.IntN(10)
			in = binary.BigEndian.AppendUint32(in, uint32(n))
			in = append(in, f[:min(n, len(f))]...)
		}
	case 5: // a size longer than the frame, then the connection ends
		in = binary.BigEndian.AppendUint32(nil, uint32(len(f)+1+w.rng.IntN(1000)))
		in = append(in, f...)
	case 6: // many frames in one write, the last one cut
		for range 2 + w.rng.IntN(20) {
			in = append(in, w.frameWithBody(0.5)...)
		}
		in = in[:len(in)-w.rng.IntN(min(len(in), 50))]
	}
	if !w.write(nc, in) {
		return
	}
	if hold > 0 {
		w.hold(hold)
		return
	}
	w.readBriefly(nc, 100*time.Millisecond)
}

// slowloris sends the start of a frame, then a byte now and then.
func (w *hostileWorker) slowloris() {
	nc := w.dial()
	if nc == nil {
		return
	}
	defer nc.Close()
	w.st.raw.Add(1)
	in := w.frameWithBody(0.5)
	cut := 1 + w.rng.IntN(min(len(in), 12))
	if !w.write(nc, in[:cut]) {
		return
	}
	for i := cut; i < len(in) && i < cut+8 && time.Now().Before(w.deadline); i++ {
		w.hold(time.Duration(50+w.rng.IntN(250)) * time.Millisecond)
		nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if _, err := nc.Write(in[i : i+1]); err != nil {
			return
		}
	}
}

// hold sleeps for d, or until the deadline or the broker's death.
func (w *hostileWorker) hold(d time.Duration) {
	tm := time.NewTimer(min(d, max(0, time.Until(w.deadline))))
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-w.gone:
	}
}

// rawConn sends in on its own connection and reads what comes back for
// up to d.
func (w *hostileWorker) rawConn(in []byte, d time.Duration) {
	nc := w.dial()
	if nc == nil {
		return
	}
	defer nc.Close()
	w.st.raw.Add(1)
	if w.write(nc, in) {
		w.readBriefly(nc, d)
	}
}

func (w *hostileWorker) readBriefly(nc net.Conn, d time.Duration) {
	nc.SetReadDeadline(time.Now().Add(d))
	io.Copy(io.Discard, nc)
}

// saveHostileInputs writes the last inputs of every worker to a new
// directory and returns its path.
func saveHostileInputs(t *testing.T, workers []*hostileWorker) string {
	dir, err := os.MkdirTemp("", "kbroker-hostile-")
	if err != nil {
		return "(not saved: " + err.Error() + ")"
	}
	for _, w := range workers {
		w.mu.Lock()
		for i, in := range w.recent {
			if in != nil {
				os.WriteFile(filepath.Join(dir, fmt.Sprintf("conn%02d-%d.bin", w.id, (w.next-len(w.recent)+i+len(w.recent))%len(w.recent))), in, 0o644)
			}
		}
		w.mu.Unlock()
	}
	return dir
}

func logTail(s string, lines int) string {
	l := strings.Split(s, "\n")
	return strings.Join(l[max(0, len(l)-lines):], "\n")
}

// goodClients are the well-behaved producers and group consumer.
type goodClients struct {
	topic string
	stopc chan struct{}
	wg    sync.WaitGroup

	mu      sync.Mutex
	acked   map[int32][]*kgo.Record // by partition, in acknowledgement order
	errs    []error
	batches int
	seen    map[string]bool // keys the group consumer received
	bad     []string        // records the consumer found damaged

	consCtx    context.Context
	consCancel context.CancelFunc
	consDone   chan struct{}
}

// goodRecordValue is the value of the record with key k: derived from it, so
// any damage shows.
func goodRecordValue(k []byte) []byte {
	h := sha256.Sum256(k)
	return bytes.Repeat(h[:], 1+int(h[0])%16)
}

func startGoodClients(t *testing.T, addr, topic, group string) *goodClients {
	t.Helper()
	g := &goodClients{topic: topic, stopc: make(chan struct{}), acked: map[int32][]*kgo.Record{}, seen: map[string]bool{}, consDone: make(chan struct{})}
	for i, c := range []kgo.CompressionCodec{kgo.ZstdCompression(), kgo.NoCompression()} {
		cl := newKgo(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(c),
			kgo.RecordDeliveryTimeout(60*time.Second), kgo.ProducerLinger(5*time.Millisecond))
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for seq := 0; ; seq++ {
				select {
				case <-g.stopc:
					return
				default:
				}
				recs := make([]*kgo.Record, 20)
				for j := range recs {
					k := fmt.Appendf(nil, "producer-%d-%d-%d", i, seq, j)
					recs[j] = &kgo.Record{Key: k, Value: goodRecordValue(k)}
				}
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				res := cl.ProduceSync(ctx, recs...)
				cancel()
				g.mu.Lock()
				g.batches++
				if err := res.FirstErr(); err != nil {
					g.errs = append(g.errs, err)
				}
				for _, r := range res {
					if r.Err == nil {
						g.acked[r.Record.Partition] = append(g.acked[r.Record.Partition], r.Record)
					}
				}
				g.mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			}
		}()
	}
	cons := newKgo(t, addr, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	g.consCtx, g.consCancel = context.WithCancel(context.Background())
	go func() {
		defer close(g.consDone)
		for g.consCtx.Err() == nil {
			fs := cons.PollFetches(g.consCtx)
			g.mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				if !bytes.Equal(r.Value, goodRecordValue(r.Key)) {
					g.bad = append(g.bad, fmt.Sprintf("%s-%d@%d key %q", r.Topic, r.Partition, r.Offset, r.Key))
				}
				g.seen[string(r.Key)] = true
			})
			g.mu.Unlock()
		}
	}()
	return g
}

// stop ends the producers and checks that every produce succeeded, then
// waits (up to 60 s) for the group consumer to have received every
// acknowledged record.
func (g *goodClients) stop(t *testing.T) {
	t.Helper()
	close(g.stopc)
	g.wg.Wait()
	g.mu.Lock()
	if len(g.errs) > 0 {
		t.Errorf("%d of %d good produce calls failed under hostile load, the first: %v", len(g.errs), g.batches, g.errs[0])
	}
	n := 0
	for _, rs := range g.acked {
		n += len(rs)
	}
	t.Logf("good clients: %d records in %d produce calls acknowledged", n, g.batches)
	g.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		g.mu.Lock()
		missing := 0
		for _, rs := range g.acked {
			for _, r := range rs {
				if !g.seen[string(r.Key)] {
					missing++
				}
			}
		}
		g.mu.Unlock()
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the good group consumer is still missing %d acknowledged records after 60 s", missing)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	g.consCancel()
	<-g.consDone
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.bad) > 0 {
		t.Errorf("the good consumer received %d damaged records, the first: %v", len(g.bad), g.bad[0])
	}
}

// verify reads the good topic back from the start: exactly the
// acknowledged records, at their offsets, intact.
func (g *goodClients) verify(t *testing.T, addr string) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	want := map[int32]int64{}
	for p, rs := range g.acked {
		slices.SortFunc(rs, func(a, b *kgo.Record) int { return int(a.Offset - b.Offset) })
		want[p] = int64(len(rs))
	}
	got := readGoodTopic(t, addr, g.topic, want)
	for p, rs := range g.acked {
		if len(got[p]) != len(rs) {
			t.Errorf("%s-%d holds %d records, %d were acknowledged", g.topic, p, len(got[p]), len(rs))
			continue
		}
		for i, r := range rs {
			h := got[p][i]
			if h.Offset != r.Offset || !bytes.Equal(h.Key, r.Key) || !bytes.Equal(h.Value, r.Value) {
				t.Errorf("%s-%d: record %d is %q at offset %d, acknowledged %q at offset %d", g.topic, p, i, h.Key, h.Offset, r.Key, r.Offset)
				break
			}
		}
	}
}

// readGoodTopic reads every record of topic's partitions from offset
// 0 until the end offsets, which must equal n (records per partition:
// the good topic has no transactions or markers).
func readGoodTopic(t *testing.T, addr, topic string, n map[int32]int64) map[int32][]*kgo.Record {
	t.Helper()
	adm := newAdmin(t, addr)
	end := endOffsets(t, adm, topic)
	for p, o := range end {
		if n[p] != o {
			t.Errorf("%s-%d ends at offset %d; %d records were acknowledged", topic, p, o, n[p])
		}
	}
	parts := map[int32]kgo.Offset{}
	total := int64(0)
	for p, o := range end {
		parts[p] = kgo.NewOffset().At(0)
		total += o
	}
	cl := newKgo(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}), kgo.FetchMaxWait(100*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := map[int32][]*kgo.Record{}
	for got := int64(0); got < total; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("reading %s back: %d of %d records after 60 s", topic, got, total)
		}
		fs.EachError(func(_ string, p int32, err error) { t.Errorf("reading %s-%d back: %v", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			out[r.Partition] = append(out[r.Partition], r)
			got++
		})
	}
	return out
}
