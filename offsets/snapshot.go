package offsets

// The snapshot file holds the latest record of every key, as a compacted
// offsets topic would hold it, in coordlog's format under this magic.
const snapshotMagic = "KBGOFF01"

// Snapshot writes the state to the snapshot file and moves the offsets
// partitions' log start up to the new cut, so that retention can delete the
// commit-log files that only older commits needed (coordlog.Log.Snapshot).
func (s *Store) Snapshot() error { return s.log.Snapshot() }

// state is the Store as coordlog sees it: how its records encode, decode
// and apply. Apply and Live run with the log's lock held and take the
// Store's (lock order: the log's, then Store.mu).
type state Store

func (st *state) AppendKey(dst []byte, r *rec) []byte { return r.appendKey(dst) }

func (st *state) AppendValue(dst []byte, r *rec) ([]byte, bool) {
	if r.tombstone {
		return dst, false
	}
	return r.appendValue(dst), true
}

func (st *state) Decode(key, value []byte) (rec, bool, error) { return decodeRec(key, value) }

func (st *state) Apply(r *rec) {
	s := (*Store)(st)
	s.mu.Lock()
	s.applyLocked(r)
	s.mu.Unlock()
}

func (st *state) Live(yield func(*rec)) {
	s := (*Store)(st)
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, g := range s.mu.groups {
		if g.meta != nil {
			yield(&rec{group: id, isGroup: true, meta: g.meta})
		}
		for tp, o := range g.offsets {
			yield(&rec{group: id, tp: tp, offset: o})
		}
		for k, v := range g.cg {
			yield(&rec{group: id, isCG: true, cgKey: k, cgValue: v})
		}
	}
}
