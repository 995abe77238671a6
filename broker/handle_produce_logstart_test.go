package broker

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kbroker/kbroker/partition/batch"
)

// TestProduceRefusedBatchLogStartOffset: a batch the log's checks refuse
// (a client's control batch, a record count its offsets disagree with)
// reports the partition's log start offset, as Kafka's ReplicaManager
// does; one refused before the log (bad CRC) reports -1.
func TestProduceRefusedBatchLogStartOffset(t *testing.T) {
	srv := newTestServer(t, nil)
	dataTopic(t, srv, "t", 1, nil)
	w := dialWire(t, srv)
	control := plainBatch(1)
	control.attributes = 0x20
	miscounted := plainBatch(2).encode()
	miscounted[batch.HeaderSize-1]++ // NumRecords, the header's last field: 3
	binary.BigEndian.PutUint32(miscounted[batch.CRCOffset:], crc32.Checksum(miscounted[batch.AttributesOffset:], crc32.MakeTable(crc32.Castagnoli)))
	corrupt := plainBatch(1).encode()
	corrupt[len(corrupt)-1] ^= 0xff
	for _, tc := range []struct {
		name     string
		records  []byte
		want     *kerr.Error
		logStart int64
	}{
		{"control batch", control.encode(), kerr.InvalidRecord, 0},
		{"record count", miscounted, kerr.InvalidRecord, 0},
		{"bad crc", corrupt, kerr.CorruptMessage, -1},
	} {
		sp := producePart(t, w.do(produceReq(9, 1, "t", 0, tc.records)))
		if sp.ErrorCode != tc.want.Code || sp.LogStartOffset != tc.logStart {
			t.Errorf("%s: %v, log start offset %d; want %v, %d", tc.name, kerr.ErrorForCode(sp.ErrorCode), sp.LogStartOffset, tc.want, tc.logStart)
		}
	}
}
