//go:build race

package integration

// raceEnabled: the tests run under the race detector, so the kbroker
// binary is built with it too, and a race in the broker process makes it
// exit with status 66, which fails the test that stops it.
const raceEnabled = true
