package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// txnAPIs are the transaction APIs and DescribeProducers (InitProducerId is in dataAPIs: it
// serves idempotent producers too). Each handler's file header lists its
// versions and deviations; WriteTxnMarkers starts at v1, as Kafka 4.4's.
func txnAPIs() []api {
	return []api{
		{key: int16(kmsg.AddPartitionsToTxn), min: 0, max: kmsgMax(int16(kmsg.AddPartitionsToTxn)), handle: typed((*Broker).handleAddPartitionsToTxn)},
		{key: int16(kmsg.AddOffsetsToTxn), min: 0, max: kmsgMax(int16(kmsg.AddOffsetsToTxn)), handle: typed((*Broker).handleAddOffsetsToTxn)},
		{key: int16(kmsg.EndTxn), min: 0, max: kmsgMax(int16(kmsg.EndTxn)), handle: typed((*Broker).handleEndTxn)},
		{key: int16(kmsg.TxnOffsetCommit), min: 0, max: kmsgMax(int16(kmsg.TxnOffsetCommit)), handle: typed((*Broker).handleTxnOffsetCommit)},
		{key: int16(kmsg.DescribeTransactions), min: 0, max: kmsgMax(int16(kmsg.DescribeTransactions)), handle: typed((*Broker).handleDescribeTransactions)},
		{key: int16(kmsg.DescribeProducers), min: 0, max: kmsgMax(int16(kmsg.DescribeProducers)), handle: typed((*Broker).handleDescribeProducers)},
		{key: int16(kmsg.WriteTxnMarkers), min: 1, max: kmsgMax(int16(kmsg.WriteTxnMarkers)), handle: typed((*Broker).handleWriteTxnMarkers)},
		{key: int16(kmsg.ListTransactions), min: 0, max: kmsgMax(int16(kmsg.ListTransactions)), handle: typed((*Broker).handleListTransactions)},
	}
}
