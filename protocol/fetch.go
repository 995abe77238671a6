package protocol

import (
	"encoding/binary"
)

// The fetch response is the one response not built with kmsg: its record
// data stays in the commit-log files and goes to the socket with
// sendfile(2), so the encoder produces the framing bytes with splice points
// where file ranges go. A differential test checks that, with the ranges
// filled in, the bytes equal kmsg.FetchResponse.AppendTo for every version.

// FetchRange is a run of record-batch bytes in a file. Handle is opaque to
// this package (the broker puts a held commit-log file there).
type FetchRange struct {
	Handle any
	Offset int64
	Len    int64
}

// AbortedTransaction is one entry of a partition's aborted transactions
// (read_committed fetches).
type AbortedTransaction struct {
	ProducerID  int64
	FirstOffset int64
}

// FetchPartition is one partition of a fetch response.
type FetchPartition struct {
	Partition        int32
	ErrorCode        int16
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	// AbortedTransactions (v4+) is encoded as null when nil, which Kafka
	// sends for read_uncommitted fetches and errors, and as an array,
	// possibly empty, otherwise (read_committed).
	AbortedTransactions  []AbortedTransaction
	PreferredReadReplica int32
	// HasDivergingEpoch adds DivergingEpoch (v12+, tagged): the end of
	// the leader epoch a fetch's LastFetchedEpoch names, where the log
	// diverges from what the fetcher has (KIP-595).
	HasDivergingEpoch  bool
	DivergingEpoch     int32
	DivergingEndOffset int64
	// HasCurrentLeader adds CurrentLeader (v12+, tagged): the leader id
	// and epoch a NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH partition
	// should go to (KIP-951).
	HasCurrentLeader                    bool
	CurrentLeaderID, CurrentLeaderEpoch int32
	// Ranges are the record batches, in order. None means empty records
	// (Kafka sends empty, not null, records for a partition without data).
	Ranges []FetchRange
}

// FetchTopic is one topic of a fetch response: by name up to v12, by id
// from v13 (KIP-516).
type FetchTopic struct {
	Topic      string
	TopicID    [16]byte
	Partitions []FetchPartition
}

// FetchResponse is a fetch response to encode.
type FetchResponse struct {
	Version        int16
	ThrottleMillis int32
	ErrorCode      int16
	SessionID      int32
	Topics         []FetchTopic
	// NodeEndpoints (v16+, tagged) are the endpoints of the leaders named
	// in CurrentLeader (KIP-951).
	NodeEndpoints []NodeEndpoint
}

// NodeEndpoint is a broker's address in a fetch response's NodeEndpoints.
type NodeEndpoint struct {
	NodeID int32
	Host   string
	Port   int32
}

// Splice says that Range's bytes go at byte At of FetchFrame.Bytes.
type Splice struct {
	At    int
	Range FetchRange
}

// FetchFrame is an encoded fetch response frame: Bytes with the file
// ranges of Splices inserted at their positions, in order. The size prefix
// in Bytes counts the ranges.
type FetchFrame struct {
	Bytes   []byte
	Splices []Splice
}

// Size is the length of the whole frame, size prefix and ranges included.
func (f *FetchFrame) Size() int64 {
	n := int64(len(f.Bytes))
	for _, s := range f.Splices {
		n += s.Range.Len
	}
	return n
}

// EncodeFetchResponse encodes r as a response frame for correlationID into
// f, reusing f's memory: with warm buffers it allocates nothing.
func EncodeFetchResponse(f *FetchFrame, correlationID int32, r *FetchResponse) {
	v := r.Version
	flex := v >= 12
	b := f.Bytes[:0]
	f.Splices = f.Splices[:0]
	b = append(b, 0, 0, 0, 0) // size, set below
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	if flex {
		b = append(b, 0) // response header tagged fields
	}
	if v >= 1 {
		b = binary.BigEndian.AppendUint32(b, uint32(r.ThrottleMillis))
	}
	if v >= 7 {
		b = binary.BigEndian.AppendUint16(b, uint16(r.ErrorCode))
		b = binary.BigEndian.AppendUint32(b, uint32(r.SessionID))
	}
	b = appendArrayLen(b, len(r.Topics), flex)
	var rangesLen int64
	for i := range r.Topics {
		t := &r.Topics[i]
		if v <= 12 {
			b = appendString(b, t.Topic, flex)
		} else {
			b = append(b, t.TopicID[:]...)
		}
		b = appendArrayLen(b, len(t.Partitions), flex)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
			b = binary.BigEndian.AppendUint16(b, uint16(p.ErrorCode))
			b = binary.BigEndian.AppendUint64(b, uint64(p.HighWatermark))
			if v >= 4 {
				b = binary.BigEndian.AppendUint64(b, uint64(p.LastStableOffset))
			}
			if v >= 5 {
				b = binary.BigEndian.AppendUint64(b, uint64(p.LogStartOffset))
			}
			if v >= 4 {
				if p.AbortedTransactions == nil {
					b = appendNullArrayLen(b, flex)
				} else {
					b = appendArrayLen(b, len(p.AbortedTransactions), flex)
					for _, a := range p.AbortedTransactions {
						b = binary.BigEndian.AppendUint64(b, uint64(a.ProducerID))
						b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
						if flex {
							b = append(b, 0)
						}
					}
				}
			}
			if v >= 11 {
				b = binary.BigEndian.AppendUint32(b, uint32(p.PreferredReadReplica))
			}
			var n int64
			for _, rg := range p.Ranges {
				n += rg.Len
			}
			if flex {
				b = binary.AppendUvarint(b, uint64(n)+1)
			} else {
				b = binary.BigEndian.AppendUint32(b, uint32(n))
			}
			for _, rg := range p.Ranges {
				f.Splices = append(f.Splices, Splice{At: len(b), Range: rg})
			}
			rangesLen += n
			if flex {
				// Tagged fields in tag order: DivergingEpoch (tag 0, 13
				// bytes), CurrentLeader (tag 1, 9 bytes).
				tags := byte(0)
				if p.HasDivergingEpoch {
					tags++
				}
				if p.HasCurrentLeader {
					tags++
				}
				b = append(b, tags)
				if p.HasDivergingEpoch {
					b = append(b, 0, 13)
					b = binary.BigEndian.AppendUint32(b, uint32(p.DivergingEpoch))
					b = binary.BigEndian.AppendUint64(b, uint64(p.DivergingEndOffset))
					b = append(b, 0)
				}
				if p.HasCurrentLeader {
					b = append(b, 1, 9)
					b = binary.BigEndian.AppendUint32(b, uint32(p.CurrentLeaderID))
					b = binary.BigEndian.AppendUint32(b, uint32(p.CurrentLeaderEpoch))
					b = append(b, 0)
				}
			}
		}
		if flex {
			b = append(b, 0) // topic tagged fields
		}
	}
	if v >= 16 && len(r.NodeEndpoints) > 0 {
		b = appendNodeEndpoints(b, r.NodeEndpoints)
	} else if flex {
		b = append(b, 0) // response tagged fields
	}
	binary.BigEndian.PutUint32(b, uint32(int64(len(b))-4+rangesLen))
	f.Bytes = b
}

func appendArrayLen(b []byte, n int, flex bool) []byte {
	if flex {
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

func appendNullArrayLen(b []byte, flex bool) []byte {
	if flex {
		return append(b, 0)
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff)
}

func appendString(b []byte, s string, flex bool) []byte {
	if flex {
		b = binary.AppendUvarint(b, uint64(len(s))+1)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	}
	return append(b, s...)
}

// appendNodeEndpoints appends the response's tagged fields holding only
// NodeEndpoints (tag 0): a compact array of node id, host, port, null
// rack and empty tagged fields.
func appendNodeEndpoints(b []byte, eps []NodeEndpoint) []byte {
	size := uvarintLen(uint64(len(eps) + 1))
	for _, e := range eps {
		size += 4 + uvarintLen(uint64(len(e.Host)+1)) + len(e.Host) + 4 + 1 + 1
	}
	b = append(b, 1, 0) // one tagged field, tag 0
	b = binary.AppendUvarint(b, uint64(size))
	b = binary.AppendUvarint(b, uint64(len(eps)+1))
	for _, e := range eps {
		b = binary.BigEndian.AppendUint32(b, uint32(e.NodeID))
		b = binary.AppendUvarint(b, uint64(len(e.Host)+1))
		b = append(b, e.Host...)
		b = binary.BigEndian.AppendUint32(b, uint32(e.Port))
		b = append(b, 0, 0) // null rack, no tagged fields
	}
	return b
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
