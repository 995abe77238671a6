package protocol

import (
	"bytes"
	"math/rand/v2"
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
