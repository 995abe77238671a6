package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap/zaptest"

	"github.com/kbroker/kbroker/partition"
)

func initProducerIDReq(version int16, txnID *string, pid int64, epoch int16) *kmsg.InitProducerIDRequest {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.Version, req.TransactionalID, req.TransactionTimeoutMillis = version, txnID, 60000
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return req
}

// TestInitProducerIDIncreasesAcrossRestarts: ids grow, cross a block
// boundary, and never repeat after a restart (which skips the rest of the
// persisted block, as Kafka does).
func TestInitProducerIDIncreasesAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	last := int64(-1)
	for run := range 3 {
		ip, err := StartInProcess(dir, nil, WithLogger(zaptest.NewLogger(t)))
		if err != nil {
			t.Fatal(err)
		}
		w := dialWire(t, ip)
		n := 3
		if run == 1 {
			n = partition.ProducerIDBlockSize + 5
		}
		for i := range n {
			resp := w.do(initProducerIDReq(int16(i%6), nil, -1, -1)).(*kmsg.InitProducerIDResponse)
			if resp.ErrorCode != 0 || resp.ProducerID <= last || resp.ProducerEpoch != 0 {
				t.Fatalf("run %d, call %d: %v id %d epoch %d after id %d", run, i, kerr.ErrorForCode(resp.ErrorCode), resp.ProducerID, resp.ProducerEpoch, last)
			}
			last = resp.ProducerID
		}
		if err := ip.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInitProducerIDRequests(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	first := w.do(initProducerIDReq(5, nil, -1, -1)).(*kmsg.InitProducerIDResponse)
	if first.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(first.ErrorCode))
	}
	empty, txn, txn0 := "", "my-txn", "my-txn-v0"
	for _, tc := range []struct {
		name  string
		req   *kmsg.InitProducerIDRequest
		want  *kerr.Error
		newID bool
	}{
		{"idempotent v0", initProducerIDReq(0, nil, -1, -1), nil, true},
		{"KIP-360 existing producer", initProducerIDReq(4, nil, first.ProducerID, 0), nil, true},
		{"only producer id", initProducerIDReq(3, nil, first.ProducerID, -1), kerr.InvalidRequest, false},
		{"only epoch", initProducerIDReq(3, nil, -1, 2), kerr.InvalidRequest, false},
		{"transactional", initProducerIDReq(5, &txn, -1, -1), nil, true},
		{"transactional v0", initProducerIDReq(0, &txn0, -1, -1), nil, true},
		{"empty transactional id", initProducerIDReq(5, &empty, -1, -1), kerr.InvalidRequest, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := w.do(tc.req).(*kmsg.InitProducerIDResponse)
			var want int16
			if tc.want != nil {
				want = tc.want.Code
			}
			if resp.ErrorCode != want {
				t.Fatalf("got %v, want %v", kerr.ErrorForCode(resp.ErrorCode), tc.want)
			}
			switch {
			case tc.newID && (resp.ProducerID <= first.ProducerID || resp.ProducerEpoch != 0):
				t.Fatalf("got id %d epoch %d, want a new id with epoch 0", resp.ProducerID, resp.ProducerEpoch)
			case !tc.newID && (resp.ProducerID != -1 || resp.ProducerEpoch != -1):
				t.Fatalf("got id %d epoch %d with an error", resp.ProducerID, resp.ProducerEpoch)
			}
		})
	}
}
