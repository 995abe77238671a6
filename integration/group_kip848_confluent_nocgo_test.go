//go:build !cgo

package integration

import "testing"

// TestGroupKIP848Confluent needs cgo (group_kip848_confluent_test.go): it
// skips, or fails in CI.
func TestGroupKIP848Confluent(t *testing.T) {
	needsClient(t, consClientNamed("confluent"))
}
