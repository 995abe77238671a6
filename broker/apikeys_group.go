package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// groupAPIs are the consumer-group APIs: FindCoordinator, the classic
// membership protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), group
// administration (ListGroups, DescribeGroups, DeleteGroups) and committed
// offsets (OffsetCommit, OffsetFetch, OffsetDelete), and the consumer
// group protocol of KIP-848 (ConsumerGroupHeartbeat, ConsumerGroupDescribe)
// when group.coordinator.rebalance.protocols lists consumer. Each
// handler's file header lists its versions and deviations.
func groupAPIs() []api {
	consumerOff := func(b *Broker) bool { return !b.consumerProtocol() }
	return []api{
		{key: int16(kmsg.FindCoordinator), min: 0, max: kmsgMax(int16(kmsg.FindCoordinator)), handle: typed((*Broker).handleFindCoordinator)},
		{key: int16(kmsg.JoinGroup), min: 0, max: kmsgMax(int16(kmsg.JoinGroup)), handle: typed((*Broker).handleJoinGroup)},
		{key: int16(kmsg.Heartbeat), min: 0, max: kmsgMax(int16(kmsg.Heartbeat)), handle: typed((*Broker).handleHeartbeat)},
		{key: int16(kmsg.LeaveGroup), min: 0, max: kmsgMax(int16(kmsg.LeaveGroup)), handle: typed((*Broker).handleLeaveGroup)},
		{key: int16(kmsg.SyncGroup), min: 0, max: kmsgMax(int16(kmsg.SyncGroup)), handle: typed((*Broker).handleSyncGroup)},
		{key: int16(kmsg.DescribeGroups), min: 0, max: kmsgMax(int16(kmsg.DescribeGroups)), handle: typed((*Broker).handleDescribeGroups)},
		{key: int16(kmsg.ListGroups), min: 0, max: kmsgMax(int16(kmsg.ListGroups)), handle: typed((*Broker).handleListGroups)},
		{key: int16(kmsg.ConsumerGroupHeartbeat), min: 0, max: kmsgMax(int16(kmsg.ConsumerGroupHeartbeat)), handle: typed((*Broker).handleConsumerGroupHeartbeat), hidden: consumerOff},
		{key: int16(kmsg.ConsumerGroupDescribe), min: 0, max: kmsgMax(int16(kmsg.ConsumerGroupDescribe)), handle: typed((*Broker).handleConsumerGroupDescribe), hidden: consumerOff},
	}
}
