package protocol

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fill returns the frame's bytes with each range replaced by the bytes it
// names in files (Handle is an index into files).
func fill(f *FetchFrame, files [][]byte) []byte {
	var out []byte
	prev := 0
	for _, s := range f.Splices {
		out = append(out, f.Bytes[prev:s.At]...)
		file := files[s.Range.Handle.(int)]
		out = append(out, file[s.Range.Offset:s.Range.Offset+s.Range.Len]...)
		prev = s.At
	}
	return append(out, f.Bytes[prev:]...)
}

// TestFetchResponseMatchesKmsg is the differential test: for every version
// and random contents, the frame with its ranges filled in equals what
// AppendResponse makes of the same response built with kmsg.
func TestFetchResponseMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	files := [][]byte{make([]byte, 1<<16), make([]byte, 1<<12)}
	for _, f := range files {
		for i := range f {
			f[i] = byte(rng.Uint32())
		}
	}
	var frame FetchFrame
	for v := int16(4); v <= kmsg.NewPtrFetchRequest().MaxVersion(); v++ {
		for round := 0; round < 30; round++ {
			ours := FetchResponse{Version: v, ThrottleMillis: rng.Int32N(100), ErrorCode: int16(rng.IntN(3)), SessionID: rng.Int32()}
			theirs := kmsg.NewPtrFetchResponse()
			theirs.Version = v
			theirs.ThrottleMillis, theirs.ErrorCode, theirs.SessionID = ours.ThrottleMillis, ours.ErrorCode, ours.SessionID
			if v < 7 {
				theirs.ErrorCode, theirs.SessionID = 0, 0
				ours.ErrorCode, ours.SessionID = 0, 0
			}
			for ti := 0; ti < rng.IntN(4); ti++ {
				ot := FetchTopic{Topic: string(rune('a' + ti))}
				for k := range ot.TopicID {
					ot.TopicID[k] = byte(rng.Uint32())
				}
				kt := kmsg.NewFetchResponseTopic()
				kt.Topic, kt.TopicID = ot.Topic, ot.TopicID
				for pi := 0; pi < rng.IntN(4); pi++ {
					op := FetchPartition{
						Partition: int32(pi), ErrorCode: int16(rng.IntN(2)),
						HighWatermark: rng.Int64(), LastStableOffset: rng.Int64(), LogStartOffset: rng.Int64(),
						PreferredReadReplica: -1,
					}
					kp := kmsg.NewFetchResponseTopicPartition()
					kp.Partition, kp.ErrorCode, kp.HighWatermark = op.Partition, op.ErrorCode, op.HighWatermark
					kp.LastStableOffset, kp.LogStartOffset, kp.PreferredReadReplica = op.LastStableOffset, op.LogStartOffset, -1
					if v < 5 {
						kp.LogStartOffset, op.LogStartOffset = -1, -1
					}
					if v >= 12 && rng.IntN(3) == 0 {
						op.HasDivergingEpoch, op.DivergingEpoch, op.DivergingEndOffset = true, rng.Int32N(100), rng.Int64()
						kp.DivergingEpoch.Epoch, kp.DivergingEpoch.EndOffset = op.DivergingEpoch, op.DivergingEndOffset
					}
					if v >= 12 && rng.IntN(3) == 0 {
						op.HasCurrentLeader, op.CurrentLeaderID, op.CurrentLeaderEpoch = true, rng.Int32N(5), rng.Int32N(100)
						kp.CurrentLeader.LeaderID, kp.CurrentLeader.LeaderEpoch = op.CurrentLeaderID, op.CurrentLeaderEpoch
					}
					if rng.IntN(2) == 0 {
						op.AbortedTransactions = []AbortedTransaction{}
						kp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
						for a := 0; a < rng.IntN(3); a++ {
							at := AbortedTransaction{ProducerID: rng.Int64(), FirstOffset: rng.Int64()}
							op.AbortedTransactions = append(op.AbortedTransactions, at)
							ka := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
							ka.ProducerID, ka.FirstOffset = at.ProducerID, at.FirstOffset
							kp.AbortedTransactions = append(kp.AbortedTransactions, ka)
						}
					}
					kp.RecordBatches = []byte{}
					for r := 0; r < rng.IntN(4); r++ {
						fi := rng.IntN(len(files))
						off := rng.Int64N(int64(len(files[fi])))
						n := rng.Int64N(int64(len(files[fi])) - off)
						op.Ranges = append(op.Ranges, FetchRange{Handle: fi, Offset: off, Len: n})
						kp.RecordBatches = append(kp.RecordBatches, files[fi][off:off+n]...)
					}
					ot.Partitions = append(ot.Partitions, op)
					kt.Partitions = append(kt.Partitions, kp)
				}
				ours.Topics = append(ours.Topics, ot)
				theirs.Topics = append(theirs.Topics, kt)
			}
			if v >= 16 && rng.IntN(2) == 0 {
				for n := range rng.IntN(3) + 1 {
					e := NodeEndpoint{NodeID: int32(n), Host: strings.Repeat("h", rng.IntN(200)), Port: rng.Int32N(65536)}
					ours.NodeEndpoints = append(ours.NodeEndpoints, e)
					kb := kmsg.NewFetchResponseBroker()
					kb.NodeID, kb.Host, kb.Port = e.NodeID, e.Host, e.Port
					theirs.Brokers = append(theirs.Brokers, kb)
				}
			}
			corr := rng.Int32()
			EncodeFetchResponse(&frame, corr, &ours)
			got := fill(&frame, files)
			want := AppendResponse(nil, corr, theirs)
			if !bytes.Equal(got, want) {
				t.Fatalf("v%d round %d: %d bytes, kmsg %d bytes", v, round, len(got), len(want))
			}
			if frame.Size() != int64(len(want)) {
				t.Fatalf("v%d: Size %d, want %d", v, frame.Size(), len(want))
			}
		}
	}
}

func TestEncodeFetchResponseDoesNotAllocate(t *testing.T) {
	r := FetchResponse{Version: 16, Topics: []FetchTopic{{Partitions: []FetchPartition{{Ranges: []FetchRange{{Handle: 0, Len: 100}, {Handle: 0, Offset: 200, Len: 50}}}}}}}
	var f FetchFrame
	EncodeFetchResponse(&f, 1, &r)
	if n := testing.AllocsPerRun(100, func() { EncodeFetchResponse(&f, 1, &r) }); n != 0 {
		t.Fatalf("%v allocations per encode", n)
	}
}

// TestFetchResponseAbortedTransactions pins the three forms of a
// partition's aborted transactions (null for read_uncommitted and errors,
// empty and filled for read_committed) at a non-flexible and a flexible
// version: the encoding equals kmsg's, and kmsg reads back null as nil and
// empty as a non-nil empty slice, which clients rely on.
func TestFetchResponseAbortedTransactions(t *testing.T) {
	files := [][]byte{[]byte("0123456789")}
	for _, v := range []int16{4, 11, 12, kmsg.NewPtrFetchRequest().MaxVersion()} {
		for _, aborted := range [][]AbortedTransaction{nil, {}, {{ProducerID: 7, FirstOffset: 100}, {ProducerID: 9, FirstOffset: 3}}} {
			ours := FetchResponse{Version: v, Topics: []FetchTopic{{Topic: "t", Partitions: []FetchPartition{{
				Partition: 1, HighWatermark: 9, LastStableOffset: 7, LogStartOffset: 0, PreferredReadReplica: -1,
				AbortedTransactions: aborted, Ranges: []FetchRange{{Handle: 0, Offset: 2, Len: 5}},
			}}}}}
			var f FetchFrame
			EncodeFetchResponse(&f, 42, &ours)
			got := fill(&f, files)

			theirs := kmsg.NewPtrFetchResponse()
			theirs.Version = v
			kt := kmsg.NewFetchResponseTopic()
			kt.Topic = "t"
			kp := kmsg.NewFetchResponseTopicPartition()
			kp.Partition, kp.HighWatermark, kp.LastStableOffset, kp.LogStartOffset, kp.PreferredReadReplica = 1, 9, 7, 0, -1
			if aborted != nil {
				kp.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
				for _, a := range aborted {
					ka := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					ka.ProducerID, ka.FirstOffset = a.ProducerID, a.FirstOffset
					kp.AbortedTransactions = append(kp.AbortedTransactions, ka)
				}
			}
			kp.RecordBatches = []byte("23456")
			kt.Partitions = append(kt.Partitions, kp)
			theirs.Topics = append(theirs.Topics, kt)
			if want := AppendResponse(nil, 42, theirs); !bytes.Equal(got, want) {
				t.Fatalf("v%d aborted %v: encoding differs from kmsg", v, aborted)
			}

			// Read it back as a client does (skip size, correlation id and
			// the flexible header's tags).
			body := got[8:]
			if v >= 12 {
				body = body[1:]
			}
			back := kmsg.NewPtrFetchResponse()
			back.Version = v
			if err := back.ReadFrom(body); err != nil {
				t.Fatalf("v%d: %v", v, err)
			}
			ba := back.Topics[0].Partitions[0].AbortedTransactions
			if (ba == nil) != (aborted == nil) || len(ba) != len(aborted) {
				t.Fatalf("v%d: sent %v, read back %v (nil %v)", v, aborted, ba, ba == nil)
			}
			for i := range ba {
				if ba[i].ProducerID != aborted[i].ProducerID || ba[i].FirstOffset != aborted[i].FirstOffset {
					t.Fatalf("v%d: entry %d read back as %+v", v, i, ba[i])
				}
			}
		}
	}
}

func TestEncodeFetchResponseWithAbortedDoesNotAllocate(t *testing.T) {
	r := FetchResponse{Version: 16, Topics: []FetchTopic{{Partitions: []FetchPartition{{
		AbortedTransactions: []AbortedTransaction{{ProducerID: 1, FirstOffset: 2}, {ProducerID: 3, FirstOffset: 4}},
		Ranges:              []FetchRange{{Handle: 0, Len: 100}},
	}}}}}
	var f FetchFrame
	EncodeFetchResponse(&f, 1, &r)
	if n := testing.AllocsPerRun(100, func() { EncodeFetchResponse(&f, 1, &r) }); n != 0 {
		t.Fatalf("%v allocations per encode", n)
	}
}
