package broker

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
	"time"

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

// TestInitProducerIDV6Unstable: InitProducerId v6 (KIP-939 two-phase
// commit) is an unstable version in Kafka 4.4: not in ApiVersions, and a
// request at v6 closes the connection ("Received request for disabled
// api"). kbroker does the same, whether or not Enable2Pc is set.
func TestInitProducerIDV6Unstable(t *testing.T) {
	srv := newTestServer(t, nil)
	resp := dialWire(t, srv).do(kmsg.NewPtrApiVersionsRequest()).(*kmsg.ApiVersionsResponse)
	for _, k := range resp.ApiKeys {
		if k.ApiKey == int16(kmsg.InitProducerID) && k.MaxVersion != 5 {
			t.Fatalf("InitProducerId advertised up to v%d, want v5 (Kafka 4.4's stable range)", k.MaxVersion)
		}
	}
	for _, enable2PC := range []byte{0, 1} {
		c, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// Header v2, then the v6 body: transactional id "p", timeout,
		// producer id and epoch -1, Enable2Pc, KeepPreparedTxn, no tags.
		body := []byte{0, 22, 0, 6, 0, 0, 0, 1, 0, 1, 'c', 0, 2, 'p', 0, 0, 0xea, 0x60}
		body = append(body, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, enable2PC, 0, 0)
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		if _, err := c.Write(append(frame, body...)); err != nil {
			t.Fatal(err)
		}
		if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(make([]byte, 64))
		if n != 0 || !errors.Is(err, io.EOF) {
			t.Fatalf("Enable2Pc %d: read %d bytes, %v; want the connection closed", enable2PC, n, err)
		}
		c.Close()
	}
}
