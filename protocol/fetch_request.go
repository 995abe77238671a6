package protocol

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ParseFetchBody is ParseBody for a Fetch request (key 1), decoded into
// dst, a request a connection keeps from one fetch to the next: its topic,
// partition and forgotten-topic arrays are reused, and topic names, the
// rack and the cluster id equal to dst's previous ones are kept rather
// than allocated again, so that a consumer's steady stream of fetches
// allocates nothing to decode (kmsg's decoder makes a new request, and new
// arrays per topic, for every fetch: a tenth of what the broker allocated
// per fetch end to end). The result is what kmsg's ReadFrom gives
// (FuzzParseFetch compares the two), except that an empty array may keep
// its old capacity where kmsg leaves nil. Nothing of the result aliases
// rest but unknown tagged fields, which no client sends (kept as kmsg
// keeps them); ClearFetch drops them.
func ParseFetchBody(h Header, rest []byte, dst *kmsg.FetchRequest) error {
	return parseKept(h, rest, dst, 1, "Fetch", decodeFetch)
}

// decodeFetch decodes a Fetch body of dst.Version into dst. Fields a
// version lacks get kmsg's defaults; the bounds on array counts are
// kmsg's (FetchRequest.readFrom), so a frame never makes the broker
// allocate more than it holds.
func decodeFetch(dst *kmsg.FetchRequest, src []byte) error {
	version := dst.Version
	flexible := version >= 12
	b := kbin.Reader{Src: src}
	dst.ReplicaID, dst.MaxBytes, dst.IsolationLevel, dst.SessionID, dst.SessionEpoch = -1, 2147483647, 0, 0, -1
	dst.ReplicaState = kmsg.FetchRequestReplicaState{ID: -1, Epoch: -1}
	if version <= 14 {
		dst.ReplicaID = b.Int32()
	}
	dst.MaxWaitMillis = b.Int32()
	dst.MinBytes = b.Int32()
	if version >= 3 {
		dst.MaxBytes = b.Int32()
	}
	if version >= 4 {
		dst.IsolationLevel = b.Int8()
	}
	if version >= 7 {
		dst.SessionID = b.Int32()
		dst.SessionEpoch = b.Int32()
	}
	n := readArrayLen(&b, flexible)
	if !b.Ok() || int64(n)*2 > int64(len(b.Src)) || version >= 13 && int64(n)*18 > int64(len(b.Src)) {
		return kbin.ErrNotEnoughData
	}
	dst.Topics = resize(dst.Topics, n)
	for i := range dst.Topics {
		t := &dst.Topics[i]
		t.Topic, t.TopicID = readFetchTopic(&b, version, flexible, t.Topic)
		n := readArrayLen(&b, flexible)
		if !b.Ok() || int64(n)*16 > int64(len(b.Src)) || version >= 12 && int64(n)*32 > int64(len(b.Src)) {
			return kbin.ErrNotEnoughData
		}
		t.Partitions = resize(t.Partitions, n)
		for j := range t.Partitions {
			if err := decodeFetchPartition(&b, version, &t.Partitions[j]); err != nil {
				return err
			}
		}
		t.UnknownTags = readTags(&b, flexible)
	}
	dst.ForgottenTopics = dst.ForgottenTopics[:0]
	if version >= 7 {
		n := readArrayLen(&b, flexible)
		if !b.Ok() || int64(n)*2 > int64(len(b.Src)) || version >= 13 && int64(n)*18 > int64(len(b.Src)) {
			return kbin.ErrNotEnoughData
		}
		dst.ForgottenTopics = resize(dst.ForgottenTopics, n)
		for i := range dst.ForgottenTopics {
			t := &dst.ForgottenTopics[i]
			t.Topic, t.TopicID = readFetchTopic(&b, version, flexible, t.Topic)
			n := readArrayLen(&b, flexible)
			if !b.Ok() || int64(n)*4 > int64(len(b.Src)) {
				return kbin.ErrNotEnoughData
			}
			t.Partitions = resize(t.Partitions, n)
			for j := range t.Partitions {
				t.Partitions[j] = b.Int32()
			}
			t.UnknownTags = readTags(&b, flexible)
		}
	}
	if version >= 11 {
		dst.Rack = readTopic(&b, flexible, dst.Rack)
	} else {
		dst.Rack = ""
	}
	clusterID := dst.ClusterID
	dst.ClusterID, dst.UnknownTags = nil, kmsg.Tags{}
	if flexible {
		for n := b.Uvarint(); n > 0 && b.Ok(); n-- {
			key := b.Uvarint()
			tb := kbin.Reader{Src: b.Span(int(b.Uvarint()))}
			switch key {
			case 0:
				dst.ClusterID = clusterID
				readTransactionID(&tb, &dst.ClusterID, true)
			case 1:
				dst.ReplicaState = kmsg.FetchRequestReplicaState{ID: tb.Int32(), Epoch: tb.Int64()}
				dst.ReplicaState.UnknownTags = readTags(&tb, true)
			default:
				dst.UnknownTags.Set(key, tb.Src)
				continue
			}
			if err := tb.Complete(); err != nil {
				return err
			}
		}
	}
	return b.Complete()
}

// decodeFetchPartition decodes one partition of a Fetch topic into p,
// overwriting every field.
func decodeFetchPartition(b *kbin.Reader, version int16, p *kmsg.FetchRequestTopicPartition) error {
	*p = kmsg.FetchRequestTopicPartition{CurrentLeaderEpoch: -1, LastFetchedEpoch: -1, LogStartOffset: -1,
		HighWatermark: 9223372036854775807}
	p.Partition = b.Int32()
	if version >= 9 {
		p.CurrentLeaderEpoch = b.Int32()
	}
	p.FetchOffset = b.Int64()
	if version >= 12 {
		p.LastFetchedEpoch = b.Int32()
	}
	if version >= 5 {
		p.LogStartOffset = b.Int64()
	}
	p.PartitionMaxBytes = b.Int32()
	if version < 12 {
		return nil
	}
	for n := b.Uvarint(); n > 0 && b.Ok(); n-- {
		key := b.Uvarint()
		tb := kbin.Reader{Src: b.Span(int(b.Uvarint()))}
		switch key {
		case 0:
			p.ReplicaDirectoryID = tb.Uuid()
		case 1:
			p.HighWatermark = tb.Int64()
		default:
			p.UnknownTags.Set(key, tb.Src)
			continue
		}
		if err := tb.Complete(); err != nil {
			return err
		}
	}
	return nil
}

// ClearFetch drops what a decoded Fetch request may point into its frame
// (unknown tagged fields), keeping its arrays and names for the next
// ParseFetchBody.
func ClearFetch(r *kmsg.FetchRequest) {
	for i := range r.Topics {
		t := &r.Topics[i]
		for j := range t.Partitions {
			t.Partitions[j].UnknownTags = kmsg.Tags{}
		}
		t.UnknownTags = kmsg.Tags{}
	}
	for i := range r.ForgottenTopics {
		r.ForgottenTopics[i].UnknownTags = kmsg.Tags{}
	}
	r.ReplicaState.UnknownTags = kmsg.Tags{}
	r.UnknownTags = kmsg.Tags{}
}

// readFetchTopic reads a fetched or forgotten topic's name (up to v12,
// keeping prev's string when equal) or its id (v13 on, the name empty).
func readFetchTopic(b *kbin.Reader, version int16, flexible bool, prev string) (string, [16]byte) {
	if version <= 12 {
		return readTopic(b, flexible, prev), [16]byte{}
	}
	return "", b.Uuid()
}
