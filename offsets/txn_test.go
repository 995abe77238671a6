package offsets

import (
	"testing"

	"github.com/kbroker/kbroker/coordlog"
)

func (e *env) await(what string, f func(done func(error))) {
	e.t.Helper()
	ch := make(chan error, 1)
	f(func(err error) { ch <- err })
	if err := <-ch; err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// TestTxnOffsetsAcrossRestarts holds transactional offsets across
// snapshots and restarts (clean and without the final snapshot) until the
// marker comes: commit makes them visible, abort drops them, and a later
// plain commit of the same partition is overridden by the transaction's
// commit, in log order, as in Kafka.
func TestTxnOffsetsAcrossRestarts(t *testing.T) {
	for _, mode := range modes {
		for _, crash := range []bool{false, true} {
			t.Run(mode.String()+map[bool]string{false: "/clean", true: "/nosnapshot"}[crash], func(t *testing.T) {
				t.Parallel()
				e := newEnv(t, mode, 2)
				e.commit("g", c("t", 0, 1))
				e.await("txn commit 7", func(done func(error)) { e.s.CommitTxn("g", 7, 0, []Commit{c("t", 0, 50), c("t", 1, 60)}, done) })
				e.await("txn commit 8", func(done func(error)) { e.s.CommitTxn("g", 8, 0, []Commit{c("t", 2, 70)}, done) })
				e.want("g", map[TopicPartition]int64{{"t", 0}: 1})
				if !e.s.PendingTxn("g", TopicPartition{"t", 1}) {
					t.Fatal("no pending offset")
				}
				if err := e.s.Snapshot(); err != nil {
					t.Fatal(err)
				}
				e.restart(crash)
				e.want("g", map[TopicPartition]int64{{"t", 0}: 1})
				e.commit("g", c("t", 0, 2)) // a plain commit after the transaction's
				part := []int32{int32(coordlog.PartitionFor("g", 2))}
				e.await("commit marker", func(done func(error)) { e.s.CompleteTxn(part, 7, 0, 0, true, done) })
				e.await("abort marker", func(done func(error)) { e.s.CompleteTxn(part, 8, 0, 0, false, done) })
				want := map[TopicPartition]int64{{"t", 0}: 50, {"t", 1}: 60}
				e.want("g", want)
				if err := e.s.Snapshot(); err != nil {
					t.Fatal(err)
				}
				e.restart(crash)
				e.want("g", want)
				if e.s.PendingTxn("g", TopicPartition{"t", 2}) {
					t.Fatal("aborted offset still pending")
				}
			})
		}
	}
}
