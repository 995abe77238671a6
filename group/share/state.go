package share

// StateBatch is a run of records of a share-partition with one state and
// delivery count, as Kafka's persister stores them (PersisterStateBatch).
type StateBatch struct {
	First, Last   int64
	State         RecordState
	DeliveryCount int16
}

// PartitionState is what is stored of a share-partition: its state epoch,
// SPSO, and the batches of the in-flight window that are not Available
// with a delivery count of zero. Acquired records are stored as Available
// with their delivery count: locks do not survive a restart.
type PartitionState struct {
	StateEpoch  int32
	StartOffset int64
	Batches     []StateBatch
}

// State returns the partition's state to store and the version it
// reflects; changed is false when that version was stored already.
func (p *Partition) State() (st PartitionState, version uint64, changed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st = PartitionState{StateEpoch: p.mu.stateEpoch, StartOffset: p.mu.start}
	for i, r := range p.mu.recs {
		s := r.state
		if s == Acquired {
			s = Available
		}
		if s == Available && r.deliveries == 0 {
			continue
		}
		o := p.mu.start + int64(i)
		if n := len(st.Batches); n > 0 {
			b := &st.Batches[n-1]
			if b.Last == o-1 && b.State == s && b.DeliveryCount == r.deliveries {
				b.Last = o
				continue
			}
		}
		st.Batches = append(st.Batches, StateBatch{First: o, Last: o, State: s, DeliveryCount: r.deliveries})
	}
	return st, p.mu.version, p.mu.version != p.mu.stored
}

// Stored marks version as stored (durable), so that State reports no
// change until the next one.
func (p *Partition) Stored(version uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.stored = max(p.mu.stored, version)
}

// restorePartition rebuilds a share-partition from its stored state.
// Batches outside the window (before SPSO, or past what maxLocks allows)
// are ignored: a stored state is trusted only as far as it makes sense.
func restorePartition(st PartitionState, maxLocks int, deliveryLimit int16) *Partition {
	p := newPartition(st.StartOffset, st.StateEpoch, maxLocks, deliveryLimit)
	p.mu.version, p.mu.stored = 1, 1
	for _, b := range st.Batches {
		for o := max(b.First, st.StartOffset); o <= b.Last; o++ {
			i := o - st.StartOffset
			if i < 0 || i >= int64(maxLocks) {
				break
			}
			for int64(len(p.mu.recs)) <= i {
				p.mu.recs = append(p.mu.recs, inflight{})
			}
			s := b.State
			if s != Acknowledged && s != Archived {
				s = Available
			}
			p.mu.recs[i] = inflight{state: s, deliveries: b.DeliveryCount}
		}
	}
	p.advanceLocked()
	return p
}
