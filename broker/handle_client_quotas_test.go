package broker

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func sp(s string) *string { return &s }

// renderQuotas renders described quotas as "user=alice:producer_byte_rate=1024;..."
func renderQuotas(qs kadm.DescribedClientQuotas) string {
	var out []string
	for _, q := range qs {
		var vals []string
		for _, v := range q.Values {
			vals = append(vals, fmt.Sprintf("%s=%g", v.Key, v.Value))
		}
		out = append(out, q.Entity.String()+":"+strings.Join(vals, ","))
	}
	return strings.Join(out, ";")
}

// TestClientQuotas stores quotas with kadm, describes them back with each
// match type, checks Kafka's refusals, and that they survive a restart.
func TestClientQuotas(t *testing.T) {
	rs := newRestartable(t, nil)
	adm := newAdmin(t, rs.running)
	ctx := testCtx(t)
	alice, def := kadm.ClientQuotaEntity{{Type: "user", Name: sp("alice")}}, kadm.ClientQuotaEntity{{Type: "user"}}
	aliceApp := kadm.ClientQuotaEntity{{Type: "user", Name: sp("alice")}, {Type: "client-id", Name: sp("app")}}
	ip := kadm.ClientQuotaEntity{{Type: "ip", Name: sp("10.0.0.1")}}
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{
		{Entity: alice, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}, {Key: "request_percentage", Value: 12.5}}},
		{Entity: def, Ops: []kadm.AlterClientQuotaOp{{Key: "consumer_byte_rate", Value: 2048}}},
		{Entity: aliceApp, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 10}}},
		{Entity: ip, Ops: []kadm.AlterClientQuotaOp{{Key: "connection_creation_rate", Value: 5}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("%v: %v %s", r.Entity, r.Err, r.ErrMessage)
		}
	}
	describe := func(strict bool, comps ...kadm.DescribeClientQuotaComponent) string {
		t.Helper()
		qs, err := adm.DescribeClientQuotas(ctx, strict, comps)
		if err != nil {
			t.Fatalf("describe %+v: %v", comps, err)
		}
		return renderQuotas(qs)
	}
	const (
		wantAlice    = "{user=alice}:producer_byte_rate=1024,request_percentage=12.5"
		wantDefault  = "{user=<default>}:consumer_byte_rate=2048"
		wantAliceApp = "{client-id=app, user=alice}:producer_byte_rate=10"
		wantIP       = "{ip=10.0.0.1}:connection_creation_rate=5"
	)
	for _, c := range []struct {
		name   string
		strict bool
		comps  []kadm.DescribeClientQuotaComponent
		want   string
	}{
		{"everything", false, nil, strings.Join([]string{wantAliceApp, wantIP, wantDefault, wantAlice}, ";")},
		{"exact user", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: sp("alice"), MatchType: 0}}, wantAliceApp + ";" + wantAlice},
		{"exact user, strict", true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: sp("alice"), MatchType: 0}}, wantAlice},
		{"default user", false, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 1}}, wantDefault},
		{"any user, strict", true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchType: 2}}, wantDefault + ";" + wantAlice},
		{"any ip", false, []kadm.DescribeClientQuotaComponent{{Type: "ip", MatchType: 2}}, wantIP},
	} {
		if got := describe(c.strict, c.comps...); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}

	// Refusals, per entity, with Kafka's messages; nothing is stored.
	w := dialWire(t, rs.running)
	alter := kmsg.NewPtrAlterClientQuotasRequest()
	entry := func(ops []kmsg.AlterClientQuotasRequestEntryOp, ent ...kmsg.AlterClientQuotasRequestEntryEntity) kmsg.AlterClientQuotasRequestEntry {
		return kmsg.AlterClientQuotasRequestEntry{Entity: ent, Ops: ops}
	}
	set := func(k string, v float64) []kmsg.AlterClientQuotasRequestEntryOp {
		return []kmsg.AlterClientQuotasRequestEntryOp{{Key: k, Value: v}}
	}
	alter.Entries = []kmsg.AlterClientQuotasRequestEntry{
		entry(set("producer_byte_rate", 1)),
		entry(set("producer_byte_rate", 1), kmsg.AlterClientQuotasRequestEntryEntity{Type: "group", Name: sp("g")}),
		entry(set("producer_byte_rate", 1), kmsg.AlterClientQuotasRequestEntryEntity{Type: "user", Name: sp("")}),
		entry(set("producer_byte_rate", 1), kmsg.AlterClientQuotasRequestEntryEntity{Type: "ip", Name: sp("x y")}),
		entry(set("producer_byte_rate", 1), kmsg.AlterClientQuotasRequestEntryEntity{Type: "ip"}, kmsg.AlterClientQuotasRequestEntryEntity{Type: "user"}),
		entry(set("nope", 1), kmsg.AlterClientQuotasRequestEntryEntity{Type: "user", Name: sp("b")}),
		entry(set("producer_byte_rate", 0), kmsg.AlterClientQuotasRequestEntryEntity{Type: "user", Name: sp("c")}),
		entry(set("producer_byte_rate", 1.5), kmsg.AlterClientQuotasRequestEntryEntity{Type: "user", Name: sp("d")}),
		entry(set("connection_creation_rate", 1e10), kmsg.AlterClientQuotasRequestEntryEntity{Type: "ip"}),
		entry(append(set("request_percentage", 1), set("request_percentage", 2)...), kmsg.AlterClientQuotasRequestEntryEntity{Type: "user", Name: sp("e")}),
	}
	wants := []string{
		"Invalid empty client quota entity",
		"Unhandled client quota entity type: group",
		"Empty user not supported",
		"x y is not a valid IP or resolvable host.",
		"IP entity shouldnot be combined",
		"Invalid configuration key nope",
		"Quota producer_byte_rate must be greater than 0",
		"producer_byte_rate cannot be a fractional value.",
		"too large for an INT",
		"Ignoring duplicate entity",
	}
	resp := w.do(alter).(*kmsg.AlterClientQuotasResponse)
	if len(resp.Entries) != len(wants) {
		t.Fatalf("%d answers for %d entries", len(resp.Entries), len(wants))
	}
	for i, e := range resp.Entries {
		if e.ErrorCode != kerr.InvalidRequest.Code || e.ErrorMessage == nil || !strings.Contains(*e.ErrorMessage, wants[i]) {
			t.Errorf("entry %d: %d %v, want INVALID_REQUEST %q", i, e.ErrorCode, e.ErrorMessage, wants[i])
		}
	}
	// Validate only, and a removal.
	if _, err := adm.ValidateAlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: alice, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: aliceApp, Ops: []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}}}}); err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{wantIP, wantDefault, wantAlice}, ";")
	if got := describe(false); got != want {
		t.Fatalf("after validate-only and removal: got %q, want %q", got, want)
	}

	// Bad filters.
	for _, c := range []struct {
		comps []kmsg.DescribeClientQuotasRequestComponent
		code  *kerr.Error
	}{
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 0}}, kerr.InvalidRequest},
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 1, Match: sp("x")}}, kerr.InvalidRequest},
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 2}, {EntityType: "user", MatchType: 1}}, kerr.InvalidRequest},
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "ip", MatchType: 2}, {EntityType: "client-id", MatchType: 2}}, kerr.InvalidRequest},
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "group", MatchType: 2}}, kerr.UnsupportedVersion},
		{[]kmsg.DescribeClientQuotasRequestComponent{{EntityType: "user", MatchType: 7}}, kerr.InvalidRequest},
	} {
		req := kmsg.NewPtrDescribeClientQuotasRequest()
		req.Components = c.comps
		resp := w.do(req).(*kmsg.DescribeClientQuotasResponse)
		if resp.ErrorCode != c.code.Code || resp.ErrorMessage == nil || resp.Entries != nil {
			t.Errorf("filter %+v: %d %v, want %v", c.comps, resp.ErrorCode, resp.ErrorMessage, c.code)
		}
	}

	// The quotas survive a restart.
	adm = newAdmin(t, rs.restart())
	if got := describe(false); got != want {
		t.Fatalf("after a restart: got %q, want %q", got, want)
	}
}
