package broker

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// createCompacted creates a one-partition topic with the configs that make
// the cleaner act at once (as Kafka's tests and tutorials set them).
func createCompacted(t *testing.T, adm *kadm.Client, name, policy string) {
	t.Helper()
	s := func(v string) *string { return &v }
	resp, err := adm.CreateTopic(testCtx(t), 1, 1, map[string]*string{
		"cleanup.policy":            s(policy),
		"segment.ms":                s("100"),
		"min.cleanable.dirty.ratio": s("0.01"),
		"min.compaction.lag.ms":     s("0"),
		"delete.retention.ms":       s("2000"),
	}, name)
	if err != nil || resp.Err != nil {
		t.Fatalf("create %s: %v %v", name, err, resp.Err)
	}
}

// consumeAll reads a partition from the start to its high watermark.
func consumeAll(t *testing.T, srv *InProcess, topicName string) []*kgo.Record {
	t.Helper()
	ctx := testCtx(t)
	adm := newAdmin(t, srv)
	ends, err := adm.ListEndOffsets(ctx, topicName)
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topicName, 0)
	cl := newClient(t, srv, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topicName: {0: kgo.NewOffset().AtStart()}}))
	var out []*kgo.Record
	for {
		if len(out) > 0 && out[len(out)-1].Offset >= end.Offset-1 {
			return out
		}
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("poll: %v", err)
		}
		out = append(out, fs.Records()...)
	}
}

// TestCompactedTopicWithKgo produces to a compacted topic through the
// broker with the cleaner running: keyless records are INVALID_RECORD,
// DeleteRecords is POLICY_VIOLATION, and a consumer from the start sees
// the latest value of every key once the cleaner ran, at the original
// offsets, then no tombstones after delete.retention.ms.
func TestCompactedTopicWithKgo(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, func(c *Config) { c.LogCleanerBackoff = 50 * time.Millisecond })
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	createCompacted(t, adm, "c", "compact")

	cl := newClient(t, srv, kgo.DefaultProduceTopic("c"), kgo.RecordRetries(2))
	err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("no key")}).FirstErr()
	if !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("keyless produce: %v, want INVALID_RECORD", err)
	}
	dr, err := adm.DeleteRecords(ctx, kadm.Offsets{"c": {0: {Topic: "c", Partition: 0, At: 0}}})
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := dr.Lookup("c", 0); !errors.Is(r.Err, kerr.PolicyViolation) {
		t.Fatalf("DeleteRecords on a compacted topic: %v, want POLICY_VIOLATION", r.Err)
	}

	const keys, rounds = 50, 40
	for r := range rounds {
		var recs []*kgo.Record
		for k := range keys {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "k%02d", k), Value: fmt.Appendf(nil, "%d", r)})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// Delete five keys.
	var tomb []*kgo.Record
	for k := range 5 {
		tomb = append(tomb, &kgo.Record{Key: fmt.Appendf(nil, "k%02d", k)})
	}
	if err := cl.ProduceSync(ctx, tomb...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// One more write so that the tombstones are not in the last batch.
	if err := cl.ProduceSync(ctx, &kgo.Record{Key: []byte("tail"), Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	wait := func(what string, ok func([]*kgo.Record) bool) []*kgo.Record {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			recs := consumeAll(t, srv, "c")
			if ok(recs) {
				return recs
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within a minute; %d records", what, len(recs))
			}
			time.Sleep(100 * time.Millisecond) // polling the cleaner's progress, not synchronising
		}
	}
	recs := wait("cleaned", func(rs []*kgo.Record) bool { return len(rs) <= keys+1 })
	latest := map[string]*kgo.Record{}
	for _, r := range recs {
		latest[string(r.Key)] = r
	}
	for k := range keys {
		r := latest[fmt.Sprintf("k%02d", k)]
		switch {
		case k < 5 && r != nil && r.Value != nil:
			t.Fatalf("deleted key k%02d reads %q", k, r.Value)
		case k >= 5 && (r == nil || string(r.Value) != fmt.Sprint(rounds-1)):
			t.Fatalf("key k%02d: %+v, want the last value", k, r)
		case k >= 5 && r.Offset != int64((rounds-1)*keys+k):
			// Offsets are unchanged: round r of key k was written at
			// r*keys+k (the refused keyless record took none).
			t.Fatalf("key k%02d at offset %d, want %d", k, r.Offset, (rounds-1)*keys+k)
		}
	}
	// The tombstones go after delete.retention.ms (2 s) and another pass.
	wait("tombstones removed", func(rs []*kgo.Record) bool {
		for _, r := range rs {
			if r.Value == nil {
				return false
			}
		}
		return len(rs) == keys-5+1
	})
}
