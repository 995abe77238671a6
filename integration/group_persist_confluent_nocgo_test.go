//go:build !cgo

package integration

import "testing"

// TestGroupPersistKIP848Confluent needs cgo (group_persist_confluent_test.go):
// it skips, or fails in CI.
func TestGroupPersistKIP848Confluent(t *testing.T) {
	needsClient(t, consClientNamed("confluent"))
}
