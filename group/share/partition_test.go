package share

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

var t0 = time.Unix(1_700_000_000, 0)

const lock = 30 * time.Second

func TestAcquireAcceptMovesStart(t *testing.T) {
	p := newPartition(10, 0, 100, 5)
	got := p.Acquire(nil, "a", 10, 15, 500, lock, t0)
	if want := []AcquiredRange{{10, 14, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired %v, want %v", got, want)
	}
	if err := p.Acknowledge("a", 10, 12, []int8{AckAccept}, lock, t0); err != nil {
		t.Fatal(err)
	}
	if got := p.StartOffset(); got != 13 {
		t.Fatalf("SPSO %d, want 13", got)
	}
	if got := p.EndOffset(); got != 15 {
		t.Fatalf("SPEO %d, want 15", got)
	}
	// Records already acknowledged, or held by another member, cannot be
	// acknowledged again.
	if err := p.Acknowledge("a", 11, 11, []int8{AckAccept}, lock, t0); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("ack of an acknowledged record: %v, want INVALID_RECORD_STATE", err)
	}
	if err := p.Acknowledge("b", 13, 13, []int8{AckAccept}, lock, t0); !errors.Is(err, kerr.InvalidRecordState) {
		t.Fatalf("ack by another member: %v, want INVALID_RECORD_STATE", err)
	}
}

func TestLockExpiryRedeliversUntilLimit(t *testing.T) {
	p := newPartition(0, 0, 100, 3)
	now := t0
	for delivery := int16(1); delivery <= 3; delivery++ {
		off, ok := p.FetchOffset(now)
		if !ok || off != 0 {
			t.Fatalf("delivery %d: fetch offset %d %t, want 0", delivery, off, ok)
		}
		got := p.Acquire(nil, "a", 0, 2, 500, lock, now)
		if want := []AcquiredRange{{0, 1, delivery}}; !reflect.DeepEqual(got, want) {
			t.Fatalf("delivery %d: acquired %v, want %v", delivery, got, want)
		}
		// Nothing more to acquire while locked.
		if got := p.Acquire(nil, "b", 0, 2, 500, lock, now.Add(lock-time.Millisecond)); len(got) != 0 {
			t.Fatalf("acquired %v while locked", got)
		}
		now = now.Add(lock)
	}
	// The third lock expired at the delivery count limit: archived, and
	// SPSO moves past them.
	if off, _ := p.FetchOffset(now); off != 2 {
		t.Fatalf("fetch offset after the limit %d, want 2", off)
	}
	if got := p.StartOffset(); got != 2 {
		t.Fatalf("SPSO %d, want 2 (archived)", got)
	}
}

func TestAcknowledgeTypes(t *testing.T) {
	p := newPartition(0, 0, 100, 2)
	p.Acquire(nil, "a", 0, 6, 500, lock, t0)
	// Per-offset types: accept, release, reject, gap, renew, accept.
	if err := p.Acknowledge("a", 0, 5, []int8{AckAccept, AckRelease, AckReject, AckGap, AckRenew, AckAccept}, lock, t0.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got := p.StartOffset(); got != 1 {
		t.Fatalf("SPSO %d, want 1 (offset 1 was released)", got)
	}
	// Offset 4 was renewed: still held at the first deadline, free after
	// the renewed one.
	if got := p.Acquire(nil, "b", 0, 6, 500, lock, t0.Add(lock)); !reflect.DeepEqual(got, []AcquiredRange{{1, 1, 2}}) {
		t.Fatalf("acquired %v, want only the released offset 1", got)
	}
	if got := p.Acquire(nil, "b", 0, 6, 500, lock, t0.Add(time.Second+lock)); !reflect.DeepEqual(got, []AcquiredRange{{4, 4, 2}}) {
		t.Fatalf("acquired %v after the renewed lock expired, want 4", got)
	}
	// A bad type or a type count that does not match changes nothing.
	if err := p.Acknowledge("b", 4, 4, []int8{9}, lock, t0); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("bad type: %v", err)
	}
	if err := p.Acknowledge("b", 1, 4, []int8{1, 1}, lock, t0); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("type count: %v", err)
	}
}

func TestWindowBoundsAcquisition(t *testing.T) {
	p := newPartition(0, 0, 100, 5)
	if got := p.Acquire(nil, "a", 0, 1000, 500, lock, t0); !reflect.DeepEqual(got, []AcquiredRange{{0, 99, 1}}) {
		t.Fatalf("acquired %v, want the 100 the window allows", got)
	}
	if _, ok := p.FetchOffset(t0); ok {
		t.Fatal("window full but FetchOffset offers a read")
	}
	if err := p.Acknowledge("a", 0, 9, []int8{AckAccept}, lock, t0); err != nil {
		t.Fatal(err)
	}
	if off, ok := p.FetchOffset(t0); !ok || off != 100 {
		t.Fatalf("fetch offset %d %t, want 100", off, ok)
	}
	if got := p.Acquire(nil, "a", 100, 1000, 3, lock, t0); !reflect.DeepEqual(got, []AcquiredRange{{100, 102, 1}}) {
		t.Fatalf("acquired %v, want max records 3", got)
	}
}

func TestReleaseMember(t *testing.T) {
	p := newPartition(0, 0, 100, 5)
	p.Acquire(nil, "a", 0, 3, 500, lock, t0)
	p.Acquire(nil, "b", 3, 5, 500, lock, t0)
	p.ReleaseMember("a")
	if got := p.Acquire(nil, "c", 0, 5, 500, lock, t0); !reflect.DeepEqual(got, []AcquiredRange{{0, 2, 2}}) {
		t.Fatalf("acquired %v, want a's released records", got)
	}
}

func TestStateRoundTrip(t *testing.T) {
	p := newPartition(5, 2, 100, 5)
	p.Acquire(nil, "a", 5, 12, 500, lock, t0)
	must(t, p.Acknowledge("a", 6, 7, []int8{AckAccept}, lock, t0))
	must(t, p.Acknowledge("a", 8, 8, []int8{AckReject}, lock, t0))
	must(t, p.Acknowledge("a", 9, 9, []int8{AckRelease}, lock, t0))
	st, _, changed := p.State()
	if !changed {
		t.Fatal("state not changed")
	}
	want := PartitionState{StateEpoch: 2, StartOffset: 5, Batches: []StateBatch{
		{5, 5, Available, 1}, {6, 7, Acknowledged, 1}, {8, 8, Archived, 1}, {9, 11, Available, 1},
	}}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("state %+v, want %+v", st, want)
	}
	r := rec{key: Key{Group: "g", TopicID: TopicID{1}, Partition: 3}, state: st}
	back, ok, err := decodeRec(r.appendKey(nil), r.appendValue(nil))
	if err != nil || !ok || !reflect.DeepEqual(back, r) {
		t.Fatalf("decoded %+v %t %v, want %+v", back, ok, err, r)
	}
	q := restorePartition(st, 100, 5)
	// After a restart the acquired records are available again with
	// their delivery counts; the acknowledged and archived ones are done.
	got := q.Acquire(nil, "b", 5, 13, 500, lock, t0)
	if want := []AcquiredRange{{5, 5, 2}, {9, 11, 2}, {12, 12, 1}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("acquired after restore %v, want %v", got, want)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
