package broker

// AlterClientQuotas v0–v1 (KIP-546; v1 flexible).
//
// As Kafka's controller (ClientQuotaControlManager.alterClientQuotas):
// each entry is validated on its own and answered on its own; entity
// types are user, client-id and ip (not ip together with the others), a
// name is a string or null for the default entity, never empty; keys are
// producer_byte_rate, consumer_byte_rate (whole numbers),
// request_percentage and controller_mutation_rate for user and client-id
// entities and connection_creation_rate (a whole number) for ip; a value
// must be above 0; remove drops a key. A key twice in one entry, or an
// entity twice in one request, is INVALID_REQUEST for that entity with
// Kafka's messages. The valid entries of a request are written together
// to the cluster state file before the answer (all or none, as Kafka's
// atomic record batch), unless the request is validate-only.
//
// Deviations: an ip entity must be an IP address (Kafka also accepts a
// host name it can resolve; the broker does no DNS lookups on a request
// path), and an infinite value is refused (JSON cannot store it). Quotas
// are kept and described but not enforced (quotas.go).

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster"
)

// quotaResult is one entity's answer.
type quotaResult struct {
	entity quotaEntity
	code   int16
	msg    *string
}

func (b *Broker) handleAlterClientQuotas(c *conn, req *kmsg.AlterClientQuotasRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	var results []*quotaResult
	byEntity := make(map[string]*quotaResult)
	err := b.cluster.Update(func(st *cluster.State) error {
		results, byEntity = results[:0], make(map[string]*quotaResult)
		for _, e := range req.Entries {
			ent := make(quotaEntity, len(e.Entity))
			for _, p := range e.Entity {
				ent[p.Type] = p.Name
			}
			key := ent.String()
			if r, dup := byEntity[key]; dup {
				r.code, r.msg = kerr.InvalidRequest.Code, kmsg.StringPtr("Ignoring duplicate entity "+key)
				continue
			}
			r := &quotaResult{entity: ent}
			results = append(results, r)
			byEntity[key] = r
			if msg := applyQuotaEntry(st, ent, e.Ops); msg != "" {
				r.code, r.msg = kerr.InvalidRequest.Code, kmsg.StringPtr(msg)
			}
		}
		if req.ValidateOnly {
			return errValidateOnly
		}
		return nil
	})
	storageErr := err != nil && !errors.Is(err, errValidateOnly)
	for _, r := range results {
		re := kmsg.NewAlterClientQuotasResponseEntry()
		re.ErrorCode, re.ErrorMessage = r.code, r.msg
		if storageErr && r.code == 0 {
			re.ErrorCode = errorCode(fmt.Errorf("alter client quotas: %w: %w", kerr.KafkaStorageError, err))
			re.ErrorMessage = kmsg.StringPtr(err.Error())
		}
		for _, p := range r.entity.parts() {
			re.Entity = append(re.Entity, kmsg.AlterClientQuotasResponseEntryEntity{Type: p.Type, Name: p.Name})
		}
		resp.Entries = append(resp.Entries, re)
	}
	return respond(resp)
}

// applyQuotaEntry validates one entry and applies it to st, or returns
// Kafka's message and leaves st as it was.
func applyQuotaEntry(st *cluster.State, ent quotaEntity, ops []kmsg.AlterClientQuotasRequestEntryOp) string {
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Key] {
			// Kafka records the duplicate key, then overwrites the message
			// with the duplicate-entity one, since the entity now has a
			// result.
			return "Ignoring duplicate entity " + ent.String()
		}
		seen[op.Key] = true
	}
	keys, msg := quotaKeysFor(ent)
	if msg != "" {
		return msg
	}
	for _, op := range ops {
		if !op.Remove {
			if msg := checkQuotaValue(keys, op.Key, op.Value); msg != "" {
				return msg
			}
		}
	}
	parts := ent.parts()
	i := findQuota(st.Quotas, parts)
	if i < 0 {
		st.Quotas = append(st.Quotas, cluster.Quota{Entity: parts, Values: map[string]float64{}})
		i = len(st.Quotas) - 1
	}
	for _, op := range ops {
		if op.Remove {
			delete(st.Quotas[i].Values, op.Key)
		} else {
			st.Quotas[i].Values[op.Key] = op.Value
		}
	}
	return ""
}
