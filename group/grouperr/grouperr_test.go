package grouperr

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCode: the message is Kafka's alone, and errors.As finds the code.
func TestCode(t *testing.T) {
	err := Errorf(kerr.UnknownMemberID, "member %s is not in group %s", "m", "g")
	if got, want := err.Error(), "member m is not in group g"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	var ke *kerr.Error
	if !errors.As(err, &ke) || ke != kerr.UnknownMemberID {
		t.Errorf("errors.As: %v, want UNKNOWN_MEMBER_ID", ke)
	}
	if !errors.Is(New(kerr.FencedMemberEpoch, "x"), kerr.FencedMemberEpoch) {
		t.Error("errors.Is does not find the code of New")
	}
}
