//go:build !race

package broker

// raceEnabled is set in race builds (race_on_test.go).
const raceEnabled = false
