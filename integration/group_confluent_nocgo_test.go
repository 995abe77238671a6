//go:build !cgo

package integration

import "testing"

// TestGroupConfluent needs cgo (group_confluent_test.go): it skips, or
// fails in CI.
func TestGroupConfluent(t *testing.T) {
	needsClient(t, consClientNamed("confluent"))
}
