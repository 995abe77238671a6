//go:build !race

package broker

// raceEnabled: see race_test.go.
const raceEnabled = false
