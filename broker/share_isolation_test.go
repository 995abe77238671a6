package broker

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// acquiredOffsets lists every offset a share fetch acquired.
func acquiredOffsets(resp *kmsg.ShareFetchResponse) []int64 {
	var out []int64
	for _, rs := range acquired(resp) {
		for _, r := range rs {
			for o := r.FirstOffset; o <= r.LastOffset; o++ {
				out = append(out, o)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TestShareReadCommitted runs share groups over txnFixture's partition
// (an aborted transaction at 1-2, a committed one at 3, an open one at 7,
// so the last stable offset is 7): a read_committed group never acquires
// the aborted records nor anything from the last stable offset on, and
// once the open transaction aborts it archives that record too and goes
// on; a read_uncommitted group acquires everything. Bad values of
// share.isolation.level are INVALID_CONFIG.
func TestShareReadCommitted(t *testing.T) {
	srv := newTestServer(t, nil)
	p := txnFixture(t, srv, "txq")
	for _, g := range []string{"rc", "ru"} {
		setShareGroupConfig(t, srv, g, shareAutoOffsetResetConfig, "earliest")
	}
	setShareGroupConfig(t, srv, "rc", shareIsolationLevelConfig, "read_committed")
	setShareGroupConfig(t, srv, "ru", shareIsolationLevelConfig, "read_uncommitted")
	res := adminRequest[*kmsg.IncrementalAlterConfigsResponse](t, srv, groupConfigsReq(false, "rc",
		incOp(shareIsolationLevelConfig, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("serializable")))).Resources[0]
	if res.ErrorCode != kerr.InvalidConfig.Code {
		t.Fatalf("share.isolation.level=serializable: %v %v", kerr.ErrorForCode(res.ErrorCode), res.ErrorMessage)
	}

	rc := joinShare(t, srv, "rc", "m", "txq")
	got := acquiredOffsets(rc.fetch(time.Second, nil))
	for _, o := range got {
		if o == 1 || o == 2 || o >= 7 {
			t.Fatalf("read_committed acquired %v: offset %d is aborted or not stable", got, o)
		}
	}
	for _, o := range []int64{0, 3, 5} {
		if !slices.Contains(got, o) {
			t.Fatalf("read_committed acquired %v, missing committed offset %d", got, o)
		}
	}
	// The open transaction aborts: its record is archived, the plain
	// record after it and a new one are acquired.
	res2, err := p.AppendMarker(3, 0, false, 0, time.Now().UnixMilli())
	if err == nil {
		err = srv.Store().AwaitDurable(testCtx(t), res2.End)
	}
	if err != nil {
		t.Fatal(err)
	}
	got = acquiredOffsets(rc.fetch(time.Second, nil))
	if slices.Contains(got, 7) || !slices.Contains(got, 8) {
		t.Fatalf("read_committed after the abort acquired %v, want 8 and not 7", got)
	}

	ru := joinShare(t, srv, "ru", "m", "txq")
	got = acquiredOffsets(ru.fetch(time.Second, nil))
	for _, o := range []int64{1, 2, 7, 8} {
		if !slices.Contains(got, o) {
			t.Fatalf("read_uncommitted acquired %v, missing %d", got, o)
		}
	}
}
