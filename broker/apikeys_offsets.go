package broker

import "github.com/twmb/franz-go/pkg/kmsg"

// offsetAPIs are the committed-offset APIs of consumer groups:
// OffsetCommit, OffsetFetch, OffsetDelete, and DeleteGroups (which deletes
// a group's offsets with it). Each handler's file header lists its
// versions and deviations.
func offsetAPIs() []api {
	return []api{
		{key: int16(kmsg.OffsetCommit), min: 0, max: kmsgMax(int16(kmsg.OffsetCommit)), handle: typed((*Broker).handleOffsetCommit)},
		{key: int16(kmsg.OffsetFetch), min: 0, max: kmsgMax(int16(kmsg.OffsetFetch)), handle: typed((*Broker).handleOffsetFetch)},
		{key: int16(kmsg.OffsetDelete), min: 0, max: kmsgMax(int16(kmsg.OffsetDelete)), handle: typed((*Broker).handleOffsetDelete)},
		{key: int16(kmsg.DeleteGroups), min: 0, max: kmsgMax(int16(kmsg.DeleteGroups)), handle: typed((*Broker).handleDeleteGroups)},
	}
}
