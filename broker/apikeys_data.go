package broker

// dataAPIs are the APIs that write and locate records: Produce,
// ListOffsets, InitProducerId, DeleteRecords, OffsetForLeaderEpoch.
func dataAPIs() []api {
	return nil
}
