package broker

// Client quotas (KIP-546 DescribeClientQuotas and AlterClientQuotas;
// KIP-612 ip entities): validation after Kafka's ClientQuotaControlManager,
// storage in the cluster state file. kbroker stores and describes quotas
// but does not enforce them: no request is throttled (README says so).

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strings"

	"github.com/kbroker/kbroker/cluster"
)

// Quota entity types (ClientQuotaEntity).
const (
	quotaEntityUser     = "user"
	quotaEntityClientID = "client-id"
	quotaEntityIP       = "ip"
)

// quotaKeyType is a quota key's ConfigDef type, which bounds its values.
type quotaKeyType int

const (
	quotaDouble quotaKeyType = iota
	quotaInt
	quotaLong
)

// userClientQuotaKeys are the keys of user and client-id entities and
// ipQuotaKeys those of ip entities (Kafka's QuotaConfig).
var (
	userClientQuotaKeys = map[string]quotaKeyType{
		"producer_byte_rate":       quotaLong,
		"consumer_byte_rate":       quotaLong,
		"request_percentage":       quotaDouble,
		"controller_mutation_rate": quotaDouble,
	}
	ipQuotaKeys = map[string]quotaKeyType{
		"connection_creation_rate": quotaInt,
	}
)

// quotaEntity is an entity as Kafka's ClientQuotaEntity: a map of type to
// name (nil: the default), a repeated type keeping its last name.
type quotaEntity map[string]*string

// parts returns the entity sorted by type, as the state keeps it.
func (e quotaEntity) parts() []cluster.EntityPart {
	out := make([]cluster.EntityPart, 0, len(e))
	for typ, name := range e {
		out = append(out, cluster.EntityPart{Type: typ, Name: name})
	}
	cluster.SortEntity(out)
	return out
}

// String renders the entity for messages, as ClientQuotaEntity does.
func (e quotaEntity) String() string {
	var parts []string
	for _, p := range e.parts() {
		name := "<default>"
		if p.Name != nil {
			name = *p.Name
		}
		parts = append(parts, p.Type+"="+name)
	}
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

// quotaKeysFor checks an entity's types and names and returns the quota
// keys it may set, or Kafka's INVALID_REQUEST message (validateEntity and
// configKeysForEntityType).
func quotaKeysFor(e quotaEntity) (map[string]quotaKeyType, string) {
	if len(e) == 0 {
		return nil, "Invalid empty client quota entity"
	}
	for _, p := range e.parts() {
		switch p.Type {
		case quotaEntityUser, quotaEntityClientID, quotaEntityIP:
		default:
			return nil, "Unhandled client quota entity type: " + p.Type
		}
		if p.Name != nil && *p.Name == "" {
			return nil, "Empty " + p.Type + " not supported"
		}
	}
	_, hasUser := e[quotaEntityUser]
	_, hasClient := e[quotaEntityClientID]
	ip, hasIP := e[quotaEntityIP]
	if !hasIP {
		return userClientQuotaKeys, ""
	}
	if hasUser || hasClient {
		// Kafka's message, with its missing space.
		return nil, "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId"
	}
	if ip != nil && net.ParseIP(*ip) == nil {
		return nil, *ip + " is not a valid IP or resolvable host."
	}
	return ipQuotaKeys, ""
}

// checkQuotaValue returns Kafka's message for a value key may not take
// (validateQuotaKeyValue), or "".
func checkQuotaValue(keys map[string]quotaKeyType, key string, v float64) string {
	typ, ok := keys[key]
	if !ok {
		return "Invalid configuration key " + key
	}
	if !(v > 0) { // NaN too, which Kafka would store
		return fmt.Sprintf("Quota %s must be greater than 0", key)
	}
	if math.IsInf(v, 1) { // Kafka stores it; JSON cannot: a deviation
		return fmt.Sprintf("Quota %s must be finite", key)
	}
	switch typ {
	case quotaInt:
		if v > math.MaxInt32 {
			return fmt.Sprintf("Proposed value for %s is too large for an INT.", key)
		}
	case quotaLong:
		if v > math.MaxInt64 {
			return fmt.Sprintf("Proposed value for %s is too large for a LONG.", key)
		}
	default:
		return ""
	}
	if math.Abs(math.Mod(v, 1)) > 1e-6 {
		return key + " cannot be a fractional value."
	}
	return ""
}

// findQuota returns the index of the entity's entry in quotas, or -1.
func findQuota(quotas []cluster.Quota, parts []cluster.EntityPart) int {
	return slices.IndexFunc(quotas, func(q cluster.Quota) bool { return cluster.CompareEntity(q.Entity, parts) == 0 })
}
