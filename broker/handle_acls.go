package broker

// DescribeAcls, CreateAcls and DeleteAcls (keys 29–31), every version kmsg
// knows. kbroker has no authorizer yet, so, as Kafka without
// authorizer.class.name (AclApis), they answer SECURITY_DISABLED: the top
// level of DescribeAcls, every creation and every filter. Never an empty
// success, which would claim ACLs are enforced.

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// noAuthorizer is Kafka's message for SECURITY_DISABLED.
const noAuthorizer = "No Authorizer is configured on the broker"

func (b *Broker) handleDescribeAcls(c *conn, req *kmsg.DescribeACLsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizer)
	return respond(resp)
}

func (b *Broker) handleCreateAcls(c *conn, req *kmsg.CreateACLsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	for range req.Creations {
		r := kmsg.NewCreateACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizer)
		resp.Results = append(resp.Results, r)
	}
	return respond(resp)
}

func (b *Broker) handleDeleteAcls(c *conn, req *kmsg.DeleteACLsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	for range req.Filters {
		r := kmsg.NewDeleteACLsResponseResult()
		r.ErrorCode, r.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizer)
		resp.Results = append(resp.Results, r)
	}
	return respond(resp)
}
