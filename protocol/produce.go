package protocol

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ParseProduceBody is ParseBody for a Produce request (key 0), decoded
// into dst, a request a connection keeps from one produce to the next:
// its topic and partition arrays are reused, so that a producer's steady
// stream of requests allocates nothing to decode (kmsg's decoder makes new
// arrays for every request, per topic: on a request to 64 partitions that
// was a third of what the broker allocated per request). The result is
// what kmsg's ReadFrom gives (FuzzParseProduce compares the two), except
// that an empty array may keep its old capacity where kmsg leaves nil.
// Record batches alias rest, as with ParseBody.
//
// A non-null transactional id equal to dst's previous one keeps its
// pointer (no string allocated); unknown tagged fields, which no client
// sends, are kept as kmsg keeps them.
func ParseProduceBody(h Header, rest []byte, dst *kmsg.ProduceRequest) error {
	return parseKept(h, rest, dst, 0, "Produce", decodeProduce)
}

// decodeProduce decodes a Produce body of dst.Version into dst. The
// bounds on array counts are kmsg's (ProduceRequest.readFrom): a count
// whose smallest possible encoding is longer than what is left fails at
// once, so a frame never makes the broker allocate more than it holds.
func decodeProduce(dst *kmsg.ProduceRequest, src []byte) error {
	version := dst.Version
	flexible := version >= 9
	b := kbin.Reader{Src: src}
	if version >= 3 {
		readTransactionID(&b, &dst.TransactionID, flexible)
	}
	dst.Acks = b.Int16()
	dst.TimeoutMillis = b.Int32()
	n := readArrayLen(&b, flexible)
	if !b.Ok() || int64(n)*2 > int64(len(b.Src)) || version >= 13 && int64(n)*18 > int64(len(b.Src)) {
		return kbin.ErrNotEnoughData
	}
	dst.Topics = resize(dst.Topics, n)
	for i := range dst.Topics {
		t := &dst.Topics[i]
		if version <= 12 {
			t.Topic, t.TopicID = readTopic(&b, flexible, t.Topic), [16]byte{}
		} else {
			t.Topic, t.TopicID = "", b.Uuid()
		}
		n := readArrayLen(&b, flexible)
		if !b.Ok() || int64(n)*6 > int64(len(b.Src)) {
			return kbin.ErrNotEnoughData
		}
		t.Partitions = resize(t.Partitions, n)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			p.Partition = b.Int32()
			p.Records = readNullableBytes(&b, flexible)
			p.UnknownTags = readTags(&b, flexible)
		}
		t.UnknownTags = readTags(&b, flexible)
	}
	dst.UnknownTags = readTags(&b, flexible)
	return b.Complete()
}

// resize returns s with n elements (n < 0, a null array, counts as 0),
// reusing its capacity; elements beyond the old length are zero, the
// others keep their nested arrays for reuse and are overwritten field by
// field by the caller.
func resize[T any](s []T, n int32) []T {
	if n <= 0 {
		return s[:0]
	}
	if int(n) > cap(s) {
		ns := make([]T, n)
		copy(ns, s[:cap(s)])
		return ns
	}
	return s[:n]
}

// ClearProduce drops what a decoded request points into its frame (record
// batches, tags), keeping its arrays and topic names for the next
// ParseProduceBody, so that a connection's kept request does not hold a
// released frame buffer.
func ClearProduce(r *kmsg.ProduceRequest) {
	for i := range r.Topics {
		t := &r.Topics[i]
		for j := range t.Partitions {
			t.Partitions[j].Records, t.Partitions[j].UnknownTags = nil, kmsg.Tags{}
		}
		t.UnknownTags = kmsg.Tags{}
	}
	r.UnknownTags = kmsg.Tags{}
}

func readArrayLen(b *kbin.Reader, flexible bool) int32 {
	if flexible {
		return b.CompactArrayLen()
	}
	return b.ArrayLen()
}

// readTopic reads a (compact) string, a topic name: prev, the name the
// same entry had in the connection's previous request, when it is the
// same, else a new string (names outlive the frame).
func readTopic(b *kbin.Reader, flexible bool, prev string) string {
	var l int
	if flexible {
		l = int(b.Uvarint()) - 1
	} else {
		l = int(b.Int16())
	}
	s := b.Span(l)
	if prev == string(s) {
		return prev
	}
	return string(s)
}

func readNullableBytes(b *kbin.Reader, flexible bool) []byte {
	if flexible {
		return b.CompactNullableBytes()
	}
	return b.NullableBytes()
}

// readTransactionID reads a nullable (compact) string into *dst, keeping
// *dst when it already holds the same value.
func readTransactionID(b *kbin.Reader, dst **string, flexible bool) {
	var l int
	if flexible {
		l = int(b.Uvarint()) - 1
	} else {
		l = int(b.Int16())
	}
	if l < 0 {
		*dst = nil
		return
	}
	s := b.Span(l)
	if *dst != nil && **dst == string(s) {
		return
	}
	id := string(s)
	*dst = &id
}

// readTags reads a tagged-field section (flexible versions) as kmsg does:
// empty sections, the only kind clients send, cost nothing.
func readTags(b *kbin.Reader, flexible bool) kmsg.Tags {
	var t kmsg.Tags
	if !flexible {
		return t
	}
	for n := b.Uvarint(); n > 0 && b.Ok(); n-- {
		key, size := b.Uvarint(), b.Uvarint()
		t.Set(key, b.Span(int(size)))
	}
	return t
}
