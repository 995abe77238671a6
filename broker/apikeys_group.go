package broker

// groupAPIs are the consumer-group APIs: FindCoordinator, the classic
// membership protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup), group
// administration (ListGroups, DescribeGroups, DeleteGroups) and committed
// offsets (OffsetCommit, OffsetFetch, OffsetDelete). Each handler's file
// header lists its versions and deviations.
func groupAPIs() []api {
	return []api{}
}
