package broker

// FindCoordinator v0–v6, as Kafka 4's KafkaApis.handleFindCoordinatorRequest
// and getCoordinator on a cluster of one broker.
//
// This broker coordinates every group (key type 0) and every transactional
// id (key type 1): the answer is its node id and advertised host and port.
// Kafka answers whatever the key is, the empty string included (the key is
// only hashed to a partition of __consumer_offsets or
// __transaction_state), and so does kbroker: an empty group id is refused
// later, by the group APIs (INVALID_GROUP_ID). Share groups (key type 2,
// v6+, KIP-932) have no coordinator here, which Kafka answers with
// INVALID_REQUEST, as it does type 2 below v6 and any unknown type. An
// error carries node id -1, an empty host and port -1 (Kafka's
// Node.noNode) and Kafka's default message for the code.
//
// Deviations from Apache Kafka:
//   - A successful v1–v3 answer has a null error message; Kafka sends the
//     string "NONE".
//   - A key asked for more than once (v4+) is answered once, at its first
//     place, as Metadata does with topics here: Kafka answers every copy,
//     so a request of repeated short keys gets a response many times its
//     size. Clients ask for distinct keys.
//
// Versions: v1 key type (transactional ids) and error message; v2
// throttle; v3 flexible; v4 batched keys with one result each (KIP-699);
// v5 TRANSACTION_ABORTABLE may be returned (KIP-890, never here); v6 share
// group keys (KIP-932).

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinator key types (Kafka's FindCoordinatorRequest.CoordinatorType).
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

func (b *Broker) handleFindCoordinator(c *conn, req *kmsg.FindCoordinatorRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	// v0 has no key type and always means a group.
	err := coordinatorKeyTypeError(req.CoordinatorType)
	if err == nil && req.CoordinatorType == coordinatorGroup {
		// Kafka creates __consumer_offsets when a group coordinator is
		// first looked up; until it can, the answer is retriable.
		if _, oerr := b.committedOffsets(); oerr != nil {
			err = kerr.CoordinatorNotAvailable
		}
	}
	if err == nil && req.CoordinatorType == coordinatorTransaction {
		// Likewise __transaction_state for a transactional id.
		if _, terr := b.transactionCoordinator(); terr != nil {
			err = kerr.CoordinatorNotAvailable
		}
	}
	host, port := c.advertised()
	node := b.cfg.NodeID
	var code int16
	var msg *string
	if err != nil {
		node, host, port = -1, "", -1
		code, msg = err.Code, kmsg.StringPtr(err.Description)
	}
	// DESCRIBE on the group or transactional id each key names.
	keyAllowed := func(key string) bool {
		if req.CoordinatorType == coordinatorTransaction {
			return b.allowed(c, opDescribe, resTxnID, key)
		}
		return b.allowed(c, opDescribe, resGroup, key)
	}
	// In a simulated cluster each key has its node.
	at := func(key string) (int32, string, int32) {
		if b.nodes == nil || code != 0 {
			return node, host, port
		}
		id := b.nodes.coordinator(req.CoordinatorType, key)
		h, p := b.endpoint(id, c.l.index)
		return id, h, p
	}
	if req.Version < 4 {
		node, host, port := at(req.CoordinatorKey)
		if code == 0 && !keyAllowed(req.CoordinatorKey) {
			authz := kerr.GroupAuthorizationFailed
			if req.CoordinatorType == coordinatorTransaction {
				authz = kerr.TransactionalIDAuthorizationFailed
			}
			node, host, port, code, msg = -1, "", -1, authz.Code, kmsg.StringPtr(authz.Description)
		}
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.NodeID, resp.Host, resp.Port = node, host, port
		return respond(resp)
	}
	resp.Coordinators = make([]kmsg.FindCoordinatorResponseCoordinator, 0, len(req.CoordinatorKeys))
	seen := make(map[string]bool, len(req.CoordinatorKeys))
	for _, key := range req.CoordinatorKeys {
		if seen[key] {
			continue
		}
		seen[key] = true
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		rc.NodeID, rc.Host, rc.Port = at(key)
		rc.ErrorCode, rc.ErrorMessage = code, msg
		if code == 0 && !keyAllowed(key) {
			authz := kerr.GroupAuthorizationFailed
			if req.CoordinatorType == coordinatorTransaction {
				authz = kerr.TransactionalIDAuthorizationFailed
			}
			rc.NodeID, rc.Host, rc.Port = -1, "", -1
			rc.ErrorCode, rc.ErrorMessage = authz.Code, kmsg.StringPtr(authz.Description)
		}
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return respond(resp)
}

// coordinatorKeyTypeError is nil for the key types this broker
// coordinates, else INVALID_REQUEST (share groups and unknown types).
func coordinatorKeyTypeError(keyType int8) *kerr.Error {
	switch keyType {
	case coordinatorGroup, coordinatorTransaction:
		return nil
	}
	return kerr.InvalidRequest
}
