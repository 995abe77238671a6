package partition

import (
	"errors"
	"testing"
)

// FuzzLoadProducerSnapshot: the producer-snapshot decoder never panics,
// fails only with ErrCorruptProducerSnapshot, and what it accepts
// re-encodes canonically and stays usable.
func FuzzLoadProducerSnapshot(f *testing.F) {
	small := NewProducerStates()
	appendProducerBatches(f, small, 0, idem(1, 0, 0, 1))
	for _, s := range []*ProducerStates{NewProducerStates(), small, sampleProducerStates(f)} {
		b := s.AppendSnapshot(nil)
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Add([]byte{0, 1, 0, 0, 0, 4, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, true)
	f.Fuzz(func(t *testing.T, b []byte, reseal bool) {
		if reseal {
			// Let the fuzzer past the CRC to the body checks.
			b = resealSnapshot(append([]byte(nil), b...))
		}
		s, err := LoadProducerSnapshot(b)
		if err != nil {
			if !errors.Is(err, ErrCorruptProducerSnapshot) || s != nil {
				t.Fatalf("got state %v, err %v", s, err)
			}
			return
		}
		enc := s.AppendSnapshot(nil)
		s2, err := LoadProducerSnapshot(enc)
		if err != nil {
			t.Fatalf("re-encoded snapshot does not load: %v", err)
		}
		if !sameStates(s, s2) {
			t.Fatal("re-encoded snapshot loads differently")
		}
		if string(s2.AppendSnapshot(nil)) != string(enc) {
			t.Fatal("encoding is not canonical")
		}
		// Whatever loaded must be usable.
		for v := range s.All() {
			b := idem(v.ProducerID, v.ProducerEpoch, incrementSequence(max(v.LastSequence, 0), 1), 1)
			_, _, _, _ = s.Check(b)
			s.Update(b, max(v.LastOffset, 0)+1, 0)
		}
		s.TruncateAfter(0)
		s.Expire(0, 0)
	})
}
