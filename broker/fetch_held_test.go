package broker

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/partition"
)

// heldSession opens a fetch session of topic "h" (one partition, empty) on
// a raw connection and returns the connection and the session.
func heldSession(t *testing.T, srv *InProcess) (*rawConn, *fetchSession) {
	t.Helper()
	if _, err := srv.Topics().Create("h", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	c := dialRaw(t, srv)
	open := sessionFetch(srv, "h", 1, 0, 0, 0)
	open.Version = 12
	resp := c.fetch(open)
	if resp.ErrorCode != 0 || resp.SessionID == 0 {
		t.Fatalf("opening the session: error %d, session %d", resp.ErrorCode, resp.SessionID)
	}
	srv.sessions.mu.Lock()
	s := srv.sessions.byID[resp.SessionID]
	srv.sessions.mu.Unlock()
	if s == nil {
		t.Fatal("the broker has no such session")
	}
	return c, s
}

// parkedSessionFetch is the incremental fetch of the session's next epoch,
// which parks on the empty partition for maxWait.
func parkedSessionFetch(srv *InProcess, s *fetchSession, epoch int32, maxWait int32) *kmsg.FetchRequest {
	req := sessionFetch(srv, "h", 1, s.id, epoch)
	req.Version, req.MinBytes, req.MaxWaitMillis = 12, 1, maxWait
	return req
}

// waitHolder waits until the session's fetch is held by a connection (held)
// or by none, and fails after 10 s.
func waitHolder(t *testing.T, s *fetchSession, held bool) {
	t.Helper()
	for start := time.Now(); (s.holder.Load() != nil) != held; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("session fetch held: %v, want %v", !held, held)
		}
	}
}

// TestHeldFetchAnsweredInOrder: a parked session fetch on a connection with
// nothing queued is held by the connection (not handed to its writer); a
// request pipelined behind it is answered after it, and an append answers
// it with the record.
func TestHeldFetchAnsweredInOrder(t *testing.T) {
	srv := newTestServer(t, nil)
	c, s := heldSession(t, srv)
	fetch := parkedSessionFetch(srv, s, 1, 60_000)
	fc := c.send(fetch)
	waitHolder(t, s, true)
	versions := kmsg.NewPtrApiVersionsRequest()
	vc := c.send(versions)
	tp, _ := srv.Topics().Get("h")
	if _, err := srv.Store().Partition(partition.TopicID(tp.ID), 0).Append(plainBatch(1).encode(), 9, time.Now().UnixMilli()); err != nil {
		t.Fatal(err)
	}
	resp := c.recv(fetch, fc, 10*time.Second).(*kmsg.FetchResponse) // fails on the wrong correlation id
	if p := onlyPartition(t, resp); p.HighWatermark != 1 || len(p.RecordBatches) == 0 {
		t.Fatalf("held fetch answered high watermark %d with %d bytes, want the record", p.HighWatermark, len(p.RecordBatches))
	}
	c.recv(versions, vc, 10*time.Second)
	waitHolder(t, s, false)
}

// TestHeldFetchMaxWait: a held fetch with no data is answered, empty, at
// its max wait, and the connection holds the next one the same way.
func TestHeldFetchMaxWait(t *testing.T) {
	srv := newTestServer(t, nil)
	c, s := heldSession(t, srv)
	for epoch := int32(1); epoch <= 3; epoch++ {
		fetch := parkedSessionFetch(srv, s, epoch, 20)
		resp := c.recv(fetch, c.send(fetch), 10*time.Second).(*kmsg.FetchResponse)
		if resp.ErrorCode != 0 || partitionsIn(resp) != 0 {
			t.Fatalf("fetch %d: error %d, %d partitions, want an empty answer", epoch, resp.ErrorCode, partitionsIn(resp))
		}
	}
	waitHolder(t, s, false)
}

// TestHeldFetchConnectionClosed: a client that closes its connection while
// its fetch is held lets the fetch go (its max wait is a minute) and the
// connection with it.
func TestHeldFetchConnectionClosed(t *testing.T) {
	srv := newTestServer(t, nil)
	c, s := heldSession(t, srv)
	c.send(parkedSessionFetch(srv, s, 1, 60_000))
	waitHolder(t, s, true)
	c.nc.Close()
	waitHolder(t, s, false)
}
