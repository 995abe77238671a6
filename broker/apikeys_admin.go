package broker

// adminAPIs are the metadata and administration APIs: Metadata, topic
// and config administration, DescribeCluster, DescribeLogDirs. Each is
// served from v0 (kfake's floor, below Kafka 4's KIP-896 baseline, because
// kafka-python and kafka-go still send Metadata v0 and v1) to the newest
// version kmsg knows; the handler files list what each version adds.
func adminAPIs() []api {
	return []api{
		{key: 3, min: 0, max: kmsgMax(3), handle: typed((*Broker).handleMetadata)},
		{key: 19, min: 0, max: kmsgMax(19), handle: typed((*Broker).handleCreateTopics)},
		{key: 20, min: 0, max: kmsgMax(20), handle: typed((*Broker).handleDeleteTopics)},
		{key: 32, min: 0, max: kmsgMax(32), handle: typed((*Broker).handleDescribeConfigs)},
		{key: 33, min: 0, max: kmsgMax(33), handle: typed((*Broker).handleAlterConfigs)},
		{key: 35, min: 0, max: kmsgMax(35), handle: typed((*Broker).handleDescribeLogDirs)},
		{key: 37, min: 0, max: kmsgMax(37), handle: typed((*Broker).handleCreatePartitions)},
		{key: 43, min: 0, max: kmsgMax(43), handle: typed((*Broker).handleElectLeaders)},
		{key: 44, min: 0, max: kmsgMax(44), handle: typed((*Broker).handleIncrementalAlterConfigs)},
		{key: 45, min: 0, max: kmsgMax(45), handle: typed((*Broker).handleAlterPartitionAssignments)},
		{key: 46, min: 0, max: kmsgMax(46), handle: typed((*Broker).handleListPartitionReassignments)},
		{key: 48, min: 0, max: kmsgMax(48), handle: typed((*Broker).handleDescribeClientQuotas)},
		{key: 49, min: 0, max: kmsgMax(49), handle: typed((*Broker).handleAlterClientQuotas)},
		{key: 55, min: 0, max: kmsgMax(55), handle: typed((*Broker).handleDescribeQuorum)},
		{key: 57, min: 0, max: kmsgMax(57), handle: typed((*Broker).handleUpdateFeatures)},
		{key: 60, min: 0, max: kmsgMax(60), handle: typed((*Broker).handleDescribeCluster)},
		{key: 74, min: 0, max: kmsgMax(74), handle: typed((*Broker).handleListConfigResources)},
		{key: 75, min: 0, max: kmsgMax(75), handle: typed((*Broker).handleDescribeTopicPartitions)},
	}
}
