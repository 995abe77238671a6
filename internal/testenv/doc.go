// Package testenv is the test support that every package's tests share:
// the KBROKER_* test settings, read one way and checked (a bad value
// fails the test rather than being ignored); assertions on Kafka error
// codes; polling for a condition; and the SIGKILL-and-wait of the crash
// loops. docs/TESTING.md lists the settings.
//
// It imports nothing of kbroker, so the tests of any package, down to
// log/, can use it without an import cycle.
package testenv
