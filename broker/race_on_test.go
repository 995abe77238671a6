//go:build race

package broker

// raceEnabled is set in race builds, whose instrumentation allocates where
// the plain build does not and whose sync.Pool drops some of what is put
// back on purpose: allocation bounds are checked without it only.
const raceEnabled = true
