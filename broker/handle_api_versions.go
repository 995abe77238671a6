package broker

// ApiVersions v0–v4 (KIP-35, KIP-511 client software name and version,
// KIP-584 features, v3+: features.go). The list is generated from apiTable. An unsupported
// version is answered by the connection loop with UNSUPPORTED_VERSION in a
// v0 body, as Kafka does, so that the client can retry with a version it
// finds there.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (b *Broker) handleApiVersions(c *conn, req *kmsg.ApiVersionsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.Version >= 3 && (!validClientSoftware(req.ClientSoftwareName) || !validClientSoftware(req.ClientSoftwareVersion)) {
		// Kafka answers the error alone: no keys, no features.
		resp.ErrorCode = kerr.InvalidRequest.Code
		return respond(resp)
	}
	b.fillApiVersions(resp)
	if req.Version >= 3 {
		b.fillFeatures(resp)
	}
	return respond(resp)
}

// fillFeatures reports the supported features and the finalized levels
// (features.go): a feature at level 0 is not finalized and left out, and
// a finalized level is both the minimum and the maximum, as in KRaft.
func (b *Broker) fillFeatures(resp *kmsg.ApiVersionsResponse) {
	st := b.cluster.Load()
	for _, f := range features {
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.min, f.max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
		lvl := f.initial
		if l, ok := st.Features[f.name]; ok {
			lvl = l
		}
		if lvl > 0 {
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, lvl, lvl
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	resp.FinalizedFeaturesEpoch = st.FeaturesEpoch
}

// fillApiVersions lists every served API key and version range, except
// those a setting hides (api.hidden).
func (b *Broker) fillApiVersions(resp *kmsg.ApiVersionsResponse) {
	for _, a := range b.apis {
		if a.hidden != nil && a.hidden(b) {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		if a.listedFromV0 {
			k.MinVersion = 0
		}
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
}

// validClientSoftware is Kafka's rule for the KIP-511 fields: non-empty,
// letters, digits, '.', '-' and nothing else, starting and ending with a
// letter or digit.
func validClientSoftware(s string) bool {
	if s == "" {
		return false
	}
	alnum := func(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' }
	if !alnum(s[0]) || !alnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !alnum(c) && c != '.' && c != '-' {
			return false
		}
	}
	return true
}
