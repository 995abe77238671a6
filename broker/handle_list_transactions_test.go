package broker

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/internal/testenv"
)

// TestListTransactionsPattern: ListTransactions v2 (KIP-1152) lists the
// transactional ids its pattern matches whole, as Kafka's RE2/J
// Matcher.matches does, and refuses a pattern that does not compile.
func TestListTransactionsPattern(t *testing.T) {
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	for _, id := range []string{"orders-1", "orders-2", "payments-1"} {
		x := &txnWire{t: t, w: w, id: id}
		testenv.WantCode(t, "init "+id, x.init(), nil)
	}
	list := func(pattern *string) ([]string, int16) {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.TransactionalIDPattern = 2, pattern
		resp := w.do(req).(*kmsg.ListTransactionsResponse)
		var ids []string
		for _, s := range resp.TransactionStates {
			ids = append(ids, s.TransactionalID)
		}
		slices.Sort(ids)
		return ids, resp.ErrorCode
	}
	show := func(p *string) string {
		if p == nil {
			return "null"
		}
		return `"` + *p + `"`
	}
	for _, c := range []struct {
		pattern *string
		want    []string
	}{
		{nil, []string{"orders-1", "orders-2", "payments-1"}},
		{kmsg.StringPtr(""), []string{"orders-1", "orders-2", "payments-1"}},
		{kmsg.StringPtr("orders-.*"), []string{"orders-1", "orders-2"}},
		{kmsg.StringPtr("orders"), nil}, // a prefix is not a match
		{kmsg.StringPtr(".*-1|payments.*"), []string{"orders-1", "payments-1"}},
	} {
		ids, code := list(c.pattern)
		if code != 0 || !slices.Equal(ids, c.want) {
			t.Errorf("pattern %s: %v (%v), want %v", show(c.pattern), ids, kerr.ErrorForCode(code), c.want)
		}
	}
	for _, bad := range []string{"(orders", "a)|(b", "["} {
		if ids, code := list(&bad); code != kerr.InvalidRegularExpression.Code || len(ids) != 0 {
			t.Errorf("pattern %q: %v (%v), want INVALID_REGULAR_EXPRESSION alone", bad, ids, kerr.ErrorForCode(code))
		}
	}
}
