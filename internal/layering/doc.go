// Package layering holds no code: its test checks that every package of
// the module imports only what its layer allows (see layering_test.go and
// docs/ARCHITECTURE.md), so the architecture checks itself.
package layering
