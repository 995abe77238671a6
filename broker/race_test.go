//go:build race

package broker

// raceEnabled: the tests run under the race detector, whose
// instrumentation allocates where the plain build does not, so bounds on
// allocations are checked without it only.
const raceEnabled = true
