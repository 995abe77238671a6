package broker

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/fault"
	klog "github.com/kbroker/kbroker/log"
	"github.com/kbroker/kbroker/protocol"
	"github.com/kbroker/kbroker/topic"
)

// Faults is the broker's fault injector: rules added to it make chosen
// requests fail, stall, lose their connection or go unanswered (package
// fault; docs/TESTING-CONTROLS.md). With no rules it costs each request
// one atomic load.
func (b *Broker) Faults() *fault.Injector { return b.faults }

// WithFaults makes the broker use in for fault injection, so that rules
// outlive a restart (InProcess.Restart passes the old broker's on). in
// should come from a broker's Faults, which knows what the broker can
// fail; by default each broker has its own.
func WithFaults(in *fault.Injector) Option { return func(b *Broker) { b.faults = in } }

// newFaults is the injector of a new broker.
func newFaults() *fault.Injector { return fault.New(fault.WithErrorAPIs(canInjectError)) }

// partitionErrorAPIs answer an injected error per partition, inside
// their handlers (conn.injected), so that the partitions a rule does not
// match are handled as usual.
var partitionErrorAPIs = map[int16]bool{
	0: true, // Produce
	1: true, // Fetch
	2: true, // ListOffsets
	3: true, // Metadata: per topic, or per partition when the rule names one
}

// canInjectError reports whether requests of key can answer with an
// injected error code.
func canInjectError(key int16) bool {
	if partitionErrorAPIs[key] {
		return true
	}
	req := kmsg.RequestForKey(key)
	return req != nil && injectedResponse(req, &fault.Decision{Error: kerr.UnknownServerError.Code}) != nil
}

var (
	// errFaultClose closes a connection as a rule asked.
	errFaultClose = errors.New("broker: connection closed by a fault rule")
	// errSwallowed leaves a connection unanswered as a rule asked.
	errSwallowed = errors.New("broker: request swallowed by a fault rule")
)

// faultRequest describes a request for the injector.
func (c *conn) faultRequest(key, version int16, req kmsg.Request) *fault.Request {
	if f, ok := req.(*kmsg.FetchRequest); ok {
		req = c.b.withSessionTopics(f)
	}
	return &fault.Request{
		Key: key, Version: version, Body: req,
		ClientID:   c.clientID,
		Listener:   c.l.bound,
		Connection: c.nc.RemoteAddr().String(),
		TopicName: func(id [16]byte) string {
			t, _ := c.b.topics.ByID(topic.ID(id))
			return t.Name
		},
	}
}

// withSessionTopics is an incremental fetch (KIP-227) as rules see it:
// with the partitions of its session, which the request itself does not
// repeat, so that a rule on a topic matches every fetch of it. Other
// fetches are returned as they are.
func (b *Broker) withSessionTopics(req *kmsg.FetchRequest) *kmsg.FetchRequest {
	if req.Version < 7 || req.SessionID <= 0 || req.SessionEpoch <= 0 {
		return req
	}
	s := b.sessions.get(req.SessionID)
	if s == nil {
		return req
	}
	s.mu.Lock()
	topics := s.topics()
	s.mu.Unlock()
	cp := *req
	cp.Topics = append(topics, req.Topics...)
	return &cp
}

// handleFault handles a request on which a fault rule fired.
func (c *conn) handleFault(corr int32, a *api, req kmsg.Request, d *fault.Decision, t timing) error {
	if ce := c.lg.Check(zap.DebugLevel, "fault rule fired"); ce != nil {
		ce.Write(zap.Int64("rule", d.RuleID), zap.String("api", kmsg.NameForKey(req.Key())), zap.Int32("correlation_id", corr))
	}
	if d.Delay > 0 {
		t := time.NewTimer(d.Delay)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return c.ctx.Err()
		case <-c.b.stop:
			t.Stop()
		}
	}
	switch {
	case d.Swallow:
		return errSwallowed
	case d.CloseBefore:
		return errFaultClose
	}
	var res result
	var err error
	switch {
	case d.Error == 0:
		res, err = a.handle(c.b, c, req)
	case partitionErrorAPIs[req.Key()]:
		c.inject = d
		res, err = a.handle(c.b, c, req)
		c.inject = nil
	default:
		res = result{resp: injectedResponse(req, d)}
	}
	t.handled = time.Now()
	c.b.metrics.apis[t.key].Handle.ObserveDuration(t.handled.Sub(t.started))
	if err != nil {
		return err
	}
	if !res.none {
		res.throttle = d.ThrottleBytesPerSec
		if err := c.enqueue(corr, res, t); err != nil {
			return err
		}
	}
	if d.CloseAfter {
		return errFaultClose
	}
	return nil
}

// injected is the error code a fired rule gives a partition of the
// request being handled, if any. Handlers with an error code per
// partition ask it first for each partition.
func (c *conn) injected(topic string, partition int32) (int16, bool) {
	if c == nil || c.inject == nil || !c.inject.Matches(topic, partition) {
		return 0, false
	}
	return c.inject.Error, true
}

// injectMetadata puts an injected error on the matched topics of a
// Metadata response, or on the matched partition when the rule names one
// (LEADER_NOT_AVAILABLE for one partition, say).
func (c *conn) injectMetadata(resp *kmsg.MetadataResponse) {
	if c == nil || c.inject == nil {
		return
	}
	partitionRule := c.inject.Partitioned()
	for i := range resp.Topics {
		mt := &resp.Topics[i]
		if mt.Topic == nil {
			continue
		}
		if !partitionRule {
			if code, ok := c.injected(*mt.Topic, -1); ok {
				mt.ErrorCode = code
			}
			continue
		}
		for j := range mt.Partitions {
			mp := &mt.Partitions[j]
			if code, ok := c.injected(*mt.Topic, mp.Partition); ok {
				mp.ErrorCode = code
			}
		}
	}
}

// injectedResponse is the answer with d.Error to a request whose API has
// no error code per partition, or nil for APIs that cannot be failed this
// way. Such a request is not handled: the group is not joined, the
// transaction not ended.
func injectedResponse(req kmsg.Request, d *fault.Decision) kmsg.Response {
	code := d.Error
	switch r := req.(type) {
	case *kmsg.FindCoordinatorRequest:
		resp := r.ResponseKind().(*kmsg.FindCoordinatorResponse)
		if r.Version < 4 {
			resp.ErrorCode, resp.NodeID = code, -1
			return resp
		}
		for _, k := range r.CoordinatorKeys {
			c := kmsg.NewFindCoordinatorResponseCoordinator()
			c.Key, c.NodeID, c.Port, c.ErrorCode = k, -1, -1, code
			resp.Coordinators = append(resp.Coordinators, c)
		}
		return resp
	case *kmsg.JoinGroupRequest:
		resp := r.ResponseKind().(*kmsg.JoinGroupResponse)
		resp.ErrorCode, resp.MemberID = code, r.MemberID
		return resp
	case *kmsg.SyncGroupRequest:
		resp := r.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.HeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.HeartbeatResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.LeaveGroupRequest:
		resp := r.ResponseKind().(*kmsg.LeaveGroupResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.ConsumerGroupHeartbeatRequest:
		resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.DescribeGroupsRequest:
		resp := r.ResponseKind().(*kmsg.DescribeGroupsResponse)
		for _, g := range r.Groups {
			rg := kmsg.NewDescribeGroupsResponseGroup()
			rg.Group, rg.ErrorCode = g, code
			resp.Groups = append(resp.Groups, rg)
		}
		return resp
	case *kmsg.OffsetCommitRequest:
		resp := r.ResponseKind().(*kmsg.OffsetCommitResponse)
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetCommitResponseTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.OffsetFetchRequest:
		resp := r.ResponseKind().(*kmsg.OffsetFetchResponse)
		if r.Version >= 8 {
			for _, g := range r.Groups {
				rg := kmsg.NewOffsetFetchResponseGroup()
				rg.Group, rg.ErrorCode = g.Group, code
				resp.Groups = append(resp.Groups, rg)
			}
			return resp
		}
		resp.ErrorCode = code
		for _, t := range r.Topics {
			rt := kmsg.NewOffsetFetchResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseTopicPartition()
				rp.Partition, rp.Offset, rp.ErrorCode = p, -1, code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	case *kmsg.InitProducerIDRequest:
		resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
		resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = code, -1, -1
		return resp
	case *kmsg.AddPartitionsToTxnRequest:
		return injectedAddPartitions(r, d)
	case *kmsg.AddOffsetsToTxnRequest:
		resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		resp.ErrorCode = code
		return resp
	case *kmsg.EndTxnRequest:
		resp := r.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = code
		return resp
	}
	return nil
}

// injectedAddPartitions fails the partitions a rule matches and, as Kafka
// does when some partitions of the request fail, answers the others
// OPERATION_NOT_ATTEMPTED.
func injectedAddPartitions(r *kmsg.AddPartitionsToTxnRequest, d *fault.Decision) kmsg.Response {
	resp := r.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	codeFor := func(t string, p int32) int16 {
		if d.Matches(t, p) {
			return d.Error
		}
		return kerr.OperationNotAttempted.Code
	}
	if r.Version < 4 {
		for _, t := range r.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, codeFor(t.Topic, p)
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, tx := range r.Transactions {
		rx := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rx.TransactionalID = tx.TransactionalID
		for _, t := range tx.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				rp.Partition, rp.ErrorCode = p, codeFor(t.Topic, p)
				rt.Partitions = append(rt.Partitions, rp)
			}
			rx.Topics = append(rx.Topics, rt)
		}
		resp.Transactions = append(resp.Transactions, rx)
	}
	return resp
}

// writeThrottled sends a response no faster than res.throttle bytes a
// second, as a fault rule asked. A fetch response's record bytes are
// copied out of the commit log first (a throttled answer is a test's,
// where the copy costs nothing that matters). It returns buf, grown, for
// reuse.
func (c *conn) writeThrottled(corr int32, res result, buf []byte) ([]byte, error) {
	out := buf[:0]
	if res.fetch == nil {
		out = protocol.AppendResponse(out, corr, res.resp)
	} else {
		var err error
		if out, err = res.fetch.appendFlat(out, corr); err != nil {
			return out, err
		}
	}
	// Send in slices of a twentieth of a second's worth, each when the
	// rate allows it.
	rate := res.throttle
	slice := int(max(rate/20, 1))
	start := time.Now()
	for sent := 0; sent < len(out); {
		n := min(len(out)-sent, slice)
		c.nc.SetWriteDeadline(time.Now().Add(c.b.cfg.ConnectionsMaxIdle))
		if _, err := c.io.Write(out[sent : sent+n]); err != nil {
			return out, err
		}
		sent += n
		if sent == len(out) {
			break
		}
		due := start.Add(time.Duration(float64(sent) / float64(rate) * float64(time.Second)))
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-c.ctx.Done():
				t.Stop()
				return out, c.ctx.Err()
			}
		}
	}
	return out, nil
}

// appendFlat appends the whole fetch response, record bytes copied out of
// the commit log, to out and recycles the result.
func (f *fetchResult) appendFlat(out []byte, corr int32) ([]byte, error) {
	defer f.recycle()
	fr := &f.frame
	if len(fr.Bytes) < 8 {
		return out, errNoFetchResponse
	}
	binary.BigEndian.PutUint32(fr.Bytes[4:], uint32(corr))
	prev := 0
	for _, s := range fr.Splices {
		out = append(out, fr.Bytes[prev:s.At]...)
		prev = s.At
		m := s.Range.Handle.(*klog.MappedFile)
		start := len(out)
		out = slices.Grow(out, int(s.Range.Len))[:start+int(s.Range.Len)]
		if err := m.CopyTo(out[start:], s.Range.Offset); err != nil {
			return out, err
		}
	}
	return append(out, fr.Bytes[prev:]...), nil
}
