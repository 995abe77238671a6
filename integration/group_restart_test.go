package integration

// Committed offsets across broker restarts: a group consumes part of a
// topic, commits and stops; the broker restarts; the group resumes exactly
// after its commits.

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGroupRestart: 400 records on 4 partitions. A kgo member of the
// group consumes and commits exactly 200 of them and closes; the broker
// restarts and the committed offsets are still there; a new kgo member
// consumes and commits 100 more, starting exactly at the commits; the
// broker restarts again; a sarama member consumes the rest. Every record
// is consumed exactly once (no re-delivery after a restart, nothing
// skipped), and after a last restart the commits are at the end offsets.
// With the default offsets snapshot interval (a minute: the commits come
// back from the commit log, or from a snapshot written at shutdown) and
// with snapshots every 50 ms.
func TestGroupRestart(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		props map[string]string
	}{
		{"default-snapshots", nil},
		{"snapshot-every-50ms", map[string]string{"kbroker.offsets.snapshot.interval.ms": "50"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			eachBroker(t, groupOpts(tt.props), testGroupRestart)
		})
	}
}

func testGroupRestart(t *testing.T, b testBroker) {
	const partitions, total = 4, 400
	topic, group := topicName(t), groupName(t)
	adm := newAdmin(t, b.Addr())
	createGroupTopic(t, adm, topic, partitions)
	produceGroupRecords(t, b.Addr(), topic, partitions, total, "r")
	ends := endOffsets(t, adm, topic)
	tally := newGroupTally()

	committed := map[int32]int64{}
	for i, n := range []int{200, 100} {
		kgoConsumeExactly(t, b.Addr(), group, topic, fmt.Sprintf("kgo-%d", i), n, tally, committed)
		checkCommitted(t, newAdmin(t, b.Addr()), group, topic, committed)
		b.Restart(t)
		checkCommitted(t, newAdmin(t, b.Addr()), group, topic, committed)
		t.Logf("after %d records and a restart: committed %v", tally.total(), committed)
	}

	s := startSaramaMember(t, b.Addr(), group, topic, "sarama", tally, 0)
	tally.awaitAll(t, ends)
	adm = newAdmin(t, b.Addr())
	awaitCommitted(t, adm, group, topic, ends)
	s.close(t)
	tally.check(t, ends, true)
	b.Restart(t)
	checkCommitted(t, newAdmin(t, b.Addr()), group, topic, ends)
	t.Logf("%s", tally.summary())
}

// kgoConsumeExactly consumes exactly n records of topic as the only member
// of group, committing each poll's records (CommitRecords), then closes
// the client. committed holds the group's offsets before and is updated to
// after.
func kgoConsumeExactly(t *testing.T, addr, group, topic, name string, n int, tally *groupTally, committed map[int32]int64) {
	t.Helper()
	log := newMemberLog(t, "kgo "+name)
	cl, err := kgo.NewClient(append(groupKgoOpts(group, topic),
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.WithLogger(kgo.BasicLogger(&log.buf, kgoGroupLogLevel(t), nil)),
	)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), groupWait)
	defer cancel()
	for taken := 0; taken < n; {
		fs := cl.PollRecords(ctx, n-taken)
		if ctx.Err() != nil {
			t.Fatalf("%s consumed %d of %d records in %v: %s", name, taken, n, groupWait, tally.summary())
		}
		fs.EachError(func(topic string, p int32, err error) { log.Printf("test: fetch %s[%d]: %v", topic, p, err) })
		recs := fs.Records()
		for _, r := range recs {
			tally.add(name, r.Partition, r.Offset)
			committed[r.Partition] = max(committed[r.Partition], r.Offset+1)
		}
		if len(recs) > 0 {
			if err := cl.CommitRecords(ctx, recs...); err != nil {
				t.Fatalf("%s: CommitRecords: %v", name, err)
			}
		}
		taken += len(recs)
		cl.AllowRebalance()
	}
}
