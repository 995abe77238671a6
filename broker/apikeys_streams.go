package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// streamsAPIs are the streams-group APIs of KIP-1071
// (StreamsGroupHeartbeat, StreamsGroupDescribe), advertised while the
// finalized feature streams.version is 1 or more. StreamsGroupDescribe
// stops at v0: v1 adds topology descriptions, which need Kafka's
// topology-description plugin (KIP-1331) that kbroker does not have.
func streamsAPIs() []api {
	off := func(b *Broker) bool { return !b.streamsGroups() }
	return []api{
		{key: int16(kmsg.StreamsGroupHeartbeat), min: 0, max: kmsgMax(int16(kmsg.StreamsGroupHeartbeat)), handle: typed((*Broker).handleStreamsGroupHeartbeat), hidden: off},
		{key: int16(kmsg.StreamsGroupDescribe), min: 0, max: 0, handle: typed((*Broker).handleStreamsGroupDescribe), hidden: off},
	}
}
