package broker

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

// TestPipelinedResponsesInOrder pipelines requests whose answers the
// reader writes itself (ApiVersions, Metadata, a fetch with data at once)
// among ones the writer sends (sync-flush produces waiting for their group
// commit, fetches parked on an empty partition) and acks=0 produces that
// get no answer: every answer comes back in request order. It fails if
// the reader writes while the writer holds a response.
func TestPipelinedResponsesInOrder(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.FlushMode = "sync" })
	dataTopic(t, srv, "t", 1, nil)
	dataTopic(t, srv, "idle", 1, nil)
	nc, err := net.DialTimeout("tcp", srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))

	const rounds = 60
	parked := fetchReq(srv, 12, "idle", 0, 1<<20, 1<<20)
	parked.MinBytes, parked.MaxWaitMillis = 1, 5
	var frames []byte
	var want []int32 // correlation ids that get an answer, in order
	corr := int32(0)
	add := func(req kmsg.Request, answered bool) {
		corr++
		// AppendRequest sizes the frame from dst's start: one at a time.
		frames = append(frames, kmsg.NewRequestFormatter().AppendRequest(nil, req, corr)...)
		if answered {
			want = append(want, corr)
		}
	}
	for i := range rounds {
		add(produceReq(9, -1, "t", 0, plainBatch(2).encode()), true) // waits for the group commit
		add(kmsg.NewPtrApiVersionsRequest(), true)
		add(kmsg.NewPtrMetadataRequest(), true)
		add(produceReq(9, 0, "t", 0, plainBatch(1).encode()), false) // acks=0: no answer
		add(fetchReq(srv, 12, "t", int64(i), 1<<20, 1<<20), true)    // data now
		if i%4 == 0 {
			add(parked, true) // waits for data or max wait
		}
	}
	// Last, an acks=-1 produce: its answer comes after the group commit
	// that makes every record before it visible.
	add(produceReq(9, -1, "t", 0, plainBatch(2).encode()), true)
	writeErr := make(chan error, 1)
	go func() {
		_, err := nc.Write(frames)
		writeErr <- err
	}()
	for i, c := range want {
		n, err := protocol.ReadSize(nc, 64<<20)
		if err != nil {
			t.Fatalf("read answer %d of %d: %v", i, len(want), err)
		}
		b, err := protocol.ReadBody(nc, n, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := int32(binary.BigEndian.Uint32(b)); got != c {
			t.Fatalf("answer %d: correlation id %d, want %d", i, got, c)
		}
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	// Every produce was appended: the acks=-1 ones and the acks=0 ones.
	w := dialWire(t, srv)
	resp := w.do(fetchReq(srv, 12, "t", 0, 64<<20, 64<<20)).(*kmsg.FetchResponse)
	p := resp.Topics[0].Partitions[0]
	if want := int64(3*rounds + 2); p.ErrorCode != 0 || p.HighWatermark != want {
		t.Fatalf("after the pipeline: error %v, high watermark %d, want %d", kerr.ErrorForCode(p.ErrorCode), p.HighWatermark, want)
	}
}
