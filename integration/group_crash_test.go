package integration

// Committed offsets across SIGKILL of the binary in sync flush mode: an
// acknowledged commit is durable.

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestGroupCrashKill9: the binary in sync flush mode (offsets snapshotted
// every 200 ms) is killed with SIGKILL while a kgo member of a group
// consumes 4 partitions and commits after every poll of at most 5
// records, then started again; KBROKER_GROUP_KILLS times (3 by default).
// Odd rounds kill a random 20–300 ms after the member's first acknowledged
// commit, while it commits; even rounds once it has committed everything
// there is. After each restart kadm's FetchOffsets shows, for every
// partition, the offset of the last acknowledged commit, or that of the
// commit in flight at the kill (it may or may not have been written). In
// each round the member starts every partition exactly at its committed
// offset.
func TestGroupCrashKill9(t *testing.T) {
	t.Parallel()
	kills := testenv.Count(t, "KBROKER_GROUP_KILLS", 3)
	start := time.Now()
	o := groupOpts(map[string]string{"kbroker.offsets.snapshot.interval.ms": "200"})
	o.flush = "sync"
	b := startBinary(t, o.args(t)...)
	topic, group := topicName(t), groupName(t)
	createGroupTopic(t, newAdmin(t, b.Addr()), topic, 4)

	committed := map[int32]int64{} // as FetchOffsets showed after the last restart
	inFlightKills := 0
	for round := 1; round <= kills; round++ {
		// Odd rounds kill the broker while the member commits, even ones
		// once it committed everything and waits for more.
		idle := round%2 == 0
		n := 4000
		if idle {
			n = 200
		}
		produceGroupRecords(t, b.Addr(), topic, 4, n, fmt.Sprintf("r%d", round))
		ends := endOffsets(t, newAdmin(t, b.Addr()), topic)
		acked, inFlight := groupCrashRound(t, b, group, topic, round, committed, ends, idle)
		if inFlight != nil {
			inFlightKills++
		}
		b.start(t)
		got := committedOffsets(t, newAdmin(t, b.Addr()), group, topic)
		for p := range int32(4) {
			g, gok := got[p]
			a, aok := acked[p]
			f, fok := inFlight[p]
			switch {
			case gok == aok && g == a:
			case fok && gok && g == f:
			default:
				t.Errorf("round %d: partition %d: committed offset %d (present %v) after the kill; the last acknowledged commit was %d (present %v), the one in flight %d (present %v)",
					round, p, g, gok, a, aok, f, fok)
			}
		}
		if idle && inFlight != nil {
			t.Errorf("round %d: a commit was in flight when the idle member's broker was killed: %v", round, inFlight)
		}
		t.Logf("round %d: after the kill and restart, committed %v; acknowledged %v, in flight %v", round, got, acked, inFlight)
		if t.Failed() {
			return
		}
		committed = got
	}
	t.Logf("%d kills (%d with a commit in flight) in %v", kills, inFlightKills, time.Since(start).Round(time.Millisecond))
}

// groupCrashRound runs a kgo member of group on b, starting from
// committed, and kills b a random 20–300 ms after the first acknowledged
// commit, or when idle once the member committed ends. It returns the offsets of the last acknowledged commit of each
// partition (committed for those it did not commit) and those of the
// commit in flight at the kill, if any.
func groupCrashRound(t *testing.T, b *binaryBroker, group, topic string, round int, committed, ends map[int32]int64, idle bool) (acked, inFlight map[int32]int64) {
	t.Helper()
	log := newMemberLog(t, fmt.Sprintf("kgo member of round %d", round))
	cl, err := kgo.NewClient(append(groupKgoOpts(group, topic),
		kgo.SeedBrokers(b.Addr()),
		kgo.ClientID(fmt.Sprintf("crash-%d", round)),
		kgo.RequestTimeoutOverhead(2*time.Second),
		kgo.RetryTimeout(2*time.Second),
		kgo.WithLogger(kgo.BasicLogger(&log.buf, kgoGroupLogLevel(t), nil)),
	)...)
	if err != nil {
		t.Fatal(err)
	}

	var (
		mu       sync.Mutex
		failed   error // the member's own check failed
		commits  int
		firstAck = make(chan struct{})
	)
	acked = maps.Clone(committed)
	next := maps.Clone(committed) // the offset each partition must deliver next
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollRecords(ctx, 5)
			recs := fs.Records()
			if ctx.Err() != nil || len(recs) == 0 {
				cl.AllowRebalance()
				continue
			}
			offs := map[int32]int64{}
			for _, r := range recs {
				if r.Offset != next[r.Partition] {
					mu.Lock()
					failed = fmt.Errorf("partition %d: delivered offset %d, want %d (committed %v at the start of the round)", r.Partition, r.Offset, next[r.Partition], committed)
					mu.Unlock()
					cancel()
					break
				}
				next[r.Partition] = r.Offset + 1
				offs[r.Partition] = r.Offset + 1
			}
			if ctx.Err() != nil {
				cl.AllowRebalance()
				continue
			}
			mu.Lock()
			inFlight = offs
			mu.Unlock()
			err := cl.CommitRecords(ctx, recs...)
			mu.Lock()
			if err == nil {
				maps.Copy(acked, offs)
				inFlight = nil
				if commits++; commits == 1 {
					close(firstAck)
				}
			} else {
				log.Printf("test: commit of %v: %v", offs, err)
			}
			mu.Unlock()
			cl.AllowRebalance()
			if err != nil {
				return // the broker is gone: inFlight stays
			}
		}
	}()

	select {
	case <-firstAck:
	case <-done:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("round %d: the member stopped before its first commit: %v", round, failed)
	case <-b.exited:
		t.Fatalf("round %d: kbroker exited on its own: %v", round, b.err)
	case <-time.After(crashWait):
		t.Fatalf("round %d: no commit acknowledged within %v", round, crashWait)
	}
	if idle {
		awaitGroup(t, fmt.Sprintf("round %d: the member to commit %v", round, ends), func() bool {
			mu.Lock()
			defer mu.Unlock()
			return equalOffsets(acked, ends)
		}, func() string {
			mu.Lock()
			defer mu.Unlock()
			return fmt.Sprintf("acknowledged %v, in flight %v, error %v", acked, inFlight, failed)
		})
		time.Sleep(time.Duration(rand.IntN(100)) * time.Millisecond)
	} else {
		time.Sleep(time.Duration(20+rand.IntN(281)) * time.Millisecond)
	}
	b.kill9(t, fmt.Sprintf("round %d", round), crashWait)

	cancel()
	select {
	case <-done:
	case <-time.After(crashWait):
		t.Fatalf("round %d: the member did not stop within %v", round, crashWait)
	}
	closed := make(chan struct{})
	go func() {
		cl.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(crashWait):
		t.Fatalf("round %d: closing the member took over %v", round, crashWait)
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		t.Fatalf("round %d: %v", round, failed)
	}
	t.Logf("round %d: killed the broker after %d acknowledged commits", round, commits)
	return acked, inFlight
}
