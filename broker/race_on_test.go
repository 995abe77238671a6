//go:build race

package broker

// raceEnabled is set in race builds, in which sync.Pool drops some of what
// is put back on purpose, so allocation counts are not the broker's own.
const raceEnabled = true
