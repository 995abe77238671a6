package broker

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/protocol"
)

func TestApiVersionsWithKgo(t *testing.T) {
	srv := newTestServer(t, nil)
	adm := newAdmin(t, srv)
	vs, err := adm.ApiVersions(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if v.Err != nil {
			t.Fatalf("broker %d: %v", v.NodeID, v.Err)
		}
		if _, _, ok := v.KeyVersions(18); !ok {
			t.Fatal("ApiVersions not advertised")
		}
	}
}

// rawRequest sends one request frame and reads one response frame.
func rawRequest(t *testing.T, addr string, key, version int16, body []byte) []byte {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	frame := binary.BigEndian.AppendUint16(nil, uint16(key))
	frame = binary.BigEndian.AppendUint16(frame, uint16(version))
	frame = binary.BigEndian.AppendUint32(frame, 7)      // correlation id
	frame = binary.BigEndian.AppendUint16(frame, 0xffff) // null client id
	frame = append(frame, body...)
	if _, err := nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(frame))), frame...)); err != nil {
		t.Fatal(err)
	}
	n, err := protocol.ReadSize(nc, 1<<20)
	if err != nil {
		t.Fatalf("read response size: %v", err)
	}
	resp, err := protocol.ReadBody(nc, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestApiVersionsUnsupportedVersion: Kafka answers an unknown ApiVersions
// version with UNSUPPORTED_VERSION in a v0 body that lists its versions.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	srv := newTestServer(t, nil)
	raw := rawRequest(t, srv.Addr(), 18, 99, nil)
	if corr := int32(binary.BigEndian.Uint32(raw)); corr != 7 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	if err := resp.ReadFrom(raw[4:]); err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) == 0 {
		t.Fatalf("got error %d with %d keys", resp.ErrorCode, len(resp.ApiKeys))
	}
}

// TestUnknownKeyClosesOnlyThatConnection: an unknown API key closes the
// connection it came on; other clients keep working.
func TestUnknownKeyClosesOnlyThatConnection(t *testing.T) {
	srv := newTestServer(t, nil)
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	frame := []byte{0, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 0, 0xff, 0xff}
	nc.Write(frame)
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection not closed: %v", err)
	}
	if _, err := newAdmin(t, srv).ApiVersions(testCtx(t)); err != nil {
		t.Fatalf("other client: %v", err)
	}
}

// TestBadFrameAfterGoodOnesIsAnsweredInOrder: a client that pipelines
// requests and then sends an unreadable one still gets every answer due
// before the connection closes, as from Kafka, which reads the next
// request only after answering the last.
func TestBadFrameAfterGoodOnesIsAnsweredInOrder(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, bad := range map[string][]byte{
		"unknown key":      {0, 0, 0, 10, 0x7f, 0x00, 0, 0, 0, 0, 0, 0, 0xff, 0xff},
		"truncated header": {0, 0, 0, 3, 0, 18, 0},
	} {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		var frames []byte
		for corr := int32(1); corr <= 3; corr++ {
			frames = append(frames, requestFrame(kmsg.NewPtrApiVersionsRequest(), 0, corr)...)
		}
		frames = append(frames, bad...)
		if _, err := nc.Write(frames); err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(nc)
		for want := int32(1); want <= 3; want++ {
			var size [4]byte
			if _, err := io.ReadFull(br, size[:]); err != nil {
				t.Fatalf("answer %d: %v", want, err)
			}
			body := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(br, body); err != nil {
				t.Fatalf("answer %d: %v", want, err)
			}
			if corr := int32(binary.BigEndian.Uint32(body)); corr != want {
				t.Fatalf("answer with correlation id %d, want %d", corr, want)
			}
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("connection not closed after the answers: %v", err)
		}
		nc.Close()
	}
}

// TestOversizedFrameClosesConnection: a frame above socket.request.max.bytes
// is refused before anything is allocated for it.
func TestOversizedFrameClosesConnection(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.MaxRequestBytes = 4096 })
	nc, err := net.Dial("tcp", srv.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.Write([]byte{0x7f, 0xff, 0xff, 0xff})
	nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("connection not closed: %v", err)
	}
}

// TestApiVersionsListsProduceFromV0: like Kafka 4 (KAFKA-18659), the
// broker lists Produce from v0, so that older librdkafka compresses, yet
// a Produce below v3 closes the connection as an unserved version does.
func TestApiVersionsListsProduceFromV0(t *testing.T) {
	srv := newTestServer(t, nil)
	vs, err := newAdmin(t, srv).ApiVersions(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if lo, _, ok := v.KeyVersions(int16(kmsg.Produce)); !ok || lo != 0 {
			t.Fatalf("Produce listed from v%d (listed %v), want v0", lo, ok)
		}
	}
	for _, version := range []int16{0, 2} {
		nc, err := net.Dial("tcp", srv.Addr())
		if err != nil {
			t.Fatal(err)
		}
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = 1, 1000
		if _, err := nc.Write(requestFrame(req, version, 1)); err != nil {
			t.Fatal(err)
		}
		nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := nc.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("Produce v%d: connection not closed: %v", version, err)
		}
		nc.Close()
	}
}

// TestApiVersionsInvalidClientSoftware: a v3+ request whose client
// software name or version breaks KIP-511's rule gets INVALID_REQUEST and
// nothing else, as from Kafka.
func TestApiVersionsInvalidClientSoftware(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, sw := range [][2]string{{"", "1"}, {"bad name", "1"}, {"client", ""}, {"client", "1.0-"}} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, sw[0], sw[1]
		raw := rawRequest(t, srv.Addr(), 18, 3, req.AppendTo([]byte{0})) // 0: the header's tags
		resp := kmsg.NewPtrApiVersionsResponse()
		resp.Version = 3
		if err := resp.ReadFrom(raw[4:]); err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != kerr.InvalidRequest.Code || len(resp.ApiKeys) != 0 || len(resp.SupportedFeatures) != 0 {
			t.Errorf("%q: error %d with %d keys and %d features, want INVALID_REQUEST alone", sw, resp.ErrorCode, len(resp.ApiKeys), len(resp.SupportedFeatures))
		}
	}
}
