package coordlog

import "testing"

func TestPartitionForMatchesKafka(t *testing.T) {
	// Java: "hello".hashCode() == 99162322; "".hashCode() == 0; and
	// a hash with the sign bit set is masked, not negated (Utils.abs).
	if got := PartitionFor("hello", 50); got != 99162322%50 {
		t.Errorf("hello: %d", got)
	}
	if got := PartitionFor("", 7); got != 0 {
		t.Errorf("empty: %d", got)
	}
	// "polygenelubricants".hashCode() == Integer.MIN_VALUE.
	if got := PartitionFor("polygenelubricants", 50); got != 0 {
		t.Errorf("min value: %d", got)
	}
	// Outside the BMP: one code point is two UTF-16 code units.
	// Java: "\uD83D\uDE00".hashCode() == 55357*31 + 56832 == 1772899.
	if got := PartitionFor("\U0001F600", 1000); got != 1772899%1000 {
		t.Errorf("surrogate pair: %d", got)
	}
}

// TestLoopsStopOnce runs two loops and stops them: the first function runs
// before the loops hear stop, Stop waits for them, and a second Stop does
// nothing and reports false.
func TestLoopsStopOnce(t *testing.T) {
	var l Loops
	var closedFirst, sawStop [2]bool
	first := false
	for i := range 2 {
		l.Go(func(stop <-chan struct{}) {
			<-stop
			closedFirst[i], sawStop[i] = first, true
		})
	}
	if !l.Stop(func() { first = true }) {
		t.Fatal("first Stop reported false")
	}
	if sawStop != [2]bool{true, true} || closedFirst != [2]bool{true, true} {
		t.Fatalf("loops stopped %v, after first %v", sawStop, closedFirst)
	}
	if l.Stop(func() { t.Fatal("first ran again") }) {
		t.Fatal("second Stop reported true")
	}
}
