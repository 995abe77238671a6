package broker

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkProduceTxnV12 measures a transactional Produce v12 under
// transactions v2 (transaction.version 2) to a partition already in the
// transaction: the handler's coordinator checks and the append, acks=1,
// without the network. Its allocations are what the implicit add costs a
// steady stream of transactional batches.
func BenchmarkProduceTxnV12(b *testing.B) {
	srv := newTestServer(b, func(c *Config) { c.SegmentBytes = 64 << 20 })
	dataTopic(b, srv, "t", 1, nil)
	id := "bench"
	init := kmsg.NewPtrInitProducerIDRequest()
	init.Version, init.TransactionalID, init.TransactionTimeoutMillis = 5, &id, 60000
	res, err := srv.Broker.handleInitProducerID(nil, init)
	if err != nil {
		b.Fatal(err)
	}
	<-res.ready
	ir := res.resp.(*kmsg.InitProducerIDResponse)
	if ir.ErrorCode != 0 {
		b.Fatalf("init: error %d", ir.ErrorCode)
	}
	tmpl := txnBatch(ir.ProducerID, ir.ProducerEpoch, 0)
	req := produceReq(12, 1, "t", 0, append([]byte(nil), tmpl...))
	req.TransactionID = &id
	seq := int32(0)
	c := new(conn) // its produce scratch is reused, as on a real connection
	produce := func() {
		// The next sequence, and the CRC over it (from the attributes on).
		binary.BigEndian.PutUint32(tmpl[53:], uint32(seq))
		binary.BigEndian.PutUint32(tmpl[17:], crcCastagnoli(tmpl[21:]))
		seq++
		copy(req.Topics[0].Partitions[0].Records, tmpl)
		res, err := srv.Broker.handleProduce(c, req)
		if err != nil {
			b.Fatal(err)
		}
		if code := res.resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode; code != 0 {
			b.Fatalf("produce seq %d: error %d", seq-1, code)
		}
		if res.produce != nil {
			res.produce.recycle()
		}
	}
	produce() // joins the transaction
	b.ReportAllocs()
	b.SetBytes(int64(len(tmpl)))
	for b.Loop() {
		produce()
	}
}
