package broker

// DescribeAcls, CreateAcls and DeleteAcls (keys 29–31), every version kmsg
// knows, as Kafka's AclApis and AclControlManager.
//
// Without an authorizer (authorizer.class.name empty) they answer
// SECURITY_DISABLED, as Kafka does: the top level of DescribeAcls, every
// creation, every filter; never an empty success, which would claim ACLs
// are enforced (MirrorMaker 2 and admin UIs rely on this answer to skip
// ACL work).
//
// With the authorizer: DescribeAcls needs DESCRIBE on the cluster,
// Create/DeleteAcls ALTER (else CLUSTER_AUTHORIZATION_FAILED). Filters with
// an UNKNOWN field and bindings Kafka would refuse (type ANY, pattern other
// than LITERAL/PREFIXED, operation ANY, permission ANY, empty name, a
// cluster not named kafka-cluster, a principal that is not Type:name) are
// INVALID_REQUEST; creating an existing binding is a successful no-op.
// Changes are durable before the answer. v0 knows no pattern type: LITERAL.
//
// Hosts are any string, as in Kafka; only "*" and the client's address
// string as Kafka prints it ever match (security/acl).

import (
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/security/acl"
)

// noAuthorizer is Kafka's message for SECURITY_DISABLED.
const noAuthorizer = "No Authorizer is configured on the broker"

func (b *Broker) handleDescribeAcls(c *conn, req *kmsg.DescribeACLsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeACLsResponse)
	az := b.security.authz
	switch {
	case az == nil:
		resp.ErrorCode, resp.ErrorMessage = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizer)
		return respond(resp)
	case !b.allowedCluster(c, opDescribe):
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	f := acl.Filter{ResourceType: req.ResourceType, ResourceName: req.ResourceName, PatternType: req.ResourcePatternType,
		Principal: req.Principal, Host: req.Host, Operation: req.Operation, Permission: req.PermissionType}
	if req.Version == 0 {
		f.PatternType = kmsg.ACLResourcePatternTypeLiteral
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error())
		return respond(resp)
	}
	type key struct {
		typ  kmsg.ACLResourceType
		name string
		pat  kmsg.ACLResourcePatternType
	}
	index := map[key]int{}
	for _, bd := range az.Describe(&f) {
		k := key{bd.ResourceType, bd.ResourceName, bd.PatternType}
		i, ok := index[k]
		if !ok {
			r := kmsg.NewDescribeACLsResponseResource()
			r.ResourceType, r.ResourceName, r.ResourcePatternType = k.typ, k.name, k.pat
			resp.Resources = append(resp.Resources, r)
			i = len(resp.Resources) - 1
			index[k] = i
		}
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
		resp.Resources[i].ACLs = append(resp.Resources[i].ACLs, a)
	}
	return respond(resp)
}

func (b *Broker) handleCreateAcls(c *conn, req *kmsg.CreateACLsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.CreateACLsResponse)
	resp.Results = make([]kmsg.CreateACLsResponseResult, len(req.Creations))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewCreateACLsResponseResult()
	}
	setErr := func(i int, code int16, msg *string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
	}
	valid, at := aclEntries(b, c, req.Creations, func(cr kmsg.CreateACLsRequestCreation) acl.Binding {
		bd := acl.Binding{ResourceType: cr.ResourceType, ResourceName: cr.ResourceName, PatternType: cr.ResourcePatternType,
			Principal: cr.Principal, Host: cr.Host, Operation: cr.Operation, Permission: cr.PermissionType}
		if req.Version == 0 {
			bd.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		return bd
	}, setErr)
	if len(valid) == 0 {
		return respond(resp)
	}
	if err := b.security.authz.Create(valid); err != nil {
		b.lg.Error("create ACLs", zap.Error(err))
		for _, i := range at {
			setErr(i, kerr.UnknownServerError.Code, nil)
		}
	}
	return respond(resp)
}

func (b *Broker) handleDeleteAcls(c *conn, req *kmsg.DeleteACLsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DeleteACLsResponse)
	resp.Results = make([]kmsg.DeleteACLsResponseResult, len(req.Filters))
	for i := range resp.Results {
		resp.Results[i] = kmsg.NewDeleteACLsResponseResult()
	}
	setErr := func(i int, code int16, msg *string) {
		resp.Results[i].ErrorCode, resp.Results[i].ErrorMessage = code, msg
	}
	filters, at := aclEntries(b, c, req.Filters, func(rf kmsg.DeleteACLsRequestFilter) acl.Filter {
		f := acl.Filter{ResourceType: rf.ResourceType, ResourceName: rf.ResourceName, PatternType: rf.ResourcePatternType,
			Principal: rf.Principal, Host: rf.Host, Operation: rf.Operation, Permission: rf.PermissionType}
		if req.Version == 0 {
			f.PatternType = kmsg.ACLResourcePatternTypeLiteral
		}
		return f
	}, setErr)
	if len(filters) == 0 {
		return respond(resp)
	}
	deleted, err := b.security.authz.Delete(filters)
	if err != nil {
		code := kerr.UnknownServerError.Code
		if errors.Is(err, acl.ErrTooManyDeletions) {
			code = kerr.InvalidRequest.Code
		} else {
			b.lg.Error("delete ACLs", zap.Error(err))
		}
		for _, i := range at {
			setErr(i, code, kmsg.StringPtr(err.Error()))
		}
		return respond(resp)
	}
	for j, i := range at {
		for _, bd := range deleted[j] {
			m := kmsg.NewDeleteACLsResponseResultMatchingACL()
			m.ResourceType, m.ResourceName, m.ResourcePatternType = bd.ResourceType, bd.ResourceName, bd.PatternType
			m.Principal, m.Host, m.Operation, m.PermissionType = bd.Principal, bd.Host, bd.Operation, bd.Permission
			resp.Results[i].MatchingACLs = append(resp.Results[i].MatchingACLs, m)
		}
	}
	return respond(resp)
}

// aclEntries is what CreateAcls and DeleteAcls share: every entry of the
// request (a binding to create, a filter to delete by) fails with
// SECURITY_DISABLED without an authorizer, or with
// CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster; otherwise
// each entry is converted by conv and validated, an invalid one fails
// with INVALID_REQUEST and its reason, and the valid ones come back with
// their positions in the request. setErr records an entry's failure in
// the response.
func aclEntries[In, Out any, P interface {
	*Out
	Validate() error
}](b *Broker, c *conn, in []In, conv func(In) Out, setErr func(i int, code int16, msg *string)) (valid []Out, at []int) {
	var code int16
	var msg *string
	switch {
	case b.security.authz == nil:
		code, msg = kerr.SecurityDisabled.Code, kmsg.StringPtr(noAuthorizer)
	case !b.allowedCluster(c, opAlter):
		code = kerr.ClusterAuthorizationFailed.Code
	}
	if code != 0 {
		for i := range in {
			setErr(i, code, msg)
		}
		return nil, nil
	}
	for i, e := range in {
		out := conv(e)
		if err := P(&out).Validate(); err != nil {
			setErr(i, kerr.InvalidRequest.Code, kmsg.StringPtr(err.Error()))
			continue
		}
		valid, at = append(valid, out), append(at, i)
	}
	return valid, at
}
