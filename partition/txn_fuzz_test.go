package partition

import (
	"errors"
	"slices"
	"testing"
)

// FuzzLoadAbortedSnapshot: the aborted-index decoder never panics, and
// what it accepts encodes back to the same bytes.
func FuzzLoadAbortedSnapshot(f *testing.F) {
	f.Add([]byte{})
	f.Add(appendAbortedEntries(nil, []abortedEntry{{producerID: 1, first: 0, last: 3, lso: 2}, {producerID: 2, first: 1, last: 5, lso: 6}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		es, err := loadAbortedSnapshot(b)
		if err != nil {
			if !errors.Is(err, errCorruptAborted) {
				t.Fatalf("error %v does not wrap errCorruptAborted", err)
			}
			return
		}
		if again := appendAbortedEntries(nil, es); !slices.Equal(again, b) && !(len(b) == 0 && len(again) == 0) {
			t.Fatalf("%x loads as %+v, which encodes to %x", b, es, again)
		}
	})
}
