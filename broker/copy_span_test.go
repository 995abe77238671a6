package broker

import (
	"testing"

	"github.com/kbroker/kbroker/protocol"
)

// TestCopySpan: neighbouring small ranges of one file are read together,
// across small gaps, within the room left; a range of another file, at
// or above the threshold, behind the last or too far after it ends the
// run.
func TestCopySpan(t *testing.T) {
	a, b := new(int), new(int)
	sp := func(h any, off, n int64) protocol.Splice {
		return protocol.Splice{Range: protocol.FetchRange{Handle: h, Offset: off, Len: n}}
	}
	for _, tc := range []struct {
		name     string
		splices  []protocol.Splice
		room     int64
		wantJ    int
		wantSpan int64
	}{
		{"one", []protocol.Splice{sp(a, 100, 50)}, 1 << 20, 1, 50},
		{"headers between", []protocol.Splice{sp(a, 0, 100), sp(a, 132, 100), sp(a, 264, 100)}, 1 << 20, 3, 364},
		{"other file", []protocol.Splice{sp(a, 0, 100), sp(b, 132, 100)}, 1 << 20, 1, 100},
		{"large range", []protocol.Splice{sp(a, 0, 100), sp(a, 132, 20000)}, 1 << 20, 1, 100},
		{"gap too wide", []protocol.Splice{sp(a, 0, 100), sp(a, 100+copySpanGap+1, 100)}, 1 << 20, 1, 100},
		{"gap at the bound", []protocol.Splice{sp(a, 0, 100), sp(a, 100+copySpanGap, 100)}, 1 << 20, 2, 200 + copySpanGap},
		{"backwards", []protocol.Splice{sp(a, 1000, 100), sp(a, 0, 100)}, 1 << 20, 1, 100},
		{"overlapping", []protocol.Splice{sp(a, 0, 100), sp(a, 50, 100)}, 1 << 20, 1, 100},
		{"no room", []protocol.Splice{sp(a, 0, 100), sp(a, 132, 100)}, 200, 1, 100},
		{"room for two", []protocol.Splice{sp(a, 0, 100), sp(a, 132, 100), sp(a, 264, 100)}, 232, 2, 232},
	} {
		j, span := copySpan(tc.splices, 0, 16384, tc.room)
		if j != tc.wantJ || span != tc.wantSpan {
			t.Errorf("%s: got run to %d of %d bytes, want %d of %d", tc.name, j, span, tc.wantJ, tc.wantSpan)
		}
	}
}
