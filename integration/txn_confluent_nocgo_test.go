//go:build !cgo

package integration

import "testing"

// TestTxnConfluent needs cgo (txn_confluent_test.go): it skips, or fails
// in CI.
func TestTxnConfluent(t *testing.T) {
	needsClient(t, consClientNamed("confluent"))
}
