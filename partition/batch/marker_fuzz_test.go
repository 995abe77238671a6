package batch

import (
	"errors"
	"testing"
)

// FuzzParseEndTxnMarker: ParseEndTxnMarker never panics, fails only with an
// *Error, and whatever it accepts re-encodes to a batch it reads the same.
func FuzzParseEndTxnMarker(f *testing.F) {
	f.Add(AppendEndTxnMarker(nil, 1, 7, 2, EndTxnMarker{Commit: true, CoordinatorEpoch: 3}))
	f.Add(AppendEndTxnMarker(nil, 1, 7, 2, EndTxnMarker{CoordinatorEpoch: -1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseEndTxnMarker(b)
		if err != nil {
			var be *Error
			if !errors.As(err, &be) {
				t.Fatalf("error %v (%T) is not an *Error", err, err)
			}
			return
		}
		again, err := ParseEndTxnMarker(AppendEndTxnMarker(nil, 0, 1, 0, m))
		if err != nil || again != m {
			t.Fatalf("re-encoded %+v reads back as %+v, %v", m, again, err)
		}
	})
}
