package txn

import (
	"errors"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/partition"
)

func TestCommitAndAbort(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		if epoch != 0 {
			t.Fatalf("new id: epoch %d, want 0", epoch)
		}
		e.wantState("a", Empty, pid, 0)
		testenv.WantErr(t, "end in Empty", e.end("a", pid, epoch, true), kerr.InvalidTxnState)

		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", 1), tp("t", 0)), nil)
		testenv.WantErr(t, "add again", e.add("a", pid, epoch, tp("t", 0)), nil) // already in: at once
		testenv.WantErr(t, "add more", e.add("a", pid, epoch, tp("u", 0)), nil)
		d := e.describe("a")
		if d.State != Ongoing || !slices.Equal(d.Partitions, []TopicPartition{tp("t", 0), tp("t", 1), tp("u", 0)}) || d.StartTimeMs <= 0 || d.TimeoutMs != testTimeoutMs {
			t.Fatalf("after add: %+v", d)
		}
		testenv.WantErr(t, "verify", e.c.Verify("a", pid, epoch, tp("t", 1)), nil)
		testenv.WantErr(t, "verify other", e.c.Verify("a", pid, epoch, tp("t", 2)), kerr.TransactionAbortable)
		testenv.WantErr(t, "verify old epoch", e.c.Verify("a", pid, epoch-1, tp("t", 1)), kerr.ProducerFenced)
		testenv.WantErr(t, "verify other pid", e.c.Verify("a", pid+1, epoch, tp("t", 1)), kerr.InvalidProducerIDMapping)
		testenv.WantErr(t, "verify unknown", e.c.Verify("zz", pid, epoch, tp("t", 1)), kerr.InvalidProducerIDMapping)

		testenv.WantErr(t, "commit", e.end("a", pid, epoch, true), nil)
		settle()
		calls := e.markers.get()
		if len(calls) != 1 || !calls[0].Commit || calls[0].PID != pid || calls[0].Epoch != epoch || calls[0].TV != 0 ||
			!slices.Equal(calls[0].Partitions, []TopicPartition{tp("t", 0), tp("t", 1), tp("u", 0)}) {
			t.Fatalf("markers %v", calls)
		}
		e.wantState("a", CompleteCommit, pid, epoch)
		if d := e.describe("a"); len(d.Partitions) != 0 {
			t.Fatalf("partitions after commit: %v", d.Partitions)
		}
		testenv.WantErr(t, "commit retried", e.end("a", pid, epoch, true), nil)
		testenv.WantErr(t, "abort after commit", e.end("a", pid, epoch, false), kerr.InvalidTxnState)
		testenv.WantErr(t, "verify after commit", e.c.Verify("a", pid, epoch, tp("t", 1)), kerr.TransactionAbortable)

		// The next transaction on the same epoch, aborted.
		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", 5)), nil)
		testenv.WantErr(t, "abort", e.end("a", pid, epoch, false), nil)
		settle()
		calls = e.markers.get()
		if len(calls) != 2 || calls[1].Commit || !slices.Equal(calls[1].Partitions, []TopicPartition{tp("t", 5)}) {
			t.Fatalf("markers %v", calls)
		}
		e.wantState("a", CompleteAbort, pid, epoch)
		testenv.WantErr(t, "abort retried", e.end("a", pid, epoch, false), nil)
		testenv.WantErr(t, "commit after abort", e.end("a", pid, epoch, true), kerr.InvalidTxnState)
		if len(e.markers.get()) != 2 {
			t.Fatal("a retried EndTxn wrote markers")
		}
	})
}

func TestRequestErrors(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add unknown id", e.add("nope", pid, epoch, tp("t", 0)), kerr.InvalidProducerIDMapping)
		testenv.WantErr(t, "add other pid", e.add("a", pid+1, epoch, tp("t", 0)), kerr.InvalidProducerIDMapping)
		testenv.WantErr(t, "add other epoch", e.add("a", pid, epoch+1, tp("t", 0)), kerr.ProducerFenced)
		testenv.WantErr(t, "add empty id", e.add("", pid, epoch, tp("t", 0)), kerr.InvalidRequest)
		testenv.WantErr(t, "end unknown id", e.end("nope", pid, epoch, true), kerr.InvalidProducerIDMapping)
		testenv.WantErr(t, "end other pid", e.end("a", pid+1, epoch, true), kerr.InvalidProducerIDMapping)
		testenv.WantErr(t, "end other epoch", e.end("a", pid, epoch+1, false), kerr.ProducerFenced)
		testenv.WantErr(t, "end empty id", e.end("", pid, epoch, true), kerr.InvalidRequest)
		testenv.WantErr(t, "verify empty id", e.c.Verify("", pid, epoch, tp("t", 0)), kerr.InvalidRequest)
		testenv.WantErr(t, "add nothing", e.add("a", pid, epoch), nil)
		e.wantState("a", Empty, pid, epoch)

		for _, c := range []struct {
			name string
			req  InitRequest
			code *kerr.Error
		}{
			{"empty id", InitRequest{TimeoutMs: 1000, ProducerID: -1, Epoch: -1}, kerr.InvalidRequest},
			{"zero timeout", InitRequest{TransactionalID: "b", ProducerID: -1, Epoch: -1}, kerr.InvalidTransactionTimeout},
			{"negative timeout", InitRequest{TransactionalID: "b", TimeoutMs: -5, ProducerID: -1, Epoch: -1}, kerr.InvalidTransactionTimeout},
			{"timeout above max", InitRequest{TransactionalID: "b", TimeoutMs: 15*60*1000 + 1, ProducerID: -1, Epoch: -1}, kerr.InvalidTransactionTimeout},
			{"pid without epoch", InitRequest{TransactionalID: "b", TimeoutMs: 1000, ProducerID: 5, Epoch: -1}, kerr.InvalidRequest},
			{"epoch without pid", InitRequest{TransactionalID: "b", TimeoutMs: 1000, ProducerID: -1, Epoch: 3}, kerr.InvalidRequest},
		} {
			ch := make(chan InitResult, 1)
			e.c.InitProducerID(c.req, func(r InitResult) { ch <- r })
			r := <-ch
			testenv.WantErr(t, c.name, r.Err, c.code)
			if r.ProducerID != -1 || r.Epoch != -1 {
				t.Errorf("%s: got pid %d epoch %d with an error", c.name, r.ProducerID, r.Epoch)
			}
		}
		r := e.init("b", 15*60*1000, -1, -1) // the maximum itself is fine
		testenv.WantErr(t, "max timeout", r.Err, nil)
	})
}

func TestProducerIDAllocationFails(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		plain := errors.New("disk on fire")
		e.pidErr.Store(&plain)
		testenv.WantErr(t, "plain error", e.init("a", 1000, -1, -1).Err, kerr.CoordinatorNotAvailable)
		coded := error(kerr.CoordinatorLoadInProgress)
		e.pidErr.Store(&coded)
		testenv.WantErr(t, "coded error", e.init("a", 1000, -1, -1).Err, kerr.CoordinatorLoadInProgress)
		if d := e.describe("a"); !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
			t.Fatalf("a failed allocation left %+v", d)
		}
		e.pidErr.Store(nil)
		pid, epoch := e.mustInit("a")
		e.wantState("a", Empty, pid, epoch)
	})
}

// TestFencedByInitProducerID: a second producer with the same id fences
// the first; its InitProducerId aborts the open transaction first and is
// answered CONCURRENT_TRANSACTIONS until the abort is complete.
func TestFencedByInitProducerID(t *testing.T) {
	run(t, partition.FlushSync, func(t *testing.T, e *env) {
		pid, e0 := e.mustInit("a")
		// Without a transaction open: a plain epoch bump.
		_, e1 := e.mustInit("a")
		if e1 != e0+1 {
			t.Fatalf("second init: epoch %d, want %d", e1, e0+1)
		}
		testenv.WantErr(t, "old producer adds", e.add("a", pid, e0, tp("t", 0)), kerr.ProducerFenced)
		testenv.WantErr(t, "new producer adds", e.add("a", pid, e1, tp("t", 0), tp("t", 1)), nil)

		// With a transaction open: abort with epoch e1+1 first.
		e.markers.setHold(true)
		r := e.init("a", testTimeoutMs, -1, -1)
		testenv.WantErr(t, "init with an open transaction", r.Err, kerr.ConcurrentTransactions)
		e.wantState("a", PrepareAbort, pid, e1+1)
		testenv.WantErr(t, "fenced producer adds", e.add("a", pid, e1, tp("t", 2)), kerr.ProducerFenced)
		testenv.WantErr(t, "fenced producer commits", e.end("a", pid, e1, true), kerr.ProducerFenced)
		testenv.WantErr(t, "fenced producer verifies", e.c.Verify("a", pid, e1, tp("t", 0)), kerr.ProducerFenced)
		testenv.WantErr(t, "init while aborting", e.init("a", testTimeoutMs, -1, -1).Err, kerr.ConcurrentTransactions)
		settle()
		calls := e.markers.get()
		if len(calls) != 1 || calls[0].Commit || calls[0].Epoch != e1+1 || !slices.Equal(calls[0].Partitions, []TopicPartition{tp("t", 0), tp("t", 1)}) {
			t.Fatalf("abort markers %v", calls)
		}
		e.markers.release()
		settle()
		e.wantState("a", CompleteAbort, pid, e1+1)
		r = e.init("a", testTimeoutMs, -1, -1)
		if r.Err != nil || r.ProducerID != pid || r.Epoch != e1+2 {
			t.Fatalf("init after the abort: %+v, want pid %d epoch %d", r, pid, e1+2)
		}
	})
}

// TestConcurrentTransitions: while a transition is in flight (PrepareCommit
// with its markers pending), every request that would change the state is
// told to retry.
func TestConcurrentTransitions(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", 0)), nil)
		e.markers.setHold(true)
		testenv.WantErr(t, "commit", e.end("a", pid, epoch, true), nil)
		settle()
		e.wantState("a", PrepareCommit, pid, epoch)
		testenv.WantErr(t, "commit again", e.end("a", pid, epoch, true), kerr.ConcurrentTransactions)
		testenv.WantErr(t, "abort", e.end("a", pid, epoch, false), kerr.ConcurrentTransactions) // completing: in flight
		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", 1)), kerr.ConcurrentTransactions)
		testenv.WantErr(t, "init", e.init("a", testTimeoutMs, -1, -1).Err, kerr.ConcurrentTransactions)
		testenv.WantErr(t, "verify", e.c.Verify("a", pid, epoch, tp("t", 0)), kerr.ConcurrentTransactions)
		e.markers.release()
		settle()
		e.wantState("a", CompleteCommit, pid, epoch)

		// In PrepareCommit with nothing in flight (as after a restart
		// before the markers): the same decision is retriable, the
		// opposite one is not.
		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", 0)), nil)
		e.c.mu.Lock()
		e.c.mu.txns["a"].state = PrepareCommit
		e.c.mu.Unlock()
		testenv.WantErr(t, "commit in PrepareCommit", e.end("a", pid, epoch, true), kerr.ConcurrentTransactions)
		testenv.WantErr(t, "abort in PrepareCommit", e.end("a", pid, epoch, false), kerr.InvalidTxnState)
		e.c.mu.Lock()
		e.c.mu.txns["a"].state = PrepareAbort
		e.c.mu.Unlock()
		testenv.WantErr(t, "abort in PrepareAbort", e.end("a", pid, epoch, false), kerr.ConcurrentTransactions)
		testenv.WantErr(t, "commit in PrepareAbort", e.end("a", pid, epoch, true), kerr.InvalidTxnState)
	})
}

// TestTransactionTimeout: a transaction open longer than its timeout is
// aborted by the coordinator with an epoch bump that fences its producer.
func TestTransactionTimeout(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		r := e.init("a", 5000, -1, -1)
		pid, epoch := r.ProducerID, r.Epoch
		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", 0)), nil)
		start := time.Now()
		time.Sleep(4 * time.Second)
		settle()
		e.wantState("a", Ongoing, pid, epoch)
		// Activity does not extend the timeout: it runs from the start.
		testenv.WantErr(t, "add more", e.add("a", pid, epoch, tp("t", 1)), nil)
		time.Sleep(2500 * time.Millisecond) // the check after 5 s from the start
		settle()
		calls := e.markers.get()
		if len(calls) != 1 || calls[0].Commit || calls[0].Epoch != epoch+1 || calls[0].PID != pid {
			t.Fatalf("markers %v", calls)
		}
		if d := calls[0].At.Sub(start); d <= 5*time.Second || d > 5*time.Second+testAbortTick {
			t.Fatalf("aborted %v after the start, want within a check after 5s", d)
		}
		e.wantState("a", CompleteAbort, pid, epoch+1)
		testenv.WantErr(t, "old producer commits", e.end("a", pid, epoch, true), kerr.ProducerFenced)
		testenv.WantErr(t, "old producer adds", e.add("a", pid, epoch, tp("t", 0)), kerr.ProducerFenced)
		// KIP-360: the old producer cannot recover with its epoch.
		testenv.WantErr(t, "old producer recovers", e.init("a", 5000, pid, epoch).Err, kerr.ProducerFenced)
		// A new producer instance starts over.
		r = e.init("a", 5000, -1, -1)
		if r.Err != nil || r.Epoch != epoch+2 {
			t.Fatalf("init after timeout: %+v", r)
		}
		// Empty and completed transactions never time out.
		time.Sleep(time.Minute)
		settle()
		if len(e.markers.get()) != 1 {
			t.Fatalf("markers %v", e.markers.get())
		}
	})
}

// TestMarkerRetryBackoff: markers that fail are written again with a
// growing backoff until they succeed; the transaction stays in
// PrepareCommit meanwhile.
func TestMarkerRetryBackoff(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", 0), tp("t", 1), tp("t", 2)), nil)
		e.markers.mu.Lock()
		e.markers.fail = 6
		e.markers.mu.Unlock()
		testenv.WantErr(t, "commit", e.end("a", pid, epoch, true), nil)
		time.Sleep(time.Second)
		settle()
		e.wantState("a", PrepareCommit, pid, epoch)
		time.Sleep(time.Minute)
		settle()
		e.wantState("a", CompleteCommit, pid, epoch)
		calls := e.markers.get()
		if len(calls) != 7 {
			t.Fatalf("%d marker calls, want 7: %v", len(calls), calls)
		}
		want := []time.Duration{100, 200, 400, 800, 1600, 3200}
		for i, w := range want {
			if got := calls[i+1].At.Sub(calls[i].At); got != w*time.Millisecond {
				t.Errorf("retry %d after %v, want %v", i+1, got, w*time.Millisecond)
			}
			if !calls[i+1].Commit || calls[i+1].Epoch != epoch || len(calls[i+1].Partitions) != 3 {
				t.Errorf("retry %d: %v", i+1, calls[i+1])
			}
		}
		if backoff(20) != maxRetryBackoff || backoff(6) != 6400*time.Millisecond {
			t.Errorf("backoff(20) %v, backoff(6) %v", backoff(20), backoff(6))
		}

		// A MarkerError narrows the retry to what is left.
		testenv.WantErr(t, "add", e.add("a", pid, epoch, tp("t", 0), tp("t", 1), tp("t", 2)), nil)
		e.markers.mu.Lock()
		e.markers.fail = 1
		e.markers.failErr = &MarkerError{Remaining: []TopicPartition{tp("t", 1)}, Err: errors.New("one failed")}
		e.markers.mu.Unlock()
		testenv.WantErr(t, "abort", e.end("a", pid, epoch, false), nil)
		time.Sleep(time.Second)
		settle()
		calls = e.markers.get()[7:]
		if len(calls) != 2 || len(calls[0].Partitions) != 3 || !slices.Equal(calls[1].Partitions, []TopicPartition{tp("t", 1)}) || calls[1].Commit {
			t.Fatalf("calls %v", calls)
		}
		e.wantState("a", CompleteAbort, pid, epoch)
	})
}

// TestIDExpiration: ids idle longer than transactional.id.expiration.ms,
// with no transaction open, are removed with a tombstone.
func TestIDExpiration(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := testConfig()
		cfg.IDExpiration = time.Hour
		cfg.ExpirationCheckInterval = time.Minute
		cfg.MaxTimeout = 24 * time.Hour
		e := newEnvWith(t, partition.FlushSync, 3, cfg)
		pa, ea := e.mustInit("idle")
		pb, eb := e.mustInit("busy")
		pc, ec := e.mustInit("committed")
		testenv.WantErr(t, "add", e.add("committed", pc, ec, tp("t", 0)), nil)
		testenv.WantErr(t, "commit", e.end("committed", pc, ec, true), nil)
		r := e.init("open", 10*3600*1000, -1, -1) // a 10 h transaction
		testenv.WantErr(t, "add", e.add("open", r.ProducerID, r.Epoch, tp("t", 0)), nil)

		time.Sleep(30 * time.Minute)
		testenv.WantErr(t, "busy adds", e.add("busy", pb, eb, tp("t", 0)), nil)
		testenv.WantErr(t, "busy aborts", e.end("busy", pb, eb, false), nil)
		time.Sleep(31*time.Minute + time.Second)
		settle()
		for _, id := range []string{"idle", "committed"} {
			if d := e.describe(id); !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
				t.Errorf("%s not expired: %+v", id, d)
			}
		}
		e.wantState("busy", CompleteAbort, pb, eb)
		e.wantState("open", Ongoing, r.ProducerID, r.Epoch)
		testenv.WantErr(t, "expired id adds", e.add("idle", pa, ea, tp("t", 0)), kerr.InvalidProducerIDMapping)

		// The tombstones are durable: expired ids stay gone.
		e.restart(true)
		for _, id := range []string{"idle", "committed"} {
			if d := e.describe(id); !errors.Is(d.Err, kerr.TransactionalIDNotFound) {
				t.Errorf("%s back after restart: %+v", id, d)
			}
		}
		e.wantState("busy", CompleteAbort, pb, eb)
		// KIP-360 after expiry: the old producer id is accepted for a
		// recreated id, which gets a fresh producer id.
		r2 := e.init("idle", 1000, pa, ea)
		if r2.Err != nil || r2.ProducerID == pa || r2.Epoch != 0 {
			t.Fatalf("recreated id: %+v", r2)
		}
		time.Sleep(2 * time.Hour)
		settle()
		// "open" never expires while open, but times out after 10 h.
		e.wantState("open", Ongoing, r.ProducerID, r.Epoch)
	})
}

// TestKIP360 covers InitProducerId with the producer's current id and
// epoch (recovery from abortable errors and UNKNOWN_PRODUCER_ID).
func TestKIP360(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, _ := e.mustInit("a")
		r := e.init("a", testTimeoutMs, pid, 0)
		if r.Err != nil || r.ProducerID != pid || r.Epoch != 1 {
			t.Fatalf("recover at epoch 0: %+v", r)
		}
		// A retry whose answer was lost: the same answer, no bump.
		r = e.init("a", testTimeoutMs, pid, 0)
		if r.Err != nil || r.ProducerID != pid || r.Epoch != 1 {
			t.Fatalf("retry: %+v", r)
		}
		testenv.WantErr(t, "unknown epoch", e.init("a", testTimeoutMs, pid, 7).Err, kerr.ProducerFenced)
		testenv.WantErr(t, "other producer id", e.init("a", testTimeoutMs, pid+99, 1).Err, kerr.ProducerFenced)
		// A new producer instance forgets the last epoch: the previous
		// one can no longer pass for a retry.
		if _, ep := e.mustInit("a"); ep != 2 {
			t.Fatalf("plain init: epoch %d", ep)
		}
		testenv.WantErr(t, "fenced retry", e.init("a", testTimeoutMs, pid, 1).Err, kerr.ProducerFenced)
		// With an open transaction, recovery aborts it first, with a
		// fence: as in Kafka, the retry with the same epoch is then
		// fenced (the fence forgot the last epoch), and only a new
		// producer instance goes on.
		testenv.WantErr(t, "add", e.add("a", pid, 2, tp("t", 0)), nil)
		testenv.WantErr(t, "recover with a transaction open", e.init("a", testTimeoutMs, pid, 2).Err, kerr.ConcurrentTransactions)
		settle()
		e.wantState("a", CompleteAbort, pid, 3)
		testenv.WantErr(t, "retry after the fence", e.init("a", testTimeoutMs, pid, 2).Err, kerr.ProducerFenced)
		if _, ep := e.mustInit("a"); ep != 4 {
			t.Fatalf("init after the abort: epoch %d", ep)
		}
		// An unknown transactional id takes any producer id and gives
		// a fresh one (the producer lost its state).
		r = e.init("b", testTimeoutMs, 12345, 6)
		if r.Err != nil || r.ProducerID == 12345 || r.Epoch != 0 {
			t.Fatalf("unknown id with a producer id: %+v", r)
		}
	})
}

// setEpoch moves id's epoch in memory, as if it had been bumped that far.
func (e *env) setEpoch(id string, epoch int16) {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	e.c.mu.txns[id].epoch = epoch
}

// TestEpochExhaustion: at epoch 32766 the next InitProducerId gets a new
// producer id with epoch 0 (and a retry of it the same answer).
func TestEpochExhaustion(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, _ := e.mustInit("a")
		e.setEpoch("a", math.MaxInt16-2)
		r := e.init("a", testTimeoutMs, pid, math.MaxInt16-2)
		if r.Err != nil || r.ProducerID != pid || r.Epoch != math.MaxInt16-1 {
			t.Fatalf("bump to 32766: %+v", r)
		}
		r = e.init("a", testTimeoutMs, pid, math.MaxInt16-1)
		if r.Err != nil || r.ProducerID == pid || r.Epoch != 0 {
			t.Fatalf("rotation: %+v", r)
		}
		pid2 := r.ProducerID
		// The answer was lost; the producer retries with its old id.
		r = e.init("a", testTimeoutMs, pid, math.MaxInt16-1)
		if r.Err != nil || r.ProducerID != pid2 || r.Epoch != 0 {
			t.Fatalf("retried rotation: %+v, want pid %d epoch 0", r, pid2)
		}
		// The old id with an epoch that is not exhausted is fenced.
		testenv.WantErr(t, "old id", e.init("a", testTimeoutMs, pid, 5).Err, kerr.ProducerFenced)

		// A plain InitProducerId at an exhausted epoch rotates too.
		e.setEpoch("a", math.MaxInt16-1)
		r = e.init("a", testTimeoutMs, -1, -1)
		if r.Err != nil || r.ProducerID == pid2 || r.Epoch != 0 {
			t.Fatalf("plain rotation: %+v", r)
		}
		pid3 := r.ProducerID

		// A fence at 32766 uses the last epoch, 32767; the retry then
		// rotates.
		testenv.WantErr(t, "add", e.add("a", pid3, 0, tp("t", 0)), nil)
		e.setEpoch("a", math.MaxInt16-1)
		testenv.WantErr(t, "fence", e.init("a", testTimeoutMs, -1, -1).Err, kerr.ConcurrentTransactions)
		settle()
		e.wantState("a", CompleteAbort, pid3, math.MaxInt16)
		if calls := e.markers.get(); calls[len(calls)-1].Epoch != math.MaxInt16 {
			t.Fatalf("fence markers %v", calls[len(calls)-1])
		}
		r = e.init("a", testTimeoutMs, -1, -1)
		if r.Err != nil || r.ProducerID == pid3 || r.Epoch != 0 {
			t.Fatalf("rotation after the fence: %+v", r)
		}
	})
}

func TestAddOffsets(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		ch := make(chan error, 1)
		e.c.AddOffsets("a", pid, epoch, "group-1", func(err error) { ch <- err })
		testenv.WantErr(t, "add offsets", <-ch, nil)
		gp := e.deps().GroupPartition("group-1")
		testenv.WantErr(t, "verify the group's partition", e.c.Verify("a", pid, epoch, gp), nil)
		e.c.AddOffsets("a", pid, epoch-1, "group-1", func(err error) { ch <- err })
		testenv.WantErr(t, "old epoch", <-ch, kerr.ProducerFenced)
		testenv.WantErr(t, "commit", e.end("a", pid, epoch, true), nil)
		settle()
		if calls := e.markers.get(); len(calls) != 1 || !slices.Equal(calls[0].Partitions, []TopicPartition{gp}) {
			t.Fatalf("markers %v", calls)
		}
	})
}

// TestClose: requests waiting at Close get NOT_COORDINATOR, later ones
// COORDINATOR_NOT_AVAILABLE.
func TestClose(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		e.pidGate = make(chan struct{})
		ch := make(chan InitResult, 2)
		go e.c.InitProducerID(InitRequest{TransactionalID: "b", TimeoutMs: 1000, ProducerID: -1, Epoch: -1}, func(r InitResult) { ch <- r })
		settle() // parked, allocating
		if err := e.c.Close(); err != nil {
			t.Fatal(err)
		}
		r := <-ch
		testenv.WantErr(t, "parked init", r.Err, kerr.NotCoordinator)
		close(e.pidGate)
		settle()
		select {
		case r := <-ch:
			t.Fatalf("answered twice: %+v", r)
		default:
		}
		testenv.WantErr(t, "init after close", e.init("c", 1000, -1, -1).Err, kerr.CoordinatorNotAvailable)
		testenv.WantErr(t, "add after close", e.add("a", pid, epoch, tp("t", 0)), kerr.CoordinatorNotAvailable)
		testenv.WantErr(t, "end after close", e.end("a", pid, epoch, true), kerr.CoordinatorNotAvailable)
		testenv.WantErr(t, "verify after close", e.c.Verify("a", pid, epoch, tp("t", 0)), kerr.CoordinatorNotAvailable)
		testenv.WantErr(t, "describe after close", e.describe("a").Err, kerr.CoordinatorNotAvailable)
		testenv.WantErr(t, "list after close", e.c.List(nil, nil, -1).Err, kerr.CoordinatorNotAvailable)
		if err := e.c.Close(); err != nil {
			t.Fatalf("second close: %v", err)
		}
	})
}

// TestWriteTooLarge: a record the topic refuses fails the request with
// UNKNOWN_SERVER_ERROR and leaves nothing in flight.
func TestWriteTooLarge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := &env{t: t, dir: t.TempDir(), mode: partition.FlushAsync, parts: 1, cfg: testConfig(), markers: &fakeMarkers{}, topic: txnTopicConfig()}
		e.topic.MaxMessageBytes = 400
		e.nextPID.Store(1000)
		e.open()
		t.Cleanup(func() { e.c.Close(); e.ps.Close() })
		pid, epoch := e.mustInit("a")
		var many []TopicPartition
		for i := range 100 {
			many = append(many, tp("topic-with-a-long-name", int32(i)))
		}
		testenv.WantErr(t, "huge add", e.add("a", pid, epoch, many...), kerr.UnknownServerError)
		e.wantState("a", Empty, pid, epoch)
		testenv.WantErr(t, "small add", e.add("a", pid, epoch, tp("t", 0)), nil)
	})
}

func TestDescribeAndList(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pa, ea := e.mustInit("a")
		pb, eb := e.mustInit("b")
		testenv.WantErr(t, "add", e.add("b", pb, eb, tp("x", 1), tp("w", 0), tp("x", 0)), nil)
		start := time.Now().UnixMilli()
		time.Sleep(10 * time.Second)
		pc, ec := e.mustInit("c")
		testenv.WantErr(t, "add", e.add("c", pc, ec, tp("x", 0)), nil)

		ds := e.c.Describe([]string{"b", "nope", "", "a"})
		if d := ds[0]; d.Err != nil || d.State != Ongoing || d.ProducerID != pb || d.Epoch != eb || d.TimeoutMs != testTimeoutMs ||
			d.StartTimeMs != start || !slices.Equal(d.Partitions, []TopicPartition{tp("w", 0), tp("x", 0), tp("x", 1)}) {
			t.Errorf("b: %+v", d)
		}
		testenv.WantErr(t, "unknown", ds[1].Err, kerr.TransactionalIDNotFound)
		testenv.WantErr(t, "empty", ds[2].Err, kerr.InvalidRequest)
		if d := ds[3]; d.Err != nil || d.State != Empty || d.ProducerID != pa || d.Epoch != ea || d.StartTimeMs != -1 || len(d.Partitions) != 0 {
			t.Errorf("a: %+v", d)
		}

		ids := func(r ListResult) []string {
			var out []string
			for _, l := range r.Transactions {
				out = append(out, l.TransactionalID)
			}
			return out
		}
		if got := ids(e.c.List(nil, nil, -1)); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("all: %v", got)
		}
		r := e.c.List([]string{"Ongoing", "bogus"}, nil, -1)
		if got := ids(r); !slices.Equal(got, []string{"b", "c"}) || !slices.Equal(r.UnknownStates, []string{"bogus"}) {
			t.Errorf("ongoing: %v, unknown %v", got, r.UnknownStates)
		}
		if got := ids(e.c.List([]string{"ongoing"}, nil, -1)); len(got) != 0 {
			t.Errorf("state names are case-sensitive: %v", got)
		}
		if got := ids(e.c.List(nil, []int64{pc, 424242}, -1)); !slices.Equal(got, []string{"c"}) {
			t.Errorf("by producer id: %v", got)
		}
		// Running longer than 5 s: b; and a, whose start time is -1
		// (Kafka's arithmetic).
		if got := ids(e.c.List(nil, nil, 5000)); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("by duration: %v", got)
		}
		if got := ids(e.c.List([]string{"Ongoing"}, nil, 5000)); !slices.Equal(got, []string{"b"}) {
			t.Errorf("ongoing by duration: %v", got)
		}
		if l := e.c.List(nil, []int64{pb}, -1).Transactions; len(l) != 1 || l[0] != (Listing{"b", pb, Ongoing}) {
			t.Errorf("listing %+v", l)
		}
	})
}
