package fault

import "testing"

// BenchmarkActive is what every request pays when no rule is set.
func BenchmarkActive(b *testing.B) {
	in := New()
	n := 0
	for b.Loop() {
		if in.Active() {
			n++
		}
	}
	if n != 0 {
		b.Fatal("active without rules")
	}
}

// BenchmarkDecide is the cost per request while a rule filtering on a
// topic is set but does not match.
func BenchmarkDecide(b *testing.B) {
	in := New()
	if _, err := in.Add(Rule{API: "Produce", Topic: "other", DelayMs: 1}); err != nil {
		b.Fatal(err)
	}
	r := produceTo("X", 0, 1, 2)
	b.ReportAllocs()
	for b.Loop() {
		if in.Decide(r) != nil {
			b.Fatal("fired")
		}
	}
}
