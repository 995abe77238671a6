package broker

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestGroupWriteWaits checks the bookkeeping that makes group answers wait
// for their records: a waiter runs only once the group's latest append
// finished, with its outcome; a group without a pending append answers at
// once; a later append replaces the earlier as the one to wait for; and a
// failed append maps to the code Kafka answers.
func TestGroupWriteWaits(t *testing.T) {
	b := &Broker{}
	ran := false
	b.afterGroupWrite("g", func(err error) { ran = err == nil })
	if !ran {
		t.Fatal("no pending append: the waiter did not run at once")
	}
	first := b.startGroupWrite("g")
	second := b.startGroupWrite("g")
	var got []error
	b.afterGroupWrite("g", func(err error) { got = append(got, err) })
	first(nil)
	if len(got) != 0 {
		t.Fatal("the waiter ran when an earlier append finished")
	}
	failed := errors.New("offsets: append: " + kerr.NotLeaderForPartition.Error())
	second(failedWith(failed))
	if len(got) != 1 || groupWriteCode(got[0]) != kerr.NotCoordinator.Code {
		t.Fatalf("waiter heard %v (code %d), want NOT_COORDINATOR", got, groupWriteCode(got[0]))
	}
	b.afterGroupWrite("g", func(err error) { got = append(got, err) })
	if len(got) != 2 || got[1] != nil {
		t.Fatalf("after the appends finished: %v", got)
	}
	if c := groupWriteCode(kerr.MessageTooLarge); c != kerr.UnknownServerError.Code {
		t.Fatalf("record too large: code %d", c)
	}
}

// failedWith wraps a Kafka error as the store's writes do.
func failedWith(err error) error { return errors.Join(err, kerr.NotLeaderForPartition) }
