package broker

// UpdateFeatures v0–v2 (KIP-584; v1 upgrade type and validate-only,
// KIP-778; v2 drops the per-feature results).
//
// The checks, their order and their messages are those of Kafka's
// FeatureControlManager.updateFeature for a cluster of one node that is
// also its controller (features.go lists what is supported): an unknown
// upgrade type, a negative level, a level outside the supported range
// ("Local controller N only supports versions a-b", or "does not support
// this feature"), a downgrade without a downgrade type, an "upgrade" of
// type downgrade, and for metadata.version any downgrade. The first
// failure fails the whole request with INVALID_UPDATE_VERSION and Kafka's
// top-level message; v0 and v1 list a result per feature only on success,
// as Kafka's QuorumController.updateFeatures. v0's allow_downgrade is the
// safe-downgrade type. A successful request that is not validate-only is
// written durably (package cluster) before the answer and applied at once:
// group.version turns the consumer group protocol on or off.
//
// Deviation: Kafka decides from MetadataVersion.checkIfMetadataChanged
// whether a metadata.version downgrade may lose metadata; kbroker refuses
// every downgrade of it, since its level cannot move (features.go).

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kbroker/kbroker/cluster"
)

// Upgrade types of UpdateFeatures v1+ (Kafka's FeatureUpdate.UpgradeType).
const (
	upgradeTypeUpgrade         = 1
	upgradeTypeSafeDowngrade   = 2
	upgradeTypeUnsafeDowngrade = 3
)

// errValidateOnly stops a validate-only update before it is written.
var errValidateOnly = errors.New("broker: validate only")

// featureUpdateError is a refused update, with Kafka's message.
type featureUpdateError struct{ msg string }

func (e *featureUpdateError) Error() string { return e.msg }

func (b *Broker) handleUpdateFeatures(c *conn, req *kmsg.UpdateFeaturesRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	err := b.cluster.Update(func(st *cluster.State) error {
		for _, u := range req.FeatureUpdates {
			typ := u.UpgradeType
			if req.Version == 0 {
				typ = upgradeTypeUpgrade
				if u.AllowDowngrade {
					typ = upgradeTypeSafeDowngrade
				}
			}
			if msg := b.checkFeatureUpdate(st, u.Feature, u.MaxVersionLevel, typ); msg != "" {
				return &featureUpdateError{msg: msg}
			}
		}
		if req.ValidateOnly {
			return errValidateOnly
		}
		for _, u := range req.FeatureUpdates {
			if _, ok := featureSpecFor(u.Feature); !ok {
				continue // only level 0 passes the checks: nothing to keep
			}
			if st.Features == nil {
				st.Features = make(map[string]int16)
			}
			st.Features[u.Feature] = u.MaxVersionLevel
		}
		st.FeaturesEpoch++
		return nil
	})
	var fe *featureUpdateError
	switch {
	case errors.As(err, &fe):
		resp.ErrorCode = kerr.InvalidUpdateVersion.Code
		resp.ErrorMessage = kmsg.StringPtr("The update failed for all features since the following feature had an error: " + fe.msg)
		return respond(resp)
	case err != nil && !errors.Is(err, errValidateOnly):
		resp.ErrorCode = errorCode(fmt.Errorf("update features: %w: %w", kerr.KafkaStorageError, err))
		resp.ErrorMessage = kmsg.StringPtr(err.Error())
		return respond(resp)
	}
	if req.Version <= 1 {
		for _, u := range req.FeatureUpdates {
			r := kmsg.NewUpdateFeaturesResponseResult()
			r.Feature = u.Feature
			resp.Results = append(resp.Results, r)
		}
	}
	return respond(resp)
}

// checkFeatureUpdate returns why setting name to level with upgrade type
// typ is refused, in Kafka's words, or "".
func (b *Broker) checkFeatureUpdate(st *cluster.State, name string, level int16, typ int8) string {
	invalid := func(msg string) string {
		return fmt.Sprintf("Invalid update version %d for feature %s. %s", level, name, msg)
	}
	if typ < upgradeTypeUpgrade || typ > upgradeTypeUnsafeDowngrade {
		return invalid("The controller does not support the given upgrade type.")
	}
	spec, known := featureSpecFor(name)
	current := int16(0)
	if known {
		current = spec.initial
		if lvl, ok := st.Features[name]; ok {
			current = lvl
		}
	}
	if level < 0 {
		return invalid("A feature version cannot be less than 0.")
	}
	switch {
	case !known && level != 0:
		return invalid(fmt.Sprintf("Local controller %d does not support this feature.", b.cfg.NodeID))
	case known && (level < spec.min || level > spec.max):
		return invalid(fmt.Sprintf("Local controller %d only supports versions %s", b.cfg.NodeID, versionRange(spec.min, spec.max)))
	}
	if level < current && typ == upgradeTypeUpgrade {
		return invalid("Can't downgrade the version of this feature without setting the upgrade type to either safe or unsafe downgrade.")
	}
	if level > current && typ != upgradeTypeUpgrade {
		return invalid("Can't downgrade to a newer version.")
	}
	if name == featureMetadataVersion && level < current {
		if typ == upgradeTypeUnsafeDowngrade {
			return fmt.Sprintf("Invalid metadata.version %d. Unsafe metadata downgrade is not supported in this version.", level)
		}
		return fmt.Sprintf("Invalid metadata.version %d. Refusing to perform the requested downgrade because it might delete metadata information.", level)
	}
	return ""
}
