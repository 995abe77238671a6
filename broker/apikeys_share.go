package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// shareAPIs are the share-group APIs (KIP-932): membership
// (ShareGroupHeartbeat, ShareGroupDescribe), consumption (ShareFetch,
// ShareAcknowledge) and the share-group offsets admin keys. They are
// served while the share.version feature is at 1 or above (shareGroups);
// below, they leave ApiVersions and answer UNSUPPORTED_VERSION. Version 0
// of the first four was Kafka 4.0's early access, removed in 4.1, and is
// not served. Each handler's file header lists its versions.
func shareAPIs() []api {
	off := func(b *Broker) bool { return !b.shareGroups() }
	return []api{
		{key: int16(kmsg.ShareGroupHeartbeat), min: 1, max: kmsgMax(int16(kmsg.ShareGroupHeartbeat)), handle: typed((*Broker).handleShareGroupHeartbeat), hidden: off},
		{key: int16(kmsg.ShareGroupDescribe), min: 1, max: kmsgMax(int16(kmsg.ShareGroupDescribe)), handle: typed((*Broker).handleShareGroupDescribe), hidden: off},
		{key: int16(kmsg.ShareFetch), min: 1, max: kmsgMax(int16(kmsg.ShareFetch)), handle: typed((*Broker).handleShareFetch), hidden: off},
		{key: int16(kmsg.ShareAcknowledge), min: 1, max: kmsgMax(int16(kmsg.ShareAcknowledge)), handle: typed((*Broker).handleShareAcknowledge), hidden: off},
		{key: int16(kmsg.DescribeShareGroupOffsets), min: 0, max: kmsgMax(int16(kmsg.DescribeShareGroupOffsets)), handle: typed((*Broker).handleDescribeShareGroupOffsets), hidden: off},
		{key: int16(kmsg.AlterShareGroupOffsets), min: 0, max: kmsgMax(int16(kmsg.AlterShareGroupOffsets)), handle: typed((*Broker).handleAlterShareGroupOffsets), hidden: off},
		{key: int16(kmsg.DeleteShareGroupOffsets), min: 0, max: kmsgMax(int16(kmsg.DeleteShareGroupOffsets)), handle: typed((*Broker).handleDeleteShareGroupOffsets), hidden: off},
	}
}
