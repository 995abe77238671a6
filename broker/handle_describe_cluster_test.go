package broker

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func describeClusterAt(t *testing.T, srv *InProcess, version int16, endpoint int8, ops bool) *kmsg.DescribeClusterResponse {
	t.Helper()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version = version
	req.EndpointType = endpoint
	req.IncludeClusterAuthorizedOperations = ops
	return adminRequest[*kmsg.DescribeClusterResponse](t, srv, req)
}

func TestDescribeCluster(t *testing.T) {
	srv := newTestServer(t, func(c *Config) { c.ClusterID = "test-cluster"; c.NodeID = 3 })
	for v := int16(0); v <= kmsgMax(60); v++ {
		resp := describeClusterAt(t, srv, v, endpointBroker, false)
		if resp.ErrorCode != 0 || resp.ClusterID != "test-cluster" || resp.ControllerID != 3 || resp.ClusterAuthorizedOperations != -2147483648 {
			t.Fatalf("v%d: %+v", v, resp)
		}
		if len(resp.Brokers) != 1 || resp.Brokers[0].NodeID != 3 || resp.Brokers[0].Host != srv.listeners[0].advHost ||
			resp.Brokers[0].Port != srv.listeners[0].advPort || resp.Brokers[0].Rack != nil || resp.Brokers[0].IsFenced {
			t.Fatalf("v%d brokers: %+v", v, resp.Brokers)
		}
	}
	if resp := describeClusterAt(t, srv, 1, endpointBroker, true); resp.ClusterAuthorizedOperations != clusterAuthorizedOps {
		t.Fatalf("authorized operations %b", resp.ClusterAuthorizedOperations)
	}
}

// TestDescribeClusterViaMetadata: kadm describes the cluster through
// Metadata; both agree.
func TestDescribeClusterViaMetadata(t *testing.T) {
	srv := newTestServer(t, nil)
	md, err := newAdmin(t, srv).BrokerMetadata(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	dc := describeClusterAt(t, srv, 2, endpointBroker, false)
	if md.Cluster != dc.ClusterID || md.Controller != dc.ControllerID || len(md.Brokers) != 1 ||
		md.Brokers[0].NodeID != dc.Brokers[0].NodeID || md.Brokers[0].Port != dc.Brokers[0].Port {
		t.Fatalf("metadata %+v, describe cluster %+v", md, dc)
	}
}

func TestDescribeClusterEndpointType(t *testing.T) {
	srv := newTestServer(t, nil)
	for _, tc := range []struct {
		version  int16
		endpoint int8
		want     *kerr.Error
	}{
		{1, endpointController, kerr.MismatchedEndpointType},
		{1, 9, kerr.UnsupportedEndpointType},
		{2, 0, kerr.UnsupportedEndpointType},
	} {
		resp := describeClusterAt(t, srv, tc.version, tc.endpoint, false)
		if resp.ErrorCode != tc.want.Code || resp.ErrorMessage == nil || len(resp.Brokers) != 0 {
			t.Fatalf("v%d endpoint %d: %+v", tc.version, tc.endpoint, resp)
		}
	}
	// v0 has no endpoint type on the wire; Kafka answers INVALID_REQUEST
	// where later versions have the endpoint codes.
	c := testConn(t, srv)
	req := kmsg.NewPtrDescribeClusterRequest()
	req.EndpointType = endpointController
	res, _ := srv.handleDescribeCluster(c, req)
	if code := res.resp.(*kmsg.DescribeClusterResponse).ErrorCode; code != kerr.InvalidRequest.Code {
		t.Fatalf("v0: error %d", code)
	}
}

func TestDescribeClusterRoundTrip(t *testing.T) {
	srv := newTestServer(t, nil)
	checkRoundTrip(t, srv, func(int16) kmsg.Request {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.IncludeClusterAuthorizedOperations = true
		return req
	})
	checkRoundTrip(t, srv, func(int16) kmsg.Request {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.EndpointType = endpointController
		return req
	})
}
