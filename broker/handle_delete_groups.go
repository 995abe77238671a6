package broker

// DeleteGroups (key 42), v0–newest: deletes Empty groups, classic or
// consumer (KIP-848), and their committed offsets. As in Kafka: a group
// with members is NON_EMPTY_GROUP,
// a missing one GROUP_ID_NOT_FOUND (error messages from v3); the response waits until the
// tombstones in __consumer_offsets are durable. The same group named twice
// is answered twice. Share groups (KIP-932) are deleted with their
// share-partition states, the answer waiting for those tombstones in
// __share_group_state.

import (
	"errors"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleDeleteGroups(c *conn, req *kmsg.DeleteGroupsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	resp.Groups = make([]kmsg.DeleteGroupsResponseGroup, len(req.Groups))
	var deleted, shareDel []int
	for i, g := range req.Groups {
		resp.Groups[i].Group = g
		if !b.allowed(c, opDelete, resGroup, g) {
			resp.Groups[i].ErrorCode = kerr.GroupAuthorizationFailed.Code
			continue
		}
		if b.shares.Has(g) {
			shareDel = append(shareDel, i)
			continue
		}
		if err := b.deleteGroup(g); err != nil {
			resp.Groups[i].ErrorCode = errorCode(err)
			if req.Version >= 3 {
				resp.Groups[i].ErrorMessage = errorMessage(err)
			}
			continue
		}
		deleted = append(deleted, i)
	}
	store, _ := b.groupOffsets(false)
	if store == nil {
		deleted = nil // no offsets topic: nothing was committed
	}
	if len(deleted)+len(shareDel) == 0 {
		return respond(resp)
	}
	ready := make(chan struct{})
	var left atomic.Int32
	left.Store(int32(len(deleted) + len(shareDel)))
	finish := func() {
		if left.Add(-1) == 0 {
			close(ready)
		}
	}
	for _, i := range deleted {
		slot := &resp.Groups[i]
		store.DeleteGroup(slot.Group, func(err error) {
			slot.ErrorCode = coordinatorWriteCode(err)
			finish()
		})
	}
	for _, i := range shareDel {
		slot := &resp.Groups[i]
		version := req.Version
		b.shares.Delete(slot.Group, func(err error) {
			if errors.Is(err, kerr.NonEmptyGroup) || errors.Is(err, kerr.GroupIDNotFound) {
				slot.ErrorCode = errorCode(err)
				if version >= 3 {
					slot.ErrorMessage = errorMessage(err)
				}
			} else {
				slot.ErrorCode = coordinatorWriteCode(err)
			}
			finish()
		})
	}
	return result{resp: resp, ready: ready}, nil
}
