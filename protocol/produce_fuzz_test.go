package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzParseProduce compares ParseProduceBody with kmsg's decoder (through
// ParseBody) on any frame that claims to be a Produce request: both fail
// or both give the same request, whether decoded into a fresh request or
// into one that held a different, larger request before (the reuse a
// connection makes), and ParseProduceBody never panics.
//
// Seeds: every Produce version in its default form, the produce frames of
// the benchmark, and kgo's captured Produce frames from
// testdata/fuzz/FuzzParseRequest.
func FuzzParseProduce(f *testing.F) {
	for _, frame := range produceSeeds(f) {
		f.Add(frame)
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		checkParseProduce(t, frame)
	})
}

// produceSeeds are Produce frames (size prefix removed) of every version.
func produceSeeds(tb testing.TB) [][]byte {
	var frames [][]byte
	rf := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	for v := int16(3); v <= kmsg.NewPtrProduceRequest().MaxVersion(); v++ {
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(v)
		frames = append(frames, rf.AppendRequest(nil, req, 1)[4:], produceFrame(v, 3, 10), multiProduceFrame(v))
	}
	// kgo's captured frames: only the Produce ones matter here (the
	// others return at once), so all of them go in.
	frames = append(frames, readSeedCorpus(tb)...)
	return frames
}

// multiProduceFrame is a Produce request of two topics, three partitions,
// a transactional id, one empty and one null batch.
func multiProduceFrame(v int16) []byte {
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(v)
	id := "txn-1"
	req.TransactionID = &id
	for i, name := range []string{"alpha", "beta"} {
		t := kmsg.NewProduceRequestTopic()
		t.Topic, t.TopicID = name, [16]byte{byte(i + 1), 2, 3}
		for p := range 3 - i {
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = int32(p)
			switch p {
			case 0:
				rp.Records = []byte("not really a batch")
			case 1:
				rp.Records = []byte{}
			}
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("multi")).AppendRequest(nil, req, 7)[4:]
}

// checkParseProduce is the fuzz property for one frame.
func checkParseProduce(t *testing.T, frame []byte) {
	h, rest, err := ParseHeader(frame)
	if err != nil || h.Key != 0 || h.Version < 3 || h.Version > kmsg.NewPtrProduceRequest().MaxVersion() {
		return // the broker refuses it before decoding the body
	}
	want, wantErr := ParseBody(h, rest)

	fresh := kmsg.NewPtrProduceRequest()
	gotErr := ParseProduceBody(h, rest, fresh)
	used := kmsg.NewPtrProduceRequest()
	if err := ParseProduceBody(Header{Key: 0, Version: h.Version}, bodyOf(t, multiProduceFrame(h.Version)), used); err != nil {
		t.Fatalf("v%d: the reuse seed does not parse: %v", h.Version, err)
	}
	ClearProduce(used)
	usedErr := ParseProduceBody(h, rest, used)

	if (wantErr != nil) != (gotErr != nil) || (wantErr != nil) != (usedErr != nil) {
		t.Fatalf("v%d: kmsg error %v, ParseProduceBody %v, into a used request %v", h.Version, wantErr, gotErr, usedErr)
	}
	if gotErr != nil {
		if !errors.Is(gotErr, ErrMalformed) || !errors.Is(usedErr, ErrMalformed) {
			t.Fatalf("errors %v, %v do not wrap ErrMalformed", gotErr, usedErr)
		}
		return
	}
	w := want.(*kmsg.ProduceRequest)
	if d := produceDiff(w, fresh); d != "" {
		t.Fatalf("v%d, fresh request: %s", h.Version, d)
	}
	if d := produceDiff(w, used); d != "" {
		t.Fatalf("v%d, reused request: %s", h.Version, d)
	}
}

// bodyOf is what follows the header of a frame.
func bodyOf(t *testing.T, frame []byte) []byte {
	t.Helper()
	_, rest, err := ParseHeader(frame)
	if err != nil {
		t.Fatal(err)
	}
	return rest
}

// produceDiff describes how got differs from want, "" if it does not.
// Empty and nil arrays are the same; records are compared with their
// nil-ness, which tells a null batch from an empty one.
func produceDiff(want, got *kmsg.ProduceRequest) string {
	switch {
	case want.Version != got.Version || want.Acks != got.Acks || want.TimeoutMillis != got.TimeoutMillis:
		return fmt.Sprintf("got version %d acks %d timeout %d, want %d %d %d", got.Version, got.Acks, got.TimeoutMillis, want.Version, want.Acks, want.TimeoutMillis)
	case (want.TransactionID == nil) != (got.TransactionID == nil) || want.TransactionID != nil && *want.TransactionID != *got.TransactionID:
		return fmt.Sprintf("got transactional id %v, want %v", got.TransactionID, want.TransactionID)
	case !sameTags(want.UnknownTags, got.UnknownTags):
		return "request tags differ"
	case len(want.Topics) != len(got.Topics):
		return fmt.Sprintf("got %d topics, want %d", len(got.Topics), len(want.Topics))
	}
	for i := range want.Topics {
		wt, gt := &want.Topics[i], &got.Topics[i]
		switch {
		case wt.Topic != gt.Topic || wt.TopicID != gt.TopicID:
			return fmt.Sprintf("topic %d: got %q %x, want %q %x", i, gt.Topic, gt.TopicID, wt.Topic, wt.TopicID)
		case !sameTags(wt.UnknownTags, gt.UnknownTags):
			return fmt.Sprintf("topic %d: tags differ", i)
		case len(wt.Partitions) != len(gt.Partitions):
			return fmt.Sprintf("topic %d: got %d partitions, want %d", i, len(gt.Partitions), len(wt.Partitions))
		}
		for j := range wt.Partitions {
			wp, gp := &wt.Partitions[j], &gt.Partitions[j]
			switch {
			case wp.Partition != gp.Partition:
				return fmt.Sprintf("topic %d partition %d: got index %d, want %d", i, j, gp.Partition, wp.Partition)
			case (wp.Records == nil) != (gp.Records == nil) || !bytes.Equal(wp.Records, gp.Records):
				return fmt.Sprintf("topic %d partition %d: got records %x, want %x", i, j, gp.Records, wp.Records)
			case !sameTags(wp.UnknownTags, gp.UnknownTags):
				return fmt.Sprintf("topic %d partition %d: tags differ", i, j)
			}
		}
	}
	return ""
}

// sameTags compares tagged fields by content.
func sameTags(a, b kmsg.Tags) bool {
	collect := func(t kmsg.Tags) map[uint32]string {
		m := map[uint32]string{}
		t.Each(func(k uint32, v []byte) { m[k] = string(v) })
		return m
	}
	return reflect.DeepEqual(collect(a), collect(b))
}

// TestParseProduceReusesArrays: decoding a connection's next request into
// its kept request allocates nothing, by topic id (v13) and by name.
func TestParseProduceReusesArrays(t *testing.T) {
	for _, v := range []int16{7, 9, 13} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			h, rest, err := ParseHeader(multiProduceFrame(v))
			if err != nil {
				t.Fatal(err)
			}
			req := kmsg.NewPtrProduceRequest()
			if err := ParseProduceBody(h, rest, req); err != nil {
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(100, func() {
				ClearProduce(req)
				if err := ParseProduceBody(h, rest, req); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Fatalf("got %v allocations per decode, want 0", allocs)
			}
			if len(req.Topics) != 2 || len(req.Topics[0].Partitions) != 3 || req.Topics[0].Partitions[1].Records == nil || req.Topics[0].Partitions[2].Records != nil {
				t.Fatalf("decoded %+v", req)
			}
		})
	}
}

// TestClearProduce: a cleared request points into no frame.
func TestClearProduce(t *testing.T) {
	h, rest, err := ParseHeader(multiProduceFrame(9))
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrProduceRequest()
	if err := ParseProduceBody(h, rest, req); err != nil {
		t.Fatal(err)
	}
	ClearProduce(req)
	for _, tp := range req.Topics {
		for _, p := range tp.Partitions {
			if p.Records != nil {
				t.Fatalf("partition %d still holds %d record bytes", p.Partition, len(p.Records))
			}
		}
	}
}
