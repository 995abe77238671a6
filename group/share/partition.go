package share

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// RecordState is the delivery state of one record of a share-partition,
// with Kafka's ids (RecordState.java), which the state records store.
type RecordState int8

// The record states. Acquired is never stored: a restart releases every
// lock, so a stored batch is Available (with its delivery count),
// Acknowledged or Archived.
const (
	Available    RecordState = 0
	Acquired     RecordState = 1
	Acknowledged RecordState = 2
	Archived     RecordState = 4
)

// Acknowledgement types of ShareFetch and ShareAcknowledge (KIP-932;
// Renew from KIP-1222, ShareFetch and ShareAcknowledge v2).
const (
	AckGap     int8 = 0
	AckAccept  int8 = 1
	AckRelease int8 = 2
	AckReject  int8 = 3
	AckRenew   int8 = 4
)

// inflight is one record of the in-flight window.
type inflight struct {
	state      RecordState
	deliveries int16
	// owner is the member holding the acquisition lock, deadline (unix
	// nanoseconds) when the lock expires; both only while Acquired.
	owner    string
	deadline int64
}

// Acquired is a run of consecutive offsets given to a member by one
// ShareFetch, all with the same delivery count.
type AcquiredRange struct {
	First, Last   int64
	DeliveryCount int16
}

// Partition is the delivery state of one topic-partition for one share
// group (Kafka's SharePartition): the share-partition start offset (SPSO),
// before which every record is done with, and the in-flight records from
// there to the end offset (SPEO), each Available, Acquired by a member
// under a lock with a deadline, Acknowledged or Archived. Records at or
// past SPEO have never been delivered.
//
// The window holds at most maxLocks records (group.share.partition.max.record.locks):
// once full, nothing past SPEO is acquired until SPSO moves.
type Partition struct {
	mu struct {
		sync.Mutex
		// start is SPSO; recs[i] is offset start+i, and start+len(recs)
		// is SPEO.
		start      int64
		recs       []inflight
		stateEpoch int32
		// nextDeadline is the earliest lock deadline (unix nanoseconds),
		// 0 when nothing is acquired: expiry scans the window only when
		// one is due.
		nextDeadline int64
		// version counts changes worth storing; stored is the version
		// last handed to the store.
		version, stored uint64
		// freed is closed (and replaced) when records become Available
		// again, to wake fetches parked for this partition; wake says an
		// operation freed some and the channel is to be closed when it
		// ends.
		freed chan struct{}
		wake  bool
	}
	maxLocks      int
	deliveryLimit int16
}

// newPartition is a share-partition starting at offset start.
func newPartition(start int64, stateEpoch int32, maxLocks int, deliveryLimit int16) *Partition {
	p := &Partition{maxLocks: maxLocks, deliveryLimit: deliveryLimit}
	p.mu.start, p.mu.stateEpoch = start, stateEpoch
	p.mu.version = 1 // a new partition's initial state is stored
	p.mu.freed = make(chan struct{})
	return p
}

// Freed returns a channel closed when records of the window become
// Available again (released, or their locks expired), and the earliest
// lock deadline (zero when nothing is acquired): a fetch parked for this
// partition waits on the channel and at most until the deadline, when an
// expiry may free records.
func (p *Partition) Freed() (<-chan struct{}, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var deadline time.Time
	if p.mu.nextDeadline != 0 {
		deadline = time.Unix(0, p.mu.nextDeadline)
	}
	return p.mu.freed, deadline
}

// wakeLocked wakes the fetches waiting for Available records if the
// operation ending freed some. Operations that may free records defer it
// right after taking the lock.
func (p *Partition) wakeLocked() {
	if !p.mu.wake {
		return
	}
	p.mu.wake = false
	close(p.mu.freed)
	p.mu.freed = make(chan struct{})
}

// StartOffset is SPSO.
func (p *Partition) StartOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.start
}

// EndOffset is SPEO.
func (p *Partition) EndOffset() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.start + int64(len(p.mu.recs))
}

// StateEpoch is bumped whenever the state is reset (AlterShareGroupOffsets).
func (p *Partition) StateEpoch() int32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.stateEpoch
}

// FetchOffset is where the next read for this partition starts: the first
// Available record of the window (released, or whose lock expired), else
// SPEO. ok is false when the window is full and nothing in it is
// Available: nothing can be acquired until acknowledgements move SPSO.
func (p *Partition) FetchOffset(now time.Time) (offset int64, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.wakeLocked()
	p.expireLocked(now)
	for i := range p.mu.recs {
		if p.mu.recs[i].state == Available {
			return p.mu.start + int64(i), true
		}
	}
	if len(p.mu.recs) >= p.maxLocks {
		return 0, false
	}
	return p.mu.start + int64(len(p.mu.recs)), true
}

// Acquire locks for member the Available records among offsets [from, to)
// (what a read returned), at most maxRecords of them and no further than
// the window allows, until now+lock. Each acquired record's delivery
// count goes up by one. It appends the acquired runs to dst.
func (p *Partition) Acquire(dst []AcquiredRange, member string, from, to int64, maxRecords int, lock time.Duration, now time.Time) []AcquiredRange {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.wakeLocked()
	p.expireLocked(now)
	deadline := now.Add(lock).UnixNano()
	n := 0
	open := false
	for o := max(from, p.mu.start); o < to && n < maxRecords; o++ {
		i := int(o - p.mu.start)
		if i >= p.maxLocks {
			break
		}
		if i >= len(p.mu.recs) {
			p.mu.recs = append(p.mu.recs, inflight{})
		}
		r := &p.mu.recs[i]
		if r.state != Available {
			open = false
			continue
		}
		r.state, r.owner, r.deadline = Acquired, member, deadline
		r.deliveries++
		n++
		if last := len(dst) - 1; open && dst[last].Last == o-1 && dst[last].DeliveryCount == r.deliveries {
			dst[last].Last = o
		} else {
			dst = append(dst, AcquiredRange{First: o, Last: o, DeliveryCount: r.deliveries})
			open = true
		}
	}
	if n > 0 && (p.mu.nextDeadline == 0 || deadline < p.mu.nextDeadline) {
		p.mu.nextDeadline = deadline
	}
	return dst
}

// Acknowledge applies one acknowledgement batch of member: offsets first
// to last, with one type for all or one type per offset. Every offset must
// be Acquired by member (else INVALID_RECORD_STATE, and nothing changes).
// Accept acknowledges, Release makes the record Available again (Archived
// once its delivery count reached the limit), Reject and Gap archive, and
// Renew extends the lock by lock from now (KIP-1222).
func (p *Partition) Acknowledge(member string, first, last int64, types []int8, lock time.Duration, now time.Time) error {
	if last < first || len(types) == 0 || (len(types) != 1 && int64(len(types)) != last-first+1) {
		return kerr.InvalidRequest
	}
	for _, t := range types {
		if t < AckGap || t > AckRenew {
			return kerr.InvalidRequest
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.wakeLocked()
	p.expireLocked(now)
	if first < p.mu.start || last >= p.mu.start+int64(len(p.mu.recs)) {
		return kerr.InvalidRecordState
	}
	lo := int(first - p.mu.start)
	hi := int(last - p.mu.start)
	for i := lo; i <= hi; i++ {
		if r := &p.mu.recs[i]; r.state != Acquired || r.owner != member {
			return kerr.InvalidRecordState
		}
	}
	deadline := now.Add(lock).UnixNano()
	for i := lo; i <= hi; i++ {
		t := types[0]
		if len(types) > 1 {
			t = types[i-lo]
		}
		r := &p.mu.recs[i]
		switch t {
		case AckAccept:
			*r = inflight{state: Acknowledged, deliveries: r.deliveries}
		case AckRelease:
			p.releaseLocked(r)
		case AckReject, AckGap:
			*r = inflight{state: Archived, deliveries: r.deliveries}
		case AckRenew:
			r.deadline = deadline
			if p.mu.nextDeadline == 0 || deadline < p.mu.nextDeadline {
				p.mu.nextDeadline = deadline
			}
			continue // no state change to store
		}
		p.mu.version++
	}
	p.advanceLocked()
	return nil
}

// ArchiveAvailable archives the Available records of [first, last] that
// the window can hold: records of an aborted transaction, which a
// read_committed share group never delivers (Kafka's SharePartition
// archives them as it acquires). Records in another state are left as
// they are. It reports whether any record was archived.
func (p *Partition) ArchiveAvailable(first, last int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := false
	for o := max(first, p.mu.start); o <= last; o++ {
		i := int(o - p.mu.start)
		if i >= p.maxLocks {
			break
		}
		for len(p.mu.recs) <= i {
			p.mu.recs = append(p.mu.recs, inflight{})
		}
		if r := &p.mu.recs[i]; r.state == Available {
			*r = inflight{state: Archived, deliveries: r.deliveries}
			changed = true
		}
	}
	if changed {
		p.mu.version++
		p.advanceLocked()
	}
	return changed
}

// ReleaseMember releases every record member holds, as when it leaves the
// group or closes its share session: they become Available at once rather
// than when their locks expire.
func (p *Partition) ReleaseMember(member string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.wakeLocked()
	changed := false
	for i := range p.mu.recs {
		if r := &p.mu.recs[i]; r.state == Acquired && r.owner == member {
			p.releaseLocked(r)
			changed = true
		}
	}
	if changed {
		p.mu.version++
		p.advanceLocked()
	}
}

// AdvanceTo moves SPSO up to offset (the log start, after retention or
// DeleteRecords took the records before it), dropping their states.
func (p *Partition) AdvanceTo(offset int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if offset <= p.mu.start {
		return
	}
	n := int(min(offset-p.mu.start, int64(len(p.mu.recs))))
	p.dropLocked(n)
	p.mu.start = offset
	p.mu.version++
}

// Reset starts the partition over at offset with a new state epoch
// (AlterShareGroupOffsets, allowed only while the group is empty).
func (p *Partition) Reset(offset int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.start = offset
	p.mu.recs = p.mu.recs[:0]
	p.mu.stateEpoch++
	p.mu.nextDeadline = 0
	p.mu.version++
	p.mu.wake = true
	p.wakeLocked()
}

// releaseLocked ends r's lock: Available again (waking parked fetches),
// or Archived once its delivery count reached the limit
// (group.share.delivery.count.limit).
func (p *Partition) releaseLocked(r *inflight) {
	if r.deliveries >= p.deliveryLimit {
		*r = inflight{state: Archived, deliveries: r.deliveries}
		return
	}
	*r = inflight{state: Available, deliveries: r.deliveries}
	p.mu.wake = true
}

// expireLocked releases the records whose locks expired by now.
func (p *Partition) expireLocked(now time.Time) {
	nowNs := now.UnixNano()
	if p.mu.nextDeadline == 0 || nowNs < p.mu.nextDeadline {
		return
	}
	next := int64(0)
	expired := false
	for i := range p.mu.recs {
		r := &p.mu.recs[i]
		if r.state != Acquired {
			continue
		}
		if r.deadline <= nowNs {
			p.releaseLocked(r)
			expired = true
		} else if next == 0 || r.deadline < next {
			next = r.deadline
		}
	}
	p.mu.nextDeadline = next
	if expired {
		p.mu.version++
		p.advanceLocked()
	}
}

// advanceLocked moves SPSO past the records at the front that are done
// with (Acknowledged or Archived).
func (p *Partition) advanceLocked() {
	n := 0
	for n < len(p.mu.recs) && (p.mu.recs[n].state == Acknowledged || p.mu.recs[n].state == Archived) {
		n++
	}
	if n == 0 {
		return
	}
	p.dropLocked(n)
	p.mu.start += int64(n)
}

// dropLocked removes the first n records of the window, keeping the
// backing array (its size is bounded by maxLocks).
func (p *Partition) dropLocked(n int) {
	k := copy(p.mu.recs, p.mu.recs[n:])
	clear(p.mu.recs[k:])
	p.mu.recs = p.mu.recs[:k]
}

// Counts reports how many records of the window are in each state, for
// describing the partition (lag and in-flight counts).
func (p *Partition) Counts(now time.Time) (available, acquired, done int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.wakeLocked()
	p.expireLocked(now)
	for _, r := range p.mu.recs {
		switch r.state {
		case Available:
			available++
		case Acquired:
			acquired++
		default:
			done++
		}
	}
	return available, acquired, done
}
