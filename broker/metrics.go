package broker

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/metric"
)

// requestMetrics are the broker's request counters and latency
// histograms, one set per API key, made when the broker is built so that
// the connection loop only indexes an array and adds: no label lookup, no
// allocation (Kafka's kafka.network:type=RequestMetrics). The admin
// listener reads them at scrape time (Broker.RequestMetrics).
type requestMetrics struct {
	apis [maxAPIKey + 1]*APIMetrics
}

// errorSlots is the number of error codes counted per API key: codes -1
// (UNKNOWN_SERVER_ERROR) to errorSlots-2; a larger code is counted in the
// last slot.
const errorSlots = 160

// APIMetrics are the counters of one API key.
type APIMetrics struct {
	// Key is the API key.
	Key int16
	// Requests counts requests by version (index = version).
	Requests []atomic.Uint64
	// errors counts error codes in responses (index = code+1); see
	// EachError.
	errors [errorSlots]atomic.Uint64
	// Queue is the time from the end of handling to the start of sending
	// the response: a produce waiting for its group commit, a fetch parked
	// for data, a response behind an earlier one on its connection
	// (Kafka's RemoteTimeMs plus ResponseQueueTimeMs), in seconds.
	Queue *metric.Histogram
	// Handle is the time the handler ran on the connection's reader, from
	// the decoded request to its (possibly pending) result (Kafka's
	// LocalTimeMs).
	Handle *metric.Histogram
	// Send is the time to write the response to the socket (Kafka's
	// ResponseSendTimeMs).
	Send *metric.Histogram
}

func newRequestMetrics(table []api) *requestMetrics {
	m := &requestMetrics{}
	for _, a := range table {
		m.apis[a.key] = &APIMetrics{
			Key:      a.key,
			Requests: make([]atomic.Uint64, a.max+1),
			Queue:    metric.NewHistogram(metric.LatencyBounds),
			Handle:   metric.NewHistogram(metric.LatencyBounds),
			Send:     metric.NewHistogram(metric.LatencyBounds),
		}
	}
	return m
}

// request counts a request; a is never nil for a key in the table.
func (m *requestMetrics) request(key, version int16) {
	if a := m.apis[key]; a != nil && int(version) < len(a.Requests) {
		a.Requests[version].Add(1)
	}
}

// countError counts one error code (0, NONE, is not counted).
func (a *APIMetrics) countError(code int16) {
	if code == 0 {
		return
	}
	i := int(code) + 1
	if i < 0 || i >= errorSlots {
		i = errorSlots - 1
	}
	a.errors[i].Add(1)
}

// EachError calls fn for every error code counted at least once.
func (a *APIMetrics) EachError(fn func(code int16, n uint64)) {
	for i := range a.errors {
		if n := a.errors[i].Load(); n > 0 {
			fn(int16(i-1), n)
		}
	}
}

// RequestMetrics calls fn for each API key the broker serves, in key order.
func (b *Broker) RequestMetrics(fn func(*APIMetrics)) {
	for _, a := range b.metrics.apis {
		if a != nil {
			fn(a)
		}
	}
}

// timing is when a request's handler started and ended, carried with its
// response to the writer.
type timing struct {
	key     int16
	version int16
	started time.Time
	handled time.Time
}

// observeWriting records a response's queue time and error codes just
// before the writer sends it, so that a client that has its answer also
// finds it counted.
func (m *requestMetrics) observeWriting(t timing, resp kmsg.Response, writing time.Time) {
	a := m.apis[t.key]
	if a == nil {
		return
	}
	a.Queue.ObserveDuration(writing.Sub(t.handled))
	if resp != nil {
		responseErrors(resp, a.countError)
	}
}

// observeSent records how long the write of a response took.
func (m *requestMetrics) observeSent(t timing, writing, sent time.Time) {
	if a := m.apis[t.key]; a != nil {
		a.Send.ObserveDuration(sent.Sub(writing))
	}
}

// responseErrors reports the error codes of a response: its top-level
// code and those of its topics, partitions, groups or members, as Kafka's
// AbstractResponse.errorCounts does. The responses of the data path and
// of the coordinators are covered; those with no error code or only
// top-level ones of rarely used APIs are not walked. Fetch errors are
// counted where the fetch response is encoded (encodeFetch). It allocates
// nothing.
func responseErrors(resp kmsg.Response, count func(int16)) {
	switch r := resp.(type) {
	case *kmsg.ProduceResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				count(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.MetadataResponse:
		for i := range r.Topics {
			count(r.Topics[i].ErrorCode)
			for j := range r.Topics[i].Partitions {
				count(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.ListOffsetsResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				count(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.OffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				count(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.OffsetFetchResponse:
		count(r.ErrorCode)
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				count(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
		for i := range r.Groups {
			count(r.Groups[i].ErrorCode)
			for j := range r.Groups[i].Topics {
				for k := range r.Groups[i].Topics[j].Partitions {
					count(r.Groups[i].Topics[j].Partitions[k].ErrorCode)
				}
			}
		}
	case *kmsg.FindCoordinatorResponse:
		count(r.ErrorCode)
		for i := range r.Coordinators {
			count(r.Coordinators[i].ErrorCode)
		}
	case *kmsg.JoinGroupResponse:
		count(r.ErrorCode)
	case *kmsg.SyncGroupResponse:
		count(r.ErrorCode)
	case *kmsg.HeartbeatResponse:
		count(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		count(r.ErrorCode)
		for i := range r.Members {
			count(r.Members[i].ErrorCode)
		}
	case *kmsg.ConsumerGroupHeartbeatResponse:
		count(r.ErrorCode)
	case *kmsg.DescribeGroupsResponse:
		for i := range r.Groups {
			count(r.Groups[i].ErrorCode)
		}
	case *kmsg.ListGroupsResponse:
		count(r.ErrorCode)
	case *kmsg.DeleteGroupsResponse:
		for i := range r.Groups {
			count(r.Groups[i].ErrorCode)
		}
	case *kmsg.ApiVersionsResponse:
		count(r.ErrorCode)
	case *kmsg.CreateTopicsResponse:
		for i := range r.Topics {
			count(r.Topics[i].ErrorCode)
		}
	case *kmsg.DeleteTopicsResponse:
		for i := range r.Topics {
			count(r.Topics[i].ErrorCode)
		}
	case *kmsg.CreatePartitionsResponse:
		for i := range r.Topics {
			count(r.Topics[i].ErrorCode)
		}
	case *kmsg.DeleteRecordsResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				count(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.InitProducerIDResponse:
		count(r.ErrorCode)
	case *kmsg.AddPartitionsToTxnResponse:
		count(r.ErrorCode)
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				count(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
		for i := range r.Transactions {
			for j := range r.Transactions[i].Topics {
				for k := range r.Transactions[i].Topics[j].Partitions {
					count(r.Transactions[i].Topics[j].Partitions[k].ErrorCode)
				}
			}
		}
	case *kmsg.AddOffsetsToTxnResponse:
		count(r.ErrorCode)
	case *kmsg.EndTxnResponse:
		count(r.ErrorCode)
	case *kmsg.TxnOffsetCommitResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				count(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.OffsetForLeaderEpochResponse:
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				count(r.Topics[i].Partitions[j].ErrorCode)
			}
		}
	case *kmsg.DescribeConfigsResponse:
		for i := range r.Resources {
			count(r.Resources[i].ErrorCode)
		}
	case *kmsg.AlterConfigsResponse:
		for i := range r.Resources {
			count(r.Resources[i].ErrorCode)
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for i := range r.Resources {
			count(r.Resources[i].ErrorCode)
		}
	case *kmsg.DescribeClusterResponse:
		count(r.ErrorCode)
	}
}
