package integration

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareRecordsSteps are a share group's happy path: the group reads from
// the earliest record (a GROUP config), three records are produced, a
// member joins, a share fetch opens a session and acquires them (repeated,
// in new session epochs, until Kafka has initialized the share-partition
// asynchronously), they are accepted, a last fetch finds nothing, and the
// member leaves. The epochs of the join are not compared (the share
// sequence does).
func shareRecordsSteps(run string) []diffStep {
	topic, group := "sr-"+run, "srg-"+run
	member := "SrMemberw9cxQ3m5sX2yqvE"
	// fetch sends the side's next share session epoch (diffSide.fetchSession
	// counts them, from 0, which opens the session).
	fetch := func(s *diffSide, v int16) kmsg.Request {
		r := shareFetchReq(group, member, topic, s.fetchSession)(s, v)
		s.fetchSession++
		return r
	}
	acquired := func(resp kmsg.Response) bool {
		r := resp.(*kmsg.ShareFetchResponse)
		return r.ErrorCode == 0 && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 &&
			len(r.Topics[0].Partitions[0].AcquiredRecords) > 0
	}
	return append(append(createAndAwait(topic, 1), awaitGroupReady(group)...), []diffStep{
		// From the earliest record, so that the records need not wait
		// for Kafka's asynchronous initialization of the share-partition.
		{name: "read from the earliest record", req: func(s *diffSide, v int16) kmsg.Request {
			r := kmsg.NewPtrIncrementalAlterConfigsRequest()
			res := kmsg.NewIncrementalAlterConfigsRequestResource()
			res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = "share.auto.offset.reset", kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr("earliest")
			res.Configs = append(res.Configs, c)
			r.Resources = append(r.Resources, res)
			return r
		}, versions: newest},
		{name: "produce 3 records", req: produceReq(topic, 0, -1, plainBatch("a", "b", "c")), versions: newest,
			until: func(resp kmsg.Response) bool {
				return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode != kerr.NotLeaderForPartition.Code
			}},
		{name: "join", req: shareHeartbeatReq(group, member, 0, topic), after: func(s *diffSide, resp kmsg.Response) {
			rememberShareEpoch(s, resp)
			s.fetchSession = 0
		}, versions: newest, ignore: regexp.MustCompile(`(Assignment|MemberEpoch|HeartbeatIntervalMillis)(\.|$)`)},
		// A share fetch does not need the member to have heard of its
		// assignment; Kafka acquires records once it has initialized the
		// share-partition, and until then answers without them.
		{name: "share fetch acquires them", req: fetch, versions: newest, until: acquired},
		{name: "accept them", req: func(s *diffSide, v int16) kmsg.Request {
			r := shareAckReq(group, member, topic, s.fetchSession, 0, 2, 1)(s, v)
			s.fetchSession++
			return r
		}, versions: newest},
		{name: "share fetch, nothing left", req: fetch, versions: newest},
		{name: "describe share offsets", req: describeShareOffsetsReq(group, topic), versions: newest,
			ignore: regexp.MustCompile(`(StartOffset|Lag)$`)},
		{name: "leave", req: shareHeartbeatReq(group, member, -1), versions: newest},
	}...)
}
