package broker

// DescribeCluster v0–v2 (KIP-700), as Kafka 4's
// AuthHelper.computeDescribeClusterResponse on a broker.
//
// The cluster id, this broker as controller (a KRaft broker names an alive
// broker; here the only one) and the one broker. EndpointType (v1+) must be
// 1, brokers: 2, controllers, is MISMATCHED_ENDPOINT_TYPE (INVALID_REQUEST
// in v0) and anything else UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST in
// v0), with Kafka's messages. ClusterAuthorizedOperations is
// -2147483648 unless asked for; then, as Kafka without an authorizer,
// every cluster operation.
//
// Deviations from Apache Kafka: none known. The broker is never fenced.
//
// Versions: v1 endpoint type (KIP-919); v2 include_fenced_brokers and
// is_fenced (KIP-1073).

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Endpoint types of DescribeCluster (Kafka's EndpointType).
const (
	endpointBroker     = 1
	endpointController = 2
)

func (b *Broker) handleDescribeCluster(c *conn, req *kmsg.DescribeClusterRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	if code, msg := endpointTypeError(req); code != 0 {
		resp.ErrorCode, resp.ErrorMessage = code, kmsg.StringPtr(msg)
		return respond(resp)
	}
	resp.ClusterID = b.cfg.ClusterID
	resp.ControllerID = b.controllerID()
	if req.IncludeClusterAuthorizedOperations {
		resp.ClusterAuthorizedOperations = b.clusterOps(c)
	}
	if b.nodes == nil {
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID = b.cfg.NodeID
		br.Host, br.Port = c.advertised()
		resp.Brokers = []kmsg.DescribeClusterResponseBroker{br}
		return respond(resp)
	}
	for _, id := range b.nodes.liveIDs() {
		br := kmsg.NewDescribeClusterResponseBroker()
		br.NodeID = id
		br.Host, br.Port = b.endpoint(id, c.l.index)
		resp.Brokers = append(resp.Brokers, br)
	}
	return respond(resp)
}

// endpointTypeError checks the requested endpoint type against a broker.
func endpointTypeError(req *kmsg.DescribeClusterRequest) (int16, string) {
	switch req.EndpointType {
	case endpointBroker:
		return 0, ""
	case endpointController:
		code := kerr.MismatchedEndpointType.Code
		if req.Version == 0 {
			code = kerr.InvalidRequest.Code
		}
		return code, "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
	}
	code := kerr.UnsupportedEndpointType.Code
	if req.Version == 0 {
		code = kerr.InvalidRequest.Code
	}
	return code, fmt.Sprintf("Unsupported endpoint type %d", req.EndpointType)
}
