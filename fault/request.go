package fault

import "github.com/twmb/franz-go/pkg/kmsg"

// Request describes one request for matching: its header, the connection
// it came on and its decoded body.
type Request struct {
	// Key and Version are the request header's API key and version.
	Key, Version int16
	// ClientID is the header's client id.
	ClientID string
	// Listener is the listen address of the connection's listener.
	Listener string
	// Connection is the client's address as the broker sees it.
	Connection string
	// Body is the decoded request.
	Body kmsg.Request
	// TopicName resolves a topic id (Fetch v13+, Metadata v10+) to the
	// topic's name, or "" if unknown. Nil leaves ids unresolved.
	TopicName func(id [16]byte) string
}

// names is what a request names: topic partitions, groups and
// transactional ids.
type names struct {
	// parts are the topic partitions named; partition -1 names a whole
	// topic (Metadata, CreateTopics).
	parts []TopicPartition
	// allTopics is set for a request about every topic (Metadata with
	// a null topic list).
	allTopics bool
	groups    []string
	txns      []string
}

// TopicPartition is one partition of a topic; Partition -1 stands for the
// whole topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

func (n *names) part(topic string, p int32) {
	n.parts = append(n.parts, TopicPartition{topic, p})
}

// describe lists what r names. Requests it does not know name nothing,
// so a rule filtering on topic, group or transactional id never matches
// them.
func describe(r *Request) names {
	var n names
	switch b := r.Body.(type) {
	case *kmsg.ProduceRequest:
		if b.TransactionID != nil {
			n.txns = append(n.txns, *b.TransactionID)
		}
		for _, t := range b.Topics {
			for _, p := range t.Partitions {
				n.part(r.nameOr(t.Topic, t.TopicID), p.Partition)
			}
		}
	case *kmsg.FetchRequest:
		for _, t := range b.Topics {
			name := t.Topic
			if b.Version >= 13 {
				name = r.topicName(t.TopicID)
			}
			for _, p := range t.Partitions {
				n.part(name, p.Partition)
			}
		}
	case *kmsg.ListOffsetsRequest:
		for _, t := range b.Topics {
			for _, p := range t.Partitions {
				n.part(t.Topic, p.Partition)
			}
		}
	case *kmsg.MetadataRequest:
		n.allTopics = b.Topics == nil || (b.Version == 0 && len(b.Topics) == 0)
		for _, t := range b.Topics {
			switch {
			case t.Topic != nil:
				n.part(*t.Topic, -1)
			default:
				n.part(r.topicName(t.TopicID), -1)
			}
		}
	case *kmsg.OffsetForLeaderEpochRequest:
		for _, t := range b.Topics {
			for _, p := range t.Partitions {
				n.part(t.Topic, p.Partition)
			}
		}
	case *kmsg.DeleteRecordsRequest:
		for _, t := range b.Topics {
			for _, p := range t.Partitions {
				n.part(t.Topic, p.Partition)
			}
		}
	case *kmsg.CreateTopicsRequest:
		for _, t := range b.Topics {
			n.part(t.Topic, -1)
		}
	case *kmsg.DeleteTopicsRequest:
		for _, t := range b.TopicNames {
			n.part(t, -1)
		}
		for _, t := range b.Topics {
			if t.Topic != nil {
				n.part(*t.Topic, -1)
			} else {
				n.part(r.topicName(t.TopicID), -1)
			}
		}
	case *kmsg.CreatePartitionsRequest:
		for _, t := range b.Topics {
			n.part(t.Topic, -1)
		}
	case *kmsg.DescribeProducersRequest:
		for _, t := range b.Topics {
			for _, p := range t.Partitions {
				n.part(t.Topic, p)
			}
		}
	case *kmsg.OffsetCommitRequest:
		n.groups = append(n.groups, b.Group)
		for _, t := range b.Topics {
			for _, p := range t.Partitions {
				n.part(r.nameOr(t.Topic, t.TopicID), p.Partition)
			}
		}
	case *kmsg.OffsetFetchRequest:
		if b.Version < 8 {
			n.groups = append(n.groups, b.Group)
			for _, t := range b.Topics {
				for _, p := range t.Partitions {
					n.part(t.Topic, p)
				}
			}
		}
		for _, g := range b.Groups {
			n.groups = append(n.groups, g.Group)
			for _, t := range g.Topics {
				for _, p := range t.Partitions {
					n.part(r.nameOr(t.Topic, t.TopicID), p)
				}
			}
		}
	case *kmsg.OffsetDeleteRequest:
		n.groups = append(n.groups, b.Group)
		for _, t := range b.Topics {
			for _, p := range t.Partitions {
				n.part(t.Topic, p.Partition)
			}
		}
	case *kmsg.FindCoordinatorRequest:
		keys := b.CoordinatorKeys
		if b.Version < 4 {
			keys = []string{b.CoordinatorKey}
		}
		if b.CoordinatorType == 1 {
			n.txns = append(n.txns, keys...)
		} else {
			n.groups = append(n.groups, keys...)
		}
	case *kmsg.JoinGroupRequest:
		n.groups = append(n.groups, b.Group)
	case *kmsg.SyncGroupRequest:
		n.groups = append(n.groups, b.Group)
	case *kmsg.HeartbeatRequest:
		n.groups = append(n.groups, b.Group)
	case *kmsg.LeaveGroupRequest:
		n.groups = append(n.groups, b.Group)
	case *kmsg.DescribeGroupsRequest:
		n.groups = append(n.groups, b.Groups...)
	case *kmsg.DeleteGroupsRequest:
		n.groups = append(n.groups, b.Groups...)
	case *kmsg.ConsumerGroupHeartbeatRequest:
		n.groups = append(n.groups, b.Group)
	case *kmsg.ConsumerGroupDescribeRequest:
		n.groups = append(n.groups, b.Groups...)
	case *kmsg.InitProducerIDRequest:
		if b.TransactionalID != nil {
			n.txns = append(n.txns, *b.TransactionalID)
		}
	case *kmsg.AddPartitionsToTxnRequest:
		if b.Version < 4 {
			n.txns = append(n.txns, b.TransactionalID)
			for _, t := range b.Topics {
				for _, p := range t.Partitions {
					n.part(t.Topic, p)
				}
			}
		}
		for _, tx := range b.Transactions {
			n.txns = append(n.txns, tx.TransactionalID)
			for _, t := range tx.Topics {
				for _, p := range t.Partitions {
					n.part(t.Topic, p)
				}
			}
		}
	case *kmsg.AddOffsetsToTxnRequest:
		n.txns = append(n.txns, b.TransactionalID)
		n.groups = append(n.groups, b.Group)
	case *kmsg.EndTxnRequest:
		n.txns = append(n.txns, b.TransactionalID)
	case *kmsg.TxnOffsetCommitRequest:
		n.txns = append(n.txns, b.TransactionalID)
		n.groups = append(n.groups, b.Group)
		for _, t := range b.Topics {
			for _, p := range t.Partitions {
				n.part(r.nameOr(t.Topic, t.TopicID), p.Partition)
			}
		}
	case *kmsg.DescribeTransactionsRequest:
		n.txns = append(n.txns, b.TransactionalIDs...)
	}
	return n
}

func (r *Request) topicName(id [16]byte) string {
	if r.TopicName == nil {
		return ""
	}
	return r.TopicName(id)
}

// nameOr is name, or for requests naming topics by id (name empty), the
// name of topic id.
func (r *Request) nameOr(name string, id [16]byte) string {
	if name != "" || id == [16]byte{} {
		return name
	}
	return r.topicName(id)
}
