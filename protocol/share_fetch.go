package protocol

import "encoding/binary"

// The ShareFetch response (KIP-932) carries record batches as the Fetch
// response does, so it too is encoded here with splice points for file
// ranges, into a FetchFrame that the broker's writer sends with sendfile.
// A differential test checks it against kmsg.ShareFetchResponse.AppendTo.

// ShareAcquired is a run of records acquired by the fetching member.
type ShareAcquired struct {
	FirstOffset, LastOffset int64
	DeliveryCount           int16
}

// ShareFetchPartition is one partition of a ShareFetch response.
type ShareFetchPartition struct {
	Partition               int32
	ErrorCode               int16
	ErrorMessage            *string
	AcknowledgeErrorCode    int16
	AcknowledgeErrorMessage *string
	LeaderID, LeaderEpoch   int32
	// Ranges are the record batches; none is empty (not null) records.
	Ranges   []FetchRange
	Acquired []ShareAcquired
}

// ShareFetchTopic is one topic of a ShareFetch response.
type ShareFetchTopic struct {
	TopicID    [16]byte
	Partitions []ShareFetchPartition
}

// ShareFetchResponse is a ShareFetch response to encode (v1+; v0 was
// Kafka 4.0's early access). Node endpoints are never sent: this broker
// leads every partition.
type ShareFetchResponse struct {
	Version                      int16
	ThrottleMillis               int32
	ErrorCode                    int16
	ErrorMessage                 *string
	AcquisitionLockTimeoutMillis int32
	Topics                       []ShareFetchTopic
}

// EncodeShareFetchResponse encodes r as a response frame for
// correlationID into f, reusing f's memory.
func EncodeShareFetchResponse(f *FetchFrame, correlationID int32, r *ShareFetchResponse) {
	b := f.Bytes[:0]
	f.Splices = f.Splices[:0]
	b = append(b, 0, 0, 0, 0) // size, set below
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = append(b, 0) // response header tagged fields
	b = binary.BigEndian.AppendUint32(b, uint32(r.ThrottleMillis))
	b = binary.BigEndian.AppendUint16(b, uint16(r.ErrorCode))
	b = appendNullableString(b, r.ErrorMessage)
	if r.Version >= 1 {
		b = binary.BigEndian.AppendUint32(b, uint32(r.AcquisitionLockTimeoutMillis))
	}
	b = appendArrayLen(b, len(r.Topics), true)
	var rangesLen int64
	for i := range r.Topics {
		t := &r.Topics[i]
		b = append(b, t.TopicID[:]...)
		b = appendArrayLen(b, len(t.Partitions), true)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			b = binary.BigEndian.AppendUint32(b, uint32(p.Partition))
			b = binary.BigEndian.AppendUint16(b, uint16(p.ErrorCode))
			b = appendNullableString(b, p.ErrorMessage)
			b = binary.BigEndian.AppendUint16(b, uint16(p.AcknowledgeErrorCode))
			b = appendNullableString(b, p.AcknowledgeErrorMessage)
			b = binary.BigEndian.AppendUint32(b, uint32(p.LeaderID))
			b = binary.BigEndian.AppendUint32(b, uint32(p.LeaderEpoch))
			b = append(b, 0) // current leader tagged fields
			var n int64
			for _, rg := range p.Ranges {
				n += rg.Len
			}
			b = binary.AppendUvarint(b, uint64(n)+1)
			for _, rg := range p.Ranges {
				f.Splices = append(f.Splices, Splice{At: len(b), Range: rg})
			}
			rangesLen += n
			b = appendArrayLen(b, len(p.Acquired), true)
			for _, a := range p.Acquired {
				b = binary.BigEndian.AppendUint64(b, uint64(a.FirstOffset))
				b = binary.BigEndian.AppendUint64(b, uint64(a.LastOffset))
				b = binary.BigEndian.AppendUint16(b, uint16(a.DeliveryCount))
				b = append(b, 0)
			}
			b = append(b, 0) // partition tagged fields
		}
		b = append(b, 0) // topic tagged fields
	}
	b = appendArrayLen(b, 0, true) // node endpoints
	b = append(b, 0)               // response tagged fields
	binary.BigEndian.PutUint32(b, uint32(int64(len(b))-4+rangesLen))
	f.Bytes = b
}

// appendNullableString appends a compact nullable string.
func appendNullableString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, 0)
	}
	return appendString(b, *s, true)
}
