package txn

import (
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/internal/testenv"
	"github.com/kbroker/kbroker/partition"
)

// endV2 is an EndTxn of transactions v2.
func (e *env) endV2(id string, pid int64, epoch int16, commit bool) EndResult {
	ch := make(chan EndResult, 2)
	e.c.End(EndRequest{TransactionalID: id, ProducerID: pid, Epoch: epoch, Commit: commit, V2: true}, func(r EndResult) { ch <- r })
	return <-ch
}

func (e *env) addV2(id string, pid int64, epoch int16, tps ...TopicPartition) error {
	ch := make(chan error, 2)
	e.c.AddPartitionsV2(id, pid, epoch, tps, 0, func(err error) { ch <- err })
	return <-ch
}

// wantEnd checks an EndTxn v2 answer.
func wantEnd(t *testing.T, what string, r EndResult, code *kerr.Error, pid int64, epoch int16) {
	t.Helper()
	testenv.WantErr(t, what, r.Err, code)
	if code != nil {
		pid, epoch = -1, -1
	}
	if r.ProducerID != pid || r.Epoch != epoch {
		t.Fatalf("%s: got pid %d epoch %d, want pid %d epoch %d", what, r.ProducerID, r.Epoch, pid, epoch)
	}
}

// TestV2EpochBumpPerTransaction: every EndTxn v2 bumps the epoch, the
// markers carry the bumped epoch, and the answer is the epoch to go on
// with; the old epoch is fenced everywhere after.
func TestV2EpochBumpPerTransaction(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			run(t, mode, func(t *testing.T, e *env) {
				pid, epoch := e.mustInit("a")
				for i := range 5 {
					commit := i%2 == 0
					testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", int32(i)), tp("u", 0)), nil)
					e.wantState("a", Ongoing, pid, epoch)
					wantEnd(t, "end", e.endV2("a", pid, epoch, commit), nil, pid, epoch+1)
					settle()
					calls := e.markers.get()
					last := calls[len(calls)-1]
					if len(calls) != i+1 || last.PID != pid || last.Epoch != epoch+1 || last.Commit != commit || last.TV != 2 ||
						!slices.Equal(last.Partitions, []TopicPartition{tp("t", int32(i)), tp("u", 0)}) {
						t.Fatalf("markers %v", calls)
					}
					want := CompleteAbort
					if commit {
						want = CompleteCommit
					}
					e.wantState("a", want, pid, epoch+1)
					old := epoch
					epoch++
					// The old epoch is fenced, except as a retry of the
					// same decision, answered with the new epoch.
					testenv.WantErr(t, "verify old epoch", e.c.Verify("a", pid, old, tp("t", int32(i))), kerr.ProducerFenced)
					testenv.WantErr(t, "add old epoch", e.addV2("a", pid, old, tp("t", 9)), kerr.ProducerFenced)
					wantEnd(t, "retry", e.endV2("a", pid, old, commit), nil, pid, epoch)
					wantEnd(t, "retry, the other decision", e.endV2("a", pid, old, !commit), kerr.InvalidTxnState, 0, 0)
					wantEnd(t, "two epochs back", e.endV2("a", pid, old-1, commit), kerr.ProducerFenced, 0, 0)
					if len(e.markers.get()) != i+1 {
						t.Fatal("a retried EndTxn wrote markers")
					}
				}
				// Commit with nothing open is not a transaction.
				wantEnd(t, "commit, nothing open", e.endV2("a", pid, epoch, true), kerr.InvalidTxnState, 0, 0)
			})
		})
	}
}

// TestV2AbortWithoutPartitions: under v2 a producer whose produces all
// failed before joining the transaction may abort it: the coordinator
// bumps the epoch with no markers to write.
func TestV2AbortWithoutPartitions(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		wantEnd(t, "abort from Empty", e.endV2("a", pid, epoch, false), nil, pid, epoch+1)
		settle()
		e.wantState("a", CompleteAbort, pid, epoch+1)
		wantEnd(t, "abort again", e.endV2("a", pid, epoch+1, false), nil, pid, epoch+2)
		settle()
		e.wantState("a", CompleteAbort, pid, epoch+2)
		if calls := e.markers.get(); len(calls) != 0 {
			t.Fatalf("markers for no partitions: %v", calls)
		}
		// After a commit, an abort with the current epoch is a new
		// (empty) transaction too.
		testenv.WantErr(t, "add", e.addV2("a", pid, epoch+2, tp("t", 0)), nil)
		wantEnd(t, "commit", e.endV2("a", pid, epoch+2, true), nil, pid, epoch+3)
		settle()
		wantEnd(t, "abort after commit", e.endV2("a", pid, epoch+3, false), nil, pid, epoch+4)
		settle()
		e.wantState("a", CompleteAbort, pid, epoch+4)
	})
}

// TestV2EpochOverflow: the EndTxn whose bump exhausts the epochs gets a
// fresh producer id with epoch 0; the markers carry the old id and the
// last epoch; a retry of it is recognised after the rotation, also after
// a restart.
func TestV2EpochOverflow(t *testing.T) {
	for _, crash := range []bool{false, true} {
		t.Run(map[bool]string{false: "close", true: "crash"}[crash], func(t *testing.T) {
			run(t, partition.FlushSync, func(t *testing.T, e *env) {
				pid, _ := e.mustInit("a")
				e.setEpoch("a", math.MaxInt16-2)
				epoch := int16(math.MaxInt16 - 2)
				testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", 0)), nil)
				// 32765 → 32766: still the same producer id.
				wantEnd(t, "commit at 32765", e.endV2("a", pid, epoch, true), nil, pid, epoch+1)
				settle()
				epoch++
				testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", 1)), nil)
				r := e.endV2("a", pid, epoch, true)
				if r.Err != nil || r.ProducerID == pid || r.ProducerID < 0 || r.Epoch != 0 {
					t.Fatalf("commit at 32766: %+v, want a new producer id with epoch 0", r)
				}
				next := r.ProducerID
				settle()
				calls := e.markers.get()
				if last := calls[len(calls)-1]; last.PID != pid || last.Epoch != math.MaxInt16 || !last.Commit {
					t.Fatalf("markers %v, want pid %d epoch 32767", calls, pid)
				}
				e.wantState("a", CompleteCommit, next, 0)
				e.restart(crash)
				settle()
				e.wantState("a", CompleteCommit, next, 0)
				wantEnd(t, "retry after the rotation", e.endV2("a", pid, math.MaxInt16-1, true), nil, next, 0)
				wantEnd(t, "old id, older epoch", e.endV2("a", pid, math.MaxInt16-2, true), kerr.InvalidProducerIDMapping, 0, 0)
				testenv.WantErr(t, "next transaction", e.addV2("a", next, 0, tp("t", 2)), nil)
				wantEnd(t, "commit", e.endV2("a", next, 0, true), nil, next, 1)
			})
		})
	}
}

// TestV2RetryWhilePreparing: a retry of an EndTxn v2 whose markers are
// still being written is CONCURRENT_TRANSACTIONS.
func TestV2RetryWhilePreparing(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", 0)), nil)
		e.markers.setHold(true)
		wantEnd(t, "commit", e.endV2("a", pid, epoch, true), nil, pid, epoch+1)
		settle()
		e.wantState("a", PrepareCommit, pid, epoch+1)
		wantEnd(t, "retry", e.endV2("a", pid, epoch, true), kerr.ConcurrentTransactions, 0, 0)
		wantEnd(t, "abort instead, completing", e.endV2("a", pid, epoch, false), kerr.ConcurrentTransactions, 0, 0)
		wantEnd(t, "current epoch", e.endV2("a", pid, epoch+1, true), kerr.ProducerFenced, 0, 0)
		testenv.WantErr(t, "next transaction", e.addV2("a", pid, epoch+1, tp("t", 0)), kerr.ConcurrentTransactions)
		e.markers.release()
		settle()
		e.wantState("a", CompleteCommit, pid, epoch+1)
		testenv.WantErr(t, "next transaction", e.addV2("a", pid, epoch+1, tp("t", 0)), nil)
	})
}

// TestV2MixedWithV1: a transaction ended with v1 keeps its epoch, the
// next one ended with v2 bumps it: a producer that changes version
// between transactions is served.
func TestV2MixedWithV1(t *testing.T) {
	run(t, partition.FlushAsync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add v1", e.add("a", pid, epoch, tp("t", 0)), nil)
		testenv.WantErr(t, "commit v1", e.end("a", pid, epoch, true), nil)
		settle()
		e.wantState("a", CompleteCommit, pid, epoch)
		testenv.WantErr(t, "add v2", e.addV2("a", pid, epoch, tp("t", 0)), nil)
		wantEnd(t, "commit v2", e.endV2("a", pid, epoch, true), nil, pid, epoch+1)
		settle()
		testenv.WantErr(t, "add v1", e.add("a", pid, epoch+1, tp("t", 0)), nil)
		testenv.WantErr(t, "abort v1", e.end("a", pid, epoch+1, false), nil)
		settle()
		e.wantState("a", CompleteAbort, pid, epoch+1)
		if calls := e.markers.get(); len(calls) != 3 || calls[0].Epoch != epoch || calls[1].Epoch != epoch+1 || calls[2].Epoch != epoch+1 {
			t.Fatalf("markers %v", calls)
		}
	})
}

// TestV2FenceBumpsOnce: with the broker at transaction.version 2 the
// coordinator's own abort (a timeout) bumps the epoch once, as in v1 and
// as Kafka 4.4 does, and writes its markers with it; the fenced
// producer's abort passes for a retry, its InitProducerId v3+ with its
// epoch too, and a new producer's InitProducerId gets the next epoch.
func TestV2FenceBumpsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnvWith(t, partition.FlushAsync, 3, testConfig())
		e.v2.Store(true)
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", 0)), nil)
		wantEnd(t, "commit", e.endV2("a", pid, epoch, true), nil, pid, epoch+1)
		epoch++
		testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", 0)), nil)
		time.Sleep(testTimeoutMs*time.Millisecond + 2*testAbortTick)
		settle()
		e.wantState("a", CompleteAbort, pid, epoch+1)
		calls := e.markers.get()
		if len(calls) != 2 || calls[1].Commit || calls[1].Epoch != epoch+1 {
			t.Fatalf("markers %v", calls)
		}
		// The timed-out producer's own abort passes for a retry of the
		// abort (Kafka's table: CompleteAbort, abort, epoch - 1) and
		// learns the epoch; an older epoch is fenced.
		wantEnd(t, "timed-out producer's abort", e.endV2("a", pid, epoch, false), nil, pid, epoch+1)
		wantEnd(t, "older epoch's abort", e.endV2("a", pid, epoch-1, false), kerr.ProducerFenced, 0, 0)
		// Its InitProducerId v3+ (KIP-360) with its epoch passes for a
		// retry, as in Kafka 4.4 (the fence's last epoch is the fenced
		// producer's), and gets the current epoch; an older one is fenced.
		if r := e.init("a", testTimeoutMs, pid, epoch); r.Err != nil || r.ProducerID != pid || r.Epoch != epoch+1 {
			t.Fatalf("timed-out producer's init with its epoch: %+v", r)
		}
		testenv.WantErr(t, "init with an older epoch", e.init("a", testTimeoutMs, pid, epoch-1).Err, kerr.ProducerFenced)
		if r := e.init("a", testTimeoutMs, -1, -1); r.Err != nil || r.ProducerID != pid || r.Epoch != epoch+2 {
			t.Fatalf("init after the fence: %+v", r)
		}
	})
}

// TestV2FenceRotatesAtExhaustion: a v2 fence whose epoch is exhausted
// allocates the next producer id, which the aborted transaction moves to.
func TestV2FenceRotatesAtExhaustion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnvWith(t, partition.FlushAsync, 3, testConfig())
		e.v2.Store(true)
		pid, _ := e.mustInit("a")
		e.setEpoch("a", math.MaxInt16-1)
		testenv.WantErr(t, "add", e.addV2("a", pid, math.MaxInt16-1, tp("t", 0)), nil)
		// InitProducerId of a new instance fences the open transaction.
		testenv.WantErr(t, "fencing init", e.init("a", testTimeoutMs, -1, -1).Err, kerr.ConcurrentTransactions)
		settle()
		calls := e.markers.get()
		if len(calls) != 1 || calls[0].PID != pid || calls[0].Epoch != math.MaxInt16 {
			t.Fatalf("markers %v", calls)
		}
		d := e.describe("a")
		if d.State != CompleteAbort || d.ProducerID == pid || d.Epoch != 0 {
			t.Fatalf("after the fence: %+v, want CompleteAbort with a new producer id, epoch 0", d)
		}
		if r := e.init("a", testTimeoutMs, -1, -1); r.Err != nil || r.ProducerID != d.ProducerID || r.Epoch != 1 {
			t.Fatalf("init after the fence: %+v", r)
		}
	})
}

// TestV2RecordsRoundTrip: the v2 fields survive the record encoding.
func TestV2RecordsRoundTrip(t *testing.T) {
	r := rec{id: "x", producerID: 5, prevProducerID: 4, nextProducerID: 9, v2: true, epoch: 32767, lastEpoch: -1,
		timeoutMs: 100, state: PrepareCommit, partitions: []TopicPartition{tp("a", 1)}, startMs: 10, updateMs: 20}
	got, ok, err := decodeRec(r.appendKey(nil), r.appendValue(nil))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if got.nextProducerID != 9 || !got.v2 || got.prevProducerID != 4 {
		t.Fatalf("decoded %+v", got)
	}
	r.v2, r.nextProducerID = false, -1
	if got, _, _ = decodeRec(r.appendKey(nil), r.appendValue(nil)); got.v2 || got.nextProducerID != -1 {
		t.Fatalf("decoded %+v", got)
	}
}

// TestV2CrashMidTransaction: a crash with a v2 commit prepared but its
// markers not written, and one with a v2 transaction open: after the
// restart the first completes with the bumped epoch's markers, and the
// second is aborted at its timeout, fencing with one bump.
func TestV2CrashMidTransaction(t *testing.T) {
	run(t, partition.FlushSync, func(t *testing.T, e *env) {
		e.v2.Store(true)
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", 0), tp("t", 1)), nil)
		qid, qepoch := e.mustInit("b")
		testenv.WantErr(t, "add", e.addV2("b", qid, qepoch, tp("t", 2)), nil)
		e.markers.setHold(true)
		wantEnd(t, "commit", e.endV2("a", pid, epoch, true), nil, pid, epoch+1)
		settle()
		e.wantState("a", PrepareCommit, pid, epoch+1)
		e.markers = &fakeMarkers{} // the held call dies with the process
		e.restart(true)
		settle()
		e.wantState("a", CompleteCommit, pid, epoch+1)
		calls := e.markers.get()
		if len(calls) != 1 || calls[0].PID != pid || calls[0].Epoch != epoch+1 || !calls[0].Commit ||
			!slices.Equal(calls[0].Partitions, []TopicPartition{tp("t", 0), tp("t", 1)}) {
			t.Fatalf("markers after the restart %v", calls)
		}
		wantEnd(t, "retry after the restart", e.endV2("a", pid, epoch, true), nil, pid, epoch+1)
		e.wantState("b", Ongoing, qid, qepoch)
		time.Sleep(testTimeoutMs*time.Millisecond + 2*testAbortTick)
		settle()
		e.wantState("b", CompleteAbort, qid, qepoch+1)
		if calls := e.markers.get(); len(calls) != 2 || calls[1].Commit || calls[1].Epoch != qepoch+1 {
			t.Fatalf("markers %v", calls)
		}
	})
}

// TestV2AddParksUntilComplete: an implicit add that meets the previous
// transaction still writing its markers is parked, not refused, and is
// answered once the completion is durable; with no wait it gets
// CONCURRENT_TRANSACTIONS at once (AddPartitionsToTxn v4+), and a parked
// add whose wait passes first gets it at the deadline.
func TestV2AddParksUntilComplete(t *testing.T) {
	for _, mode := range modes {
		t.Run(mode.String(), func(t *testing.T) {
			run(t, mode, func(t *testing.T, e *env) {
				pid, epoch := e.mustInit("a")
				testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", 0)), nil)
				e.markers.setHold(true)
				r := e.endV2("a", pid, epoch, true)
				wantEnd(t, "end", r, nil, pid, epoch+1)
				settle()
				e.wantState("a", PrepareCommit, pid, epoch+1)

				testenv.WantErr(t, "add without waiting", e.addV2("a", pid, epoch+1, tp("t", 1)), kerr.ConcurrentTransactions)

				got := make(chan error, 1)
				e.c.AddPartitionsV2("a", pid, epoch+1, []TopicPartition{tp("t", 1)}, time.Minute, func(err error) { got <- err })
				settle()
				select {
				case err := <-got:
					t.Fatalf("parked add answered %v before the completion", err)
				default:
				}
				e.markers.release()
				settle()
				select {
				case err := <-got:
					testenv.WantErr(t, "parked add", err, nil)
				default:
					t.Fatal("parked add not answered after the completion was durable")
				}
				e.wantState("a", Ongoing, pid, epoch+1)
				if d := e.describe("a"); !slices.Equal(d.Partitions, []TopicPartition{tp("t", 1)}) {
					t.Fatalf("partitions %v, want [t-1]", d.Partitions)
				}

				// A wait shorter than the completion: the deadline answers.
				e.markers.setHold(true)
				wantEnd(t, "end 2", e.endV2("a", pid, epoch+1, false), nil, pid, epoch+2)
				settle()
				start := time.Now()
				e.c.AddPartitionsV2("a", pid, epoch+2, []TopicPartition{tp("t", 2)}, time.Second, func(err error) { got <- err })
				err := <-got
				testenv.WantErr(t, "add past its wait", err, kerr.ConcurrentTransactions)
				if waited := time.Since(start); waited != time.Second {
					t.Fatalf("answered after %v, want the 1 s wait", waited)
				}
				e.markers.release()
				settle()
				e.wantState("a", CompleteAbort, pid, epoch+2)
			})
		})
	}
}

// TestV2ParkedAddAtClose: Close answers a parked add NOT_COORDINATOR.
func TestV2ParkedAddAtClose(t *testing.T) {
	run(t, partition.FlushSync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", 0)), nil)
		e.markers.setHold(true)
		wantEnd(t, "end", e.endV2("a", pid, epoch, true), nil, pid, epoch+1)
		settle()
		got := make(chan error, 1)
		e.c.AddPartitionsV2("a", pid, epoch+1, []TopicPartition{tp("t", 1)}, time.Minute, func(err error) { got <- err })
		settle()
		go e.markers.release() // so that Close does not wait on held markers forever
		e.c.Close()
		testenv.WantErr(t, "parked add at Close", <-got, kerr.NotCoordinator)
	})
}

// TestV2StopParking: StopParking answers parked adds NOT_COORDINATOR and
// later busy adds at once, so that a shutting-down broker's connections
// need not wait out their requests' timeouts.
func TestV2StopParking(t *testing.T) {
	run(t, partition.FlushSync, func(t *testing.T, e *env) {
		pid, epoch := e.mustInit("a")
		testenv.WantErr(t, "add", e.addV2("a", pid, epoch, tp("t", 0)), nil)
		e.markers.setHold(true)
		wantEnd(t, "end", e.endV2("a", pid, epoch, true), nil, pid, epoch+1)
		settle()
		got := make(chan error, 2)
		e.c.AddPartitionsV2("a", pid, epoch+1, []TopicPartition{tp("t", 1)}, time.Minute, func(err error) { got <- err })
		settle()
		e.c.StopParking()
		testenv.WantErr(t, "parked add at StopParking", <-got, kerr.NotCoordinator)
		e.c.AddPartitionsV2("a", pid, epoch+1, []TopicPartition{tp("t", 1)}, time.Minute, func(err error) { got <- err })
		testenv.WantErr(t, "busy add after StopParking", <-got, kerr.ConcurrentTransactions)
		e.markers.release()
		settle()
	})
}
