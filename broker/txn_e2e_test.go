package broker

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionsKgo runs a kgo transactional producer that commits and
// aborts, and checks what read_committed and read_uncommitted consumers
// see.
func TestTransactionsKgo(t *testing.T) {
	srv := newTestServer(t, nil)
	createTopic(t, srv, "tx", 2)
	pr := newClient(t, srv, kgo.TransactionalID("tx-1"), kgo.TransactionTimeout(5*time.Second), kgo.DefaultProduceTopic("tx"))
	ctx := testCtx(t)
	produce := func(commit bool, n int, tag string) {
		t.Helper()
		if err := pr.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			r := &kgo.Record{Partition: int32(i % 2), Value: fmt.Appendf(nil, "%s-%d", tag, i)}
			if err := pr.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce: %v", err)
			}
		}
		if err := pr.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end transaction (commit %t): %v", commit, err)
		}
	}
	produce(true, 10, "c1")
	produce(false, 7, "a1")
	produce(true, 5, "c2")
	// kgo runs transactions v2 at transaction.version 2 (the default):
	// each EndTxn bumped the epoch of InitProducerId (0).
	described, err := newAdmin(t, srv).DescribeTransactions(ctx, "tx-1")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := described["tx-1"]; !ok || d.ProducerEpoch != 3 || d.State != "CompleteCommit" {
		t.Fatalf("after three transactions: %+v, want CompleteCommit at epoch 3 (transactions v2)", described)
	}

	read := func(level kgo.IsolationLevel) map[string]bool {
		t.Helper()
		cl := newClient(t, srv, kgo.ConsumeTopics("tx"), kgo.FetchIsolationLevel(level),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100*time.Millisecond))
		got := map[string]bool{}
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		for {
			fs := cl.PollFetches(cctx)
			if cctx.Err() != nil {
				return got
			}
			fs.EachRecord(func(r *kgo.Record) {
				if got[string(r.Value)] {
					t.Errorf("%s twice", r.Value)
				}
				got[string(r.Value)] = true
			})
		}
	}
	committed := read(kgo.ReadCommitted())
	if len(committed) != 15 {
		t.Errorf("read_committed saw %d records, want 15: %v", len(committed), committed)
	}
	for v := range committed {
		if v[0] == 'a' {
			t.Errorf("read_committed saw aborted %s", v)
		}
	}
	if all := read(kgo.ReadUncommitted()); len(all) != 22 {
		t.Errorf("read_uncommitted saw %d records, want 22", len(all))
	}
}
