package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// dataAPIs are the APIs that write and locate records: Produce,
// ListOffsets, InitProducerId, DeleteRecords, OffsetForLeaderEpoch.
// Each handler's file header lists its versions and deviations.
func dataAPIs() []api {
	return []api{
		{key: int16(kmsg.Produce), min: 3, max: kmsgMax(int16(kmsg.Produce)), handle: typed((*Broker).handleProduce), listedFromV0: true},
		{key: int16(kmsg.ListOffsets), min: 1, max: kmsgMax(int16(kmsg.ListOffsets)), handle: typed((*Broker).handleListOffsets)},
		{key: int16(kmsg.DeleteRecords), min: 0, max: kmsgMax(int16(kmsg.DeleteRecords)), handle: typed((*Broker).handleDeleteRecords)},
		{key: int16(kmsg.InitProducerID), min: 0, max: kmsgMax(int16(kmsg.InitProducerID)), handle: typed((*Broker).handleInitProducerID)},
		{key: int16(kmsg.OffsetForLeaderEpoch), min: 0, max: kmsgMax(int16(kmsg.OffsetForLeaderEpoch)), handle: typed((*Broker).handleOffsetForLeaderEpoch)},
	}
}
