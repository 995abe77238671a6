package protocol

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFetchResponseMatchesKmsg is the differential test of the
// ShareFetch encoder: with its ranges filled in, the frame equals what
// AppendResponse makes of the same response built with kmsg, for every
// version served and random contents.
func TestShareFetchResponseMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	files := [][]byte{make([]byte, 1<<14), make([]byte, 1<<10)}
	for _, f := range files {
		for i := range f {
			f[i] = byte(rng.Uint32())
		}
	}
	str := func() *string {
		if rng.IntN(2) == 0 {
			return nil
		}
		s := string(rune('a' + rng.IntN(26)))
		return &s
	}
	var frame FetchFrame
	for v := int16(1); v <= kmsg.NewPtrShareFetchRequest().MaxVersion(); v++ {
		for round := 0; round < 40; round++ {
			ours := ShareFetchResponse{Version: v, ThrottleMillis: rng.Int32N(100), ErrorCode: int16(rng.IntN(3)), ErrorMessage: str(),
				AcquisitionLockTimeoutMillis: rng.Int32()}
			theirs := kmsg.NewPtrShareFetchResponse()
			theirs.Version = v
			theirs.ThrottleMillis, theirs.ErrorCode, theirs.ErrorMessage = ours.ThrottleMillis, ours.ErrorCode, ours.ErrorMessage
			theirs.AcquisitionLockTimeoutMillis = ours.AcquisitionLockTimeoutMillis
			for ti := 0; ti < rng.IntN(4); ti++ {
				var ot ShareFetchTopic
				for k := range ot.TopicID {
					ot.TopicID[k] = byte(rng.Uint32())
				}
				kt := kmsg.NewShareFetchResponseTopic()
				kt.TopicID = ot.TopicID
				for pi := 0; pi < rng.IntN(4); pi++ {
					op := ShareFetchPartition{Partition: int32(pi), ErrorCode: int16(rng.IntN(2)), ErrorMessage: str(),
						AcknowledgeErrorCode: int16(rng.IntN(2)), AcknowledgeErrorMessage: str(), LeaderID: rng.Int32(), LeaderEpoch: rng.Int32()}
					kp := kmsg.NewShareFetchResponseTopicPartition()
					kp.Partition, kp.ErrorCode, kp.ErrorMessage = op.Partition, op.ErrorCode, op.ErrorMessage
					kp.AcknowledgeErrorCode, kp.AcknowledgeErrorMessage = op.AcknowledgeErrorCode, op.AcknowledgeErrorMessage
					kp.CurrentLeader.LeaderID, kp.CurrentLeader.LeaderEpoch = op.LeaderID, op.LeaderEpoch
					kp.Records = []byte{}
					for r := 0; r < rng.IntN(4); r++ {
						fi := rng.IntN(len(files))
						off := rng.Int64N(int64(len(files[fi])))
						n := rng.Int64N(int64(len(files[fi])) - off)
						op.Ranges = append(op.Ranges, FetchRange{Handle: fi, Offset: off, Len: n})
						kp.Records = append(kp.Records, files[fi][off:off+n]...)
					}
					for a := 0; a < rng.IntN(3); a++ {
						sa := ShareAcquired{FirstOffset: rng.Int64(), LastOffset: rng.Int64(), DeliveryCount: int16(rng.IntN(6))}
						op.Acquired = append(op.Acquired, sa)
						ka := kmsg.NewShareFetchResponseTopicPartitionAcquiredRecord()
						ka.FirstOffset, ka.LastOffset, ka.DeliveryCount = sa.FirstOffset, sa.LastOffset, sa.DeliveryCount
						kp.AcquiredRecords = append(kp.AcquiredRecords, ka)
					}
					ot.Partitions = append(ot.Partitions, op)
					kt.Partitions = append(kt.Partitions, kp)
				}
				ours.Topics = append(ours.Topics, ot)
				theirs.Topics = append(theirs.Topics, kt)
			}
			corr := rng.Int32()
			EncodeShareFetchResponse(&frame, corr, &ours)
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
