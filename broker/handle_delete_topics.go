package broker

// DeleteTopics v0–v6, as Kafka 4's ControllerApis.deleteTopics.
//
// Topics are named in TopicNames (v0–v5) or Topics (v6+, each by name or
// by id). An unknown name is UNKNOWN_TOPIC_OR_PARTITION, an unknown id
// UNKNOWN_TOPIC_ID; a v6 entry with both a name and an id, or neither, is
// INVALID_REQUEST, as is a name or id given twice (answered once) or a
// name whose topic is also asked for by id (then neither is deleted and
// only the name is answered, as in Kafka). The registry refuses internal
// topics (INVALID_REQUEST). A deleted topic's partitions stop being served
// at once; its commit-log entries go with retention (partition.Store).
//
// Deviations from Apache Kafka:
//   - TimeoutMillis is ignored: deletion is synchronous on one node.
//   - Internal topics cannot be deleted (INVALID_REQUEST); Kafka allows it
//     and breaks its coordinators.
//   - Responses keep request order; Kafka shuffles them so that a client
//     without permissions cannot tell absent topics from forbidden ones,
//     which does not arise without an authorizer.
//   - A topic named by id is resolved to its name and deleted by name: if
//     another client deletes it and creates one of the same name in
//     between, the new topic is deleted (the response then shows its id).
//
// Versions: v1 throttle; v2 nothing new; v3 TOPIC_DELETION_DISABLED
// (never here: deletion is always enabled); v4 flexible; v5 error
// messages; v6 topics by id (KIP-516) and ids in the response.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/topic"
)

func (b *Broker) handleDeleteTopics(c *conn, req *kmsg.DeleteTopicsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	targets := deleteTargets(req)
	st := newDeleteState(targets)
	for _, t := range targets {
		if rt, ok := b.deleteOne(c, t, st); ok {
			resp.Topics = append(resp.Topics, rt)
		}
	}
	return respond(resp)
}

// deleteTargets lists the topics of a request in the v6 form.
func deleteTargets(req *kmsg.DeleteTopicsRequest) []kmsg.DeleteTopicsRequestTopic {
	if req.Version >= 6 {
		return req.Topics
	}
	out := make([]kmsg.DeleteTopicsRequestTopic, len(req.TopicNames))
	for i := range req.TopicNames {
		out[i].Default()
		out[i].Topic = &req.TopicNames[i]
	}
	return out
}

// deleteState is what answering one entry needs to know of the others.
type deleteState struct {
	// names and ids count the entries naming a topic by name only and by
	// id only; answered marks duplicates already answered.
	names    map[string]int
	ids      map[topic.ID]int
	answered map[any]bool
}

func newDeleteState(targets []kmsg.DeleteTopicsRequestTopic) *deleteState {
	st := &deleteState{names: map[string]int{}, ids: map[topic.ID]int{}, answered: map[any]bool{}}
	for _, t := range targets {
		switch hasID := t.TopicID != [16]byte{}; {
		case t.Topic != nil && !hasID:
			st.names[*t.Topic]++
		case t.Topic == nil && hasID:
			st.ids[topic.ID(t.TopicID)]++
		}
	}
	return st
}

// firstAnswer reports whether a duplicated name or id is being answered
// for the first time.
func (st *deleteState) firstAnswer(key any) bool {
	first := !st.answered[key]
	st.answered[key] = true
	return first
}

// refuse answers an entry with INVALID_REQUEST and Kafka's message.
func refuse(rt kmsg.DeleteTopicsResponseTopic, detail string) (kmsg.DeleteTopicsResponseTopic, bool) {
	rt.ErrorCode, rt.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(detail)
	return rt, true
}

// deleteOne answers one entry of a request; ok is false for an entry
// whose answer another entry gives.
func (b *Broker) deleteOne(c *conn, t kmsg.DeleteTopicsRequestTopic, st *deleteState) (rt kmsg.DeleteTopicsResponseTopic, ok bool) {
	rt = kmsg.NewDeleteTopicsResponseTopic()
	rt.Topic, rt.TopicID = t.Topic, t.TopicID
	id := topic.ID(t.TopicID)
	switch {
	case t.Topic == nil && id.IsZero():
		return refuse(rt, "Neither topic name nor id were specified.")
	case t.Topic != nil && !id.IsZero():
		return refuse(rt, "You may not specify both topic name and topic id.")
	case t.Topic != nil:
		if st.names[*t.Topic] > 1 {
			if !st.firstAnswer(*t.Topic) {
				return rt, false
			}
			return refuse(rt, "Duplicate topic name.")
		}
		if found, ok := b.topics.Get(*t.Topic); ok && st.ids[found.ID] > 0 {
			// Kafka deletes neither and answers once, for the name.
			rt.TopicID = found.ID
			return refuse(rt, "The provided topic name maps to an ID that was already supplied.")
		}
	default:
		if st.ids[id] > 1 {
			if !st.firstAnswer(id) {
				return rt, false
			}
			return refuse(rt, "Duplicate topic id.")
		}
		found, ok := b.topics.ByID(id)
		if !ok {
			rt.ErrorCode = kerr.UnknownTopicID.Code
			rt.ErrorMessage = kmsg.StringPtr("This server does not host this topic ID.")
			return rt, true
		}
		if st.names[found.Name] > 0 {
			return rt, false // answered with the entry naming it
		}
		rt.Topic = kmsg.StringPtr(found.Name)
	}
	if !b.allowed(c, opDelete, resTopic, *rt.Topic) {
		rt.ErrorCode = kerr.TopicAuthorizationFailed.Code
		if t.Topic == nil && !b.allowed(c, opDescribe, resTopic, *rt.Topic) {
			rt.Topic = nil // named by id: the name stays hidden
		}
		return rt, true
	}
	deleted, err := b.topics.Delete(*rt.Topic)
	if err != nil {
		rt.ErrorCode, rt.ErrorMessage = adminError(c, "delete topic "+*rt.Topic, err)
		return rt, true
	}
	rt.TopicID = deleted.ID
	c.lg.Info("deleted topic", zap.String("topic", deleted.Name), zap.Stringer("id", deleted.ID))
	return rt, true
}
