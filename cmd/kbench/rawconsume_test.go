package main

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/broker"
)

// offsetBatch is rawBatch's batch of n records, based at base.
func offsetBatch(base int64, n int) []byte {
	b := rawBatch(randomValue(10), n)
	binary.BigEndian.PutUint64(b, uint64(base))
	return b
}

// fetchBody encodes a Fetch v11 response body for topic "t" with the
// given records (nil: null) and error code per partition.
func fetchBody(topCode int16, parts map[int32][]byte, codes map[int32]int16) []byte {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = rawFetchVersion
	resp.ErrorCode = topCode
	t := kmsg.NewFetchResponseTopic()
	t.Topic = "t"
	for p := range int32(4) {
		recs, ok := parts[p]
		code, bad := codes[p]
		if !ok && !bad {
			continue
		}
		rp := kmsg.NewFetchResponseTopicPartition()
		rp.Partition, rp.ErrorCode, rp.RecordBatches = p, code, recs
		t.Partitions = append(t.Partitions, rp)
	}
	resp.Topics = append(resp.Topics, t)
	return resp.AppendTo(nil)
}

func concat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

// TestParseRawFetch: the raw consumer counts each record once and moves
// each partition's offset past its last whole batch: a batch below the
// offset is skipped, one that starts below it counts from it on, a
// cut-off last batch (even one cut inside its length) is left for the
// next fetch, and an empty or null partition moves nothing.
func TestParseRawFetch(t *testing.T) {
	b0, b10, b20 := offsetBatch(0, 10), offsetBatch(10, 10), offsetBatch(20, 5)
	body := fetchBody(0, map[int32][]byte{
		0: concat(b0, b10, b20[:len(b20)-1]), // from 0: 20 records, the third batch cut off
		1: concat(b0, b10, b20[:7]),          // from 4: 6 + 10, cut inside the third's length
		2: concat(b0, b10, b20),              // from 10: the first batch skipped
		3: nil,                               // empty
	}, nil)
	offsets := []int64{0, 4, 10, 7}
	n, advanced, err := parseRawFetch(body, "t", offsets, true)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(20 + 16 + 15); n != want || !advanced {
		t.Fatalf("%d records (advanced %v), want %d", n, advanced, want)
	}
	if want := []int64{20, 20, 25, 7}; !slices.Equal(offsets, want) {
		t.Fatalf("offsets %v, want %v", offsets, want)
	}
	// Read again from there: only what was cut off before counts.
	offsets = []int64{20, 20, 25, 7}
	n, advanced, err = parseRawFetch(fetchBody(0, map[int32][]byte{0: b20, 1: b20, 2: {}, 3: nil}, nil), "t", offsets, false)
	if err != nil || n != 10 || !advanced || !slices.Equal(offsets, []int64{25, 25, 25, 7}) {
		t.Fatalf("%d records, advanced %v, offsets %v, err %v; want 10, true, [25 25 25 7]", n, advanced, offsets, err)
	}
	// Nothing whole: nothing moves.
	offsets = []int64{25, 0, 0, 0}
	n, advanced, err = parseRawFetch(fetchBody(0, map[int32][]byte{0: b20[:30], 1: {}}, nil), "t", offsets, false)
	if err != nil || n != 0 || advanced {
		t.Fatalf("%d records, advanced %v, err %v; want 0, false", n, advanced, err)
	}
}

// TestParseRawFetchErrors: error codes, corrupt batches (with the CRC
// check on) and cut framing fail with a clear error.
func TestParseRawFetchErrors(t *testing.T) {
	bad := offsetBatch(0, 3)
	bad[len(bad)-1] ^= 1
	good := fetchBody(0, map[int32][]byte{0: offsetBatch(0, 3)}, nil)
	for _, c := range []struct {
		name string
		body []byte
		want error
		text string
	}{
		{"partition error", fetchBody(0, map[int32][]byte{0: nil}, map[int32]int16{1: kerr.OffsetOutOfRange.Code}), kerr.OffsetOutOfRange, "t[1] at offset 0"},
		{"response error", fetchBody(kerr.UnknownServerError.Code, nil, nil), kerr.UnknownServerError, "fetch t"},
		{"bad CRC", fetchBody(0, map[int32][]byte{0: bad}, nil), nil, "CRC mismatch"},
		{"cut framing", good[:len(good)-40], errShortFetch, ""},
	} {
		_, _, err := parseRawFetch(c.body, "t", make([]int64, 4), true)
		if err == nil || c.want != nil && !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v containing %q", c.name, err, c.want, c.text)
		}
	}
	// Without the check a corrupt batch counts.
	if n, _, err := parseRawFetch(fetchBody(0, map[int32][]byte{0: bad}, nil), "t", make([]int64, 4), false); err != nil || n != 3 {
		t.Fatalf("without the CRC check: %d records, %v", n, err)
	}
	// A partition not asked for.
	if _, _, err := parseRawFetch(good, "other", make([]int64, 4), false); err == nil {
		t.Fatal("a response for another topic was taken")
	}
}

// TestRawReaderStalls: a broker answering every fetch with nothing but a
// cut-off batch fails the read instead of being asked forever.
func TestRawReaderStalls(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		body := fetchBody(0, map[int32][]byte{0: offsetBatch(0, 10)[:50]}, nil)
		for {
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err != nil {
				return
			}
			req := make([]byte, binary.BigEndian.Uint32(size[:]))
			if _, err := io.ReadFull(c, req); err != nil {
				return
			}
			frame := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
			frame = append(append(frame, req[4:8]...), body...) // the correlation id
			if _, err := c.Write(frame); err != nil {
				return
			}
		}
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := &rawReader{conn: conn, topic: "t", parts: []int32{0}, ends: []int64{10}, offsets: []int64{0}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = r.pass(ctx, &fetchStats{})
	if err == nil || !strings.Contains(err.Error(), "advanced no partition") {
		t.Fatalf("pass: %v, want a stall error", err)
	}
}

// TestRawConsume: against an in-process kbroker, the raw consumer reads
// a filled topic whole, on one connection and on more connections than
// partitions (each reading a partition whole).
func TestRawConsume(t *testing.T) {
	ip, err := broker.StartInProcess(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ip.Close()
	bp := &brokerProc{spec: brokerSpec{name: "external", kind: "external"}, addr: ip.Addr()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const size, volume = 100, 2e6
	if err := fillTopic(ctx, bp.addr, produceCase{size, 4, 1}, "t", volume, 16<<10); err != nil {
		t.Fatal(err)
	}
	for _, conns := range []int{1, 6} {
		m, err := runRawConsume(ctx, bp, rawConsumeCase{size, 4, conns}, "t", 2, rawConsumeOptions{crc: true})
		if err != nil {
			t.Fatalf("%d connections: %v", conns, err)
		}
		// Six connections on four partitions: two are read twice. Two
		// passes.
		copies := float64(max(conns, 4)) / 4
		if want := 2 * copies * volume / size; m["records_s"]*m["seconds"] < want-0.5 || m["records_s"]*m["seconds"] > want+0.5 {
			t.Fatalf("%d connections: %.0f records, want %.0f", conns, m["records_s"]*m["seconds"], want)
		}
		if m["fetch_kb"] <= 0 {
			t.Fatalf("%d connections: no fetches recorded: %v", conns, m)
		}
	}
}
