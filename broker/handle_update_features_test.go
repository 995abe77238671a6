package broker

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// finalized returns the finalized features of an ApiVersions v3 answer.
func finalized(t *testing.T, w *wireConn) (map[string]int16, map[string][2]int16, int64) {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "test", "1"
	resp := w.do(req).(*kmsg.ApiVersionsResponse)
	fin := make(map[string]int16)
	for _, f := range resp.FinalizedFeatures {
		if f.MinVersionLevel != f.MaxVersionLevel {
			t.Errorf("finalized %s: min %d, max %d; KRaft reports one level", f.Name, f.MinVersionLevel, f.MaxVersionLevel)
		}
		fin[f.Name] = f.MaxVersionLevel
	}
	sup := make(map[string][2]int16)
	for _, f := range resp.SupportedFeatures {
		sup[f.Name] = [2]int16{f.MinVersion, f.MaxVersion}
	}
	return fin, sup, resp.FinalizedFeaturesEpoch
}

func hasKey(t *testing.T, w *wireConn, key int16) bool {
	t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 3, "test", "1"
	for _, k := range w.do(req).(*kmsg.ApiVersionsResponse).ApiKeys {
		if k.ApiKey == key {
			return true
		}
	}
	return false
}

// TestUpdateFeatures checks the finalized features in ApiVersions, Kafka's
// refusals, that group.version turns the consumer protocol off and on, and
// that a change survives a restart.
func TestUpdateFeatures(t *testing.T) {
	rs := newRestartable(t, nil)
	srv := rs.running
	w := dialWire(t, srv)
	fin, sup, epoch := finalized(t, w)
	if fin[featureMetadataVersion] != metadataVersionLevel || fin[featureGroupVersion] != 1 || fin[featureShareVersion] != 1 ||
		fin[featureTxnVersion] != 2 || fin[featureStreamsVersion] != 1 || len(fin) != 5 || epoch != 0 {
		t.Fatalf("initial finalized features %v epoch %d", fin, epoch)
	}
	if sup[featureGroupVersion] != [2]int16{0, 1} || sup[featureMetadataVersion] != [2]int16{metadataVersionMin, metadataVersionLevel} ||
		sup[featureTxnVersion] != [2]int16{0, 2} {
		t.Fatalf("supported features %v", sup)
	}

	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	refused := []struct {
		u    kadm.FeatureUpdate
		want string
	}{
		{kadm.FeatureUpdate{Feature: "no.such.version", MaxVersionLevel: 1, UpgradeType: 1}, "Local controller 0 does not support this feature."},
		{kadm.FeatureUpdate{Feature: featureTxnVersion, MaxVersionLevel: 3, UpgradeType: 1}, "Local controller 0 only supports versions 0-2"},
		{kadm.FeatureUpdate{Feature: featureGroupVersion, MaxVersionLevel: 2, UpgradeType: 1}, "Local controller 0 only supports versions 0-1"},
		{kadm.FeatureUpdate{Feature: featureGroupVersion, MaxVersionLevel: 0, UpgradeType: 1}, "without setting the upgrade type"},
		{kadm.FeatureUpdate{Feature: featureELRVersion, MaxVersionLevel: 1, UpgradeType: 2}, "Can't downgrade to a newer version."},
		{kadm.FeatureUpdate{Feature: featureGroupVersion, MaxVersionLevel: -1, UpgradeType: 2}, "cannot be less than 0"},
		{kadm.FeatureUpdate{Feature: featureGroupVersion, MaxVersionLevel: 0, UpgradeType: 9}, "does not support the given upgrade type"},
		{kadm.FeatureUpdate{Feature: featureMetadataVersion, MaxVersionLevel: 20, UpgradeType: 2}, "Invalid metadata.version 20. Refusing"},
	}
	for _, c := range refused {
		req := kmsg.NewPtrUpdateFeaturesRequest()
		req.Version = 1
		req.FeatureUpdates = []kmsg.UpdateFeaturesRequestFeatureUpdate{{Feature: c.u.Feature, MaxVersionLevel: c.u.MaxVersionLevel, UpgradeType: c.u.UpgradeType}}
		resp := w.do(req).(*kmsg.UpdateFeaturesResponse)
		if resp.ErrorCode != kerr.InvalidUpdateVersion.Code || resp.ErrorMessage == nil || !strings.Contains(*resp.ErrorMessage, c.want) ||
			!strings.HasPrefix(*resp.ErrorMessage, "The update failed for all features") || len(resp.Results) != 0 {
			t.Errorf("%+v: %d %v, want INVALID_UPDATE_VERSION with %q", c.u, resp.ErrorCode, resp.ErrorMessage, c.want)
		}
	}

	// Validate only: nothing changes.
	if res, err := adm.UpdateFeatures(ctx, true, kadm.FeatureUpdate{Feature: featureGroupVersion, MaxVersionLevel: 0, UpgradeType: 2}); err != nil || res[featureGroupVersion].Err != nil {
		t.Fatalf("validate-only downgrade: %v %v", res, err)
	}
	if fin, _, _ := finalized(t, w); fin[featureGroupVersion] != 1 {
		t.Fatal("a validate-only update changed group.version")
	}
	// group.version 0 turns the consumer group protocol off.
	res, err := adm.UpdateFeatures(ctx, false,
		kadm.FeatureUpdate{Feature: featureGroupVersion, MaxVersionLevel: 0, UpgradeType: 2},
		kadm.FeatureUpdate{Feature: featureELRVersion, MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || res[featureGroupVersion].Err != nil || res[featureELRVersion].Err != nil {
		t.Fatalf("downgrade group.version, upgrade ELR: %v %v", res, err)
	}
	fin, _, epoch = finalized(t, w)
	if _, ok := fin[featureGroupVersion]; ok || fin[featureELRVersion] != 1 || epoch != 1 {
		t.Fatalf("after the update: %v epoch %d", fin, epoch)
	}
	if hasKey(t, w, int16(kmsg.ConsumerGroupHeartbeat)) {
		t.Fatal("ConsumerGroupHeartbeat advertised with group.version 0")
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "g", "m", 0, 5000
	hb.SubscribedTopicNames = []string{"t"}
	if code := w.do(hb).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode; code != kerr.UnsupportedVersion.Code {
		t.Fatalf("ConsumerGroupHeartbeat with group.version 0: %v", kerr.ErrorForCode(code))
	}

	// The levels survive a restart.
	srv = rs.restart()
	w = dialWire(t, srv)
	fin, _, epoch = finalized(t, w)
	if _, ok := fin[featureGroupVersion]; ok || fin[featureELRVersion] != 1 || epoch != 1 {
		t.Fatalf("after a restart: %v epoch %d", fin, epoch)
	}
	res, err = newAdmin(t, srv).UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: featureGroupVersion, MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || res[featureGroupVersion].Err != nil {
		t.Fatalf("upgrade group.version: %v %v", res, err)
	}
	if !hasKey(t, w, int16(kmsg.ConsumerGroupHeartbeat)) {
		t.Fatal("ConsumerGroupHeartbeat not advertised with group.version 1")
	}
}

// TestStreamsVersionFeature: streams.version 0 turns streams groups off
// (not advertised, UNSUPPORTED_VERSION), 1 back on.
func TestStreamsVersionFeature(t *testing.T) {
	t.Parallel()
	srv := newTestServer(t, nil)
	w := dialWire(t, srv)
	adm := newAdmin(t, srv)
	ctx := testCtx(t)
	if !hasKey(t, w, int16(kmsg.StreamsGroupHeartbeat)) || !hasKey(t, w, int16(kmsg.StreamsGroupDescribe)) {
		t.Fatal("streams keys not advertised with streams.version 1")
	}
	res, err := adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: featureStreamsVersion, MaxVersionLevel: 0, UpgradeType: 2})
	if err != nil || res[featureStreamsVersion].Err != nil {
		t.Fatalf("downgrade streams.version: %v %v", res, err)
	}
	if hasKey(t, w, int16(kmsg.StreamsGroupHeartbeat)) || hasKey(t, w, int16(kmsg.StreamsGroupDescribe)) {
		t.Fatal("streams keys advertised with streams.version 0")
	}
	hb := streamsJoin("app", "m1", "p1")
	if code := w.do(hb).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode; code != kerr.UnsupportedVersion.Code {
		t.Fatalf("StreamsGroupHeartbeat with streams.version 0: %v", kerr.ErrorForCode(code))
	}
	res, err = adm.UpdateFeatures(ctx, false, kadm.FeatureUpdate{Feature: featureStreamsVersion, MaxVersionLevel: 1, UpgradeType: 1})
	if err != nil || res[featureStreamsVersion].Err != nil {
		t.Fatalf("upgrade streams.version: %v %v", res, err)
	}
	if !hasKey(t, w, int16(kmsg.StreamsGroupHeartbeat)) {
		t.Fatal("StreamsGroupHeartbeat not advertised with streams.version 1")
	}
}
