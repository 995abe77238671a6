package integration

import (
	"encoding/binary"
	"hash/crc32"
	"regexp"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceEdgeSteps are the corners of Produce, ListOffsets and fetch
// sessions a client can run into: invalid acks, a corrupt batch, the
// old message format, an internal topic, a record without a key on a
// compacted topic, timestamps outside message.timestamp.before.max.ms,
// a transactional batch outside any transaction, offsets by timestamp and
// the special timestamps, and a fetch session's open, incremental, wrong
// epoch, unknown id and close.
func produceEdgeSteps(run string) []diffStep {
	plain, compacted, timed := "pe-"+run, "pc-"+run, "pt-"+run
	// One timestamp for both brokers, within the timed topic's hour.
	now := time.Now().Truncate(time.Minute).UnixMilli()
	hourly := map[string]string{"message.timestamp.before.max.ms": "3600000", "message.timestamp.after.max.ms": "3600000"}
	batch := func(b batchSpec, values ...string) func(*diffSide) []byte {
		return func(*diffSide) []byte { return b.encode(values...) }
	}
	noPID := batchSpec{pid: -1, ts: now}
	topicConfigs := regexp.MustCompile(`Topics\.0\.Configs\.`)
	listAt := func(topic string, ts int64) func(*diffSide, int16) kmsg.Request { return listOffsetsReq(topic, 0, ts) }
	session := func(id func(*diffSide) int32, epoch int32, topics bool) func(*diffSide, int16) kmsg.Request {
		return func(s *diffSide, v int16) kmsg.Request {
			r := fetchReq(plain, 0, 0)(s, v).(*kmsg.FetchRequest)
			r.SessionID, r.SessionEpoch = id(s), epoch
			if !topics {
				r.Topics = nil
			}
			return r
		}
	}
	own := func(s *diffSide) int32 { return s.fetchSession }
	return []diffStep{
		{name: "create", req: createTopicsReq(plain, 1, nil, false), versions: newest, ignore: topicConfigs},
		{name: "create compacted", req: createTopicsReq(compacted, 1, map[string]string{"cleanup.policy": "compact"}, false),
			versions: newest, ignore: topicConfigs},
		{name: "create with an hour's timestamps", req: createTopicsReq(timed, 1, hourly, false), versions: newest, ignore: topicConfigs},
		awaitTopic(plain, 1),
		awaitTopic(compacted, 1),
		awaitTopic(timed, 1),
		{name: "init producer id", req: initProducerIDReq(nil), after: rememberProducer, versions: newest,
			until: func(resp kmsg.Response) bool { return resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 }},
		// Kafka may take a new partition's leadership a moment after its
		// metadata shows it.
		{name: "produce", req: produceReq(plain, 0, -1, batch(noPID, "a", "b")), versions: newest,
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode == 0
			}},
		{name: "produce with acks 2", req: produceReq(plain, 0, 2, batch(noPID, "x"))},
		{name: "produce a batch with a bad CRC", req: produceReq(plain, 0, -1, func(*diffSide) []byte {
			b := noPID.encode("x")
			b[len(b)-1] ^= 0xff
			return b
		})},
		{name: "produce the old message format", req: produceReq(plain, 0, -1, func(*diffSide) []byte { return magicOneMessage(now, "old") })},
		{name: "produce to an internal topic", req: produceReq("__consumer_offsets", 0, -1, batch(noPID, "x"))},
		{name: "produce without a key to a compacted topic", req: produceReq(compacted, 0, -1, batch(noPID, "x")),
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 6 // NOT_LEADER_OR_FOLLOWER
			}},
		{name: "produce with a key to a compacted topic", req: produceReq(compacted, 0, -1, batch(batchSpec{pid: -1, ts: now, key: []byte("k")}, "x"))},
		{name: "produce two hours old", req: produceReq(timed, 0, -1, batch(batchSpec{pid: -1, ts: now - 2*3600_000}, "x")),
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != 6 // NOT_LEADER_OR_FOLLOWER
			}},
		{name: "produce two hours ahead", req: produceReq(timed, 0, -1, batch(batchSpec{pid: -1, ts: now + 2*3600_000}, "x"))},
		{name: "produce within the hour", req: produceReq(timed, 0, -1, batch(noPID, "x", "y")), versions: newest},
		{name: "produce a transactional batch outside a transaction", req: produceReq(plain, 0, -1, func(s *diffSide) []byte {
			return batchSpec{pid: s.producerID, epoch: s.epoch, ts: now, txn: true}.encode("t")
		}), versions: newest},

		{name: "list offsets by timestamp", req: listAt(timed, now)},
		{name: "list offsets after every timestamp", req: listAt(timed, now+1)},
		{name: "list offsets of the largest timestamp", req: listAt(timed, -3), versions: newest},
		{name: "list offsets earliest local", req: listAt(timed, -4), versions: newest},
		{name: "list offsets latest tiered", req: listAt(timed, -5), versions: newest},

		{name: "open a fetch session", req: session(func(*diffSide) int32 { return 0 }, 0, true), versions: newest,
			after: func(s *diffSide, resp kmsg.Response) { s.fetchSession = resp.(*kmsg.FetchResponse).SessionID }},
		{name: "incremental fetch, nothing new", req: session(own, 1, false), versions: newest},
		{name: "incremental fetch at a wrong epoch", req: session(own, 5, false), versions: newest},
		{name: "fetch in an unknown session", req: session(func(*diffSide) int32 { return 987654 }, 1, false), versions: newest},
		{name: "close the fetch session", req: session(own, -1, false), versions: newest},
	}
}

// magicOneMessage is a message set of one magic-1 message (the format
// before 0.11) at timestamp ts.
func magicOneMessage(ts int64, value string) []byte {
	var msg []byte
	msg = append(msg, 1, 0) // magic, attributes
	msg = binary.BigEndian.AppendUint64(msg, uint64(ts))
	msg = binary.BigEndian.AppendUint32(msg, 0xffffffff) // null key
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(value)))
	msg = append(msg, value...)
	var out []byte
	out = binary.BigEndian.AppendUint64(out, 0) // offset
	out = binary.BigEndian.AppendUint32(out, uint32(4+len(msg)))
	out = binary.BigEndian.AppendUint32(out, crc32.ChecksumIEEE(msg))
	return append(out, msg...)
}
