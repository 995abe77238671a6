package broker

// DescribeClientQuotas v0–v1 (KIP-546; v1 flexible).
//
// As Kafka's ClientQuotasImage.describe: each filter component names an
// entity type (user, client-id or ip; another is UNSUPPORTED_VERSION, an
// empty one INVALID_REQUEST) at most once, and matches an exact name
// (match type 0, a name required), the default entity (1, no name) or any
// entity of the type (2, no name); ip cannot be combined with user or
// client-id. An entity matches when it has every filtered type with the
// wanted name, and with strict also no other type. A bad filter answers
// with the error code and Kafka's message and null entries. Entities come
// sorted (default names first), their values sorted by key.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster"
)

func (b *Broker) handleDescribeClientQuotas(c *conn, req *kmsg.DescribeClientQuotasRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	exact := make(map[string]*string)
	anyOf := make(map[string]bool)
	fail := func(code *kerr.Error, msg string) (result, error) {
		resp.ErrorCode, resp.ErrorMessage, resp.Entries = code.Code, kmsg.StringPtr(msg), nil
		return respond(resp)
	}
	for _, comp := range req.Components {
		typ := comp.EntityType
		_, inExact := exact[typ]
		switch {
		case typ == "":
			return fail(kerr.InvalidRequest, "Invalid empty entity type.")
		case inExact || anyOf[typ]:
			return fail(kerr.InvalidRequest, "Entity type "+typ+" cannot appear more than once in the filter.")
		case typ != quotaEntityUser && typ != quotaEntityClientID && typ != quotaEntityIP:
			return fail(kerr.UnsupportedVersion, "Unsupported entity type "+typ)
		}
		switch comp.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if comp.Match == nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			exact[typ] = comp.Match
		case kmsg.QuotasMatchTypeDefault:
			if comp.Match != nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			exact[typ] = nil
		case kmsg.QuotasMatchTypeAny:
			if comp.Match != nil {
				return fail(kerr.InvalidRequest, "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			anyOf[typ] = true
		default:
			return fail(kerr.InvalidRequest, fmt.Sprintf("Unknown match type %d", int8(comp.MatchType)))
		}
	}
	has := func(typ string) bool { _, ok := exact[typ]; return ok || anyOf[typ] }
	if has(quotaEntityIP) && (has(quotaEntityUser) || has(quotaEntityClientID)) {
		return fail(kerr.InvalidRequest, "Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}

	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, q := range b.cluster.Load().Quotas {
		if !quotaMatches(q.Entity, exact, anyOf, req.Strict) {
			continue
		}
		re := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range q.Entity {
			re.Entity = append(re.Entity, kmsg.DescribeClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
		}
		for k, v := range q.Values {
			re.Values = append(re.Values, kmsg.DescribeClientQuotasResponseEntryValue{Key: k, Value: v})
		}
		slices.SortFunc(re.Values, func(a, b kmsg.DescribeClientQuotasResponseEntryValue) int { return strings.Compare(a.Key, b.Key) })
		resp.Entries = append(resp.Entries, re)
	}
	return respond(resp)
}

// quotaMatches is Kafka's ClientQuotasImage.matches.
func quotaMatches(entity []cluster.EntityPart, exact map[string]*string, anyOf map[string]bool, strict bool) bool {
	if strict && len(entity) != len(exact)+len(anyOf) {
		return false
	}
	name := func(typ string) (*string, bool) {
		for _, p := range entity {
			if p.Type == typ {
				return p.Name, true
			}
		}
		return nil, false
	}
	for typ, want := range exact {
		got, ok := name(typ)
		if !ok || (got == nil) != (want == nil) || (got != nil && *got != *want) {
			return false
		}
	}
	for typ := range anyOf {
		if _, ok := name(typ); !ok {
			return false
		}
	}
	return true
}
