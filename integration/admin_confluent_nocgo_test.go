//go:build !cgo

package integration

import "testing"

// TestAdminConfluent needs cgo (admin_confluent_test.go): it skips, or
// fails in CI.
func TestAdminConfluent(t *testing.T) {
	needsClient(t, consClientNamed("confluent"))
}
