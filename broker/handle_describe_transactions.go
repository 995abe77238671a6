package broker

// DescribeTransactions v0 and ListTransactions v0–v2 (KIP-664): the
// coordinator's view of transactional ids. ListTransactions v2 filters by a
// transactional-id pattern (KIP-1152) in RE2 syntax, which Kafka reads
// with RE2/J and Go's regexp reads alike; the pattern must match the whole
// id, as Kafka's Matcher.matches does.

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/txn"
)

func (b *Broker) handleDescribeTransactions(c *conn, req *kmsg.DescribeTransactionsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	coord, _ := b.transactions(false)
	var descs []txn.Description
	if coord != nil {
		descs = coord.Describe(req.TransactionalIDs)
	}
	for i, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		if !b.allowed(c, opDescribe, resTxnID, id) {
			st.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		if coord == nil {
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		d := descs[i]
		if d.Err != nil {
			st.ErrorCode = errorCode(d.Err)
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		st.State = d.State.String()
		st.TimeoutMillis = d.TimeoutMs
		st.StartTimestamp = d.StartTimeMs
		st.ProducerID, st.ProducerEpoch = d.ProducerID, d.Epoch
		for _, tp := range d.Partitions {
			n := len(st.Topics)
			if n == 0 || st.Topics[n-1].Topic != tp.Topic {
				st.Topics = append(st.Topics, kmsg.DescribeTransactionsResponseTransactionStateTopic{Topic: tp.Topic})
				n++
			}
			st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, tp.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return respond(resp)
}

func (b *Broker) handleListTransactions(c *conn, req *kmsg.ListTransactionsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var pattern *regexp.Regexp
	if p := req.TransactionalIDPattern; p != nil && *p != "" {
		// The pattern alone is checked first: "a)|(b" is not valid,
		// though it would be once wrapped.
		if _, err := regexp.Compile(*p); err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return respond(resp)
		}
		pattern = regexp.MustCompile(`^(?:` + *p + `)$`)
	}
	coord, _ := b.transactions(false)
	if coord == nil {
		// No transaction yet: nothing to list; the state filters are
		// still checked.
		for _, s := range req.StateFilters {
			if _, ok := txn.ParseState(s); !ok {
				resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
			}
		}
		return respond(resp)
	}
	lr := coord.List(req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis)
	resp.ErrorCode = errorCode(lr.Err)
	resp.UnknownStateFilters = lr.UnknownStates
	for _, l := range lr.Transactions {
		if pattern != nil && !pattern.MatchString(l.TransactionalID) {
			continue
		}
		if !b.allowed(c, opDescribe, resTxnID, l.TransactionalID) {
			continue // Kafka leaves out the ids the client may not describe
		}
		resp.TransactionStates = append(resp.TransactionStates, kmsg.ListTransactionsResponseTransactionState{
			TransactionalID: l.TransactionalID, ProducerID: l.ProducerID, TransactionState: l.State.String(),
		})
	}
	return respond(resp)
}
