package testenv

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// WantCode fails the test unless the response code got is want's (0 for
// a nil want).
func WantCode(t testing.TB, what string, got int16, want *kerr.Error) {
	t.Helper()
	var w int16
	if want != nil {
		w = want.Code
	}
	if got != w {
		t.Errorf("%s: got %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(w))
	}
}

// WantErr stops the test unless err wraps want, or is nil for a nil want.
func WantErr(t testing.TB, what string, err error, want *kerr.Error) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Fatalf("%s: got %v, want no error", what, err)
	case want != nil && !errors.Is(err, want):
		t.Fatalf("%s: got %v, want %s", what, err, want.Message)
	}
}
