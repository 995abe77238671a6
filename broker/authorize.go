package broker

// Authorization hooks of the handlers: each asks what Kafka's KafkaApis
// asks (SECURITY-REFERENCE.md §5) through these helpers, which allow
// everything when no authorizer is configured. Authorization comes before
// existence checks, so an unauthorized unknown topic reports an
// authorization error, never UNKNOWN_TOPIC_OR_PARTITION.

import (
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/security/acl"
)

// Resource types and operations, with Kafka's codes.
const (
	resTopic   = kmsg.ACLResourceTypeTopic
	resGroup   = kmsg.ACLResourceTypeGroup
	resCluster = kmsg.ACLResourceTypeCluster
	resTxnID   = kmsg.ACLResourceTypeTransactionalId

	opRead            = kmsg.ACLOperationRead
	opWrite           = kmsg.ACLOperationWrite
	opCreate          = kmsg.ACLOperationCreate
	opDelete          = kmsg.ACLOperationDelete
	opAlter           = kmsg.ACLOperationAlter
	opDescribe        = kmsg.ACLOperationDescribe
	opClusterAction   = kmsg.ACLOperationClusterAction
	opDescribeConfigs = kmsg.ACLOperationDescribeConfigs
	opAlterConfigs    = kmsg.ACLOperationAlterConfigs
	opIdempotentWrite = kmsg.ACLOperationIdempotentWrite
)

// allowed reports whether c's principal may do op on the resource; true
// without an authorizer. Denials are logged at info (Kafka's audit log);
// the production logger samples repeated lines.
func (b *Broker) allowed(c *conn, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	az := b.security.authz
	if az == nil {
		return true
	}
	if az.Authorize(c.principal, c.host, op, typ, name) {
		return true
	}
	c.lg.Info("authorization denied", zap.String("principal", c.principal), zap.Stringer("operation", op),
		zap.Stringer("resource_type", typ), zap.String("resource", name))
	return false
}

// allowedCluster is allowed on the CLUSTER resource.
func (b *Broker) allowedCluster(c *conn, op kmsg.ACLOperation) bool {
	return b.allowed(c, op, resCluster, acl.ClusterName)
}

// authorizedOps is the KIP-430 bit field of a resource for c: every
// supported operation without an authorizer.
func (b *Broker) authorizedOps(c *conn, typ kmsg.ACLResourceType, name string) int32 {
	if az := b.security.authz; az != nil {
		return az.Operations(c.principal, c.host, typ, name)
	}
	return acl.AllOperations(typ)
}

// connHost is the peer's IP address as Kafka prints it
// (acl.HostAddress), which host-restricted ACLs are matched against.
func connHost(nc net.Conn) string {
	if a, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		return acl.HostAddress(a.IP)
	}
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	return acl.HostAddress(net.ParseIP(host))
}

// clusterOps is the cluster's authorized operations for c: 0 without
// DESCRIBE on the cluster, as Kafka.
func (b *Broker) clusterOps(c *conn) int32 {
	if !b.allowedCluster(c, opDescribe) {
		return 0
	}
	return b.authorizedOps(c, resCluster, acl.ClusterName)
}

// idempotentAllowed is InitProducerId's check for an idempotent producer:
// IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679).
func (b *Broker) idempotentAllowed(c *conn) bool {
	az := b.security.authz
	if az == nil || b.allowedCluster(c, opIdempotentWrite) {
		return true
	}
	return az.AuthorizeAny(c.principal, c.host, opWrite, resTopic)
}

// configsAllowed is the check of Describe/Alter/IncrementalAlterConfigs
// for one resource (Kafka's ConfigHelper): op on the topic, the group, or
// the cluster for broker and logger resources; nil when allowed.
func (b *Broker) configsAllowed(c *conn, op kmsg.ACLOperation, typ kmsg.ConfigResourceType, name string) *kerr.Error {
	switch typ {
	case kmsg.ConfigResourceTypeTopic:
		if !b.allowed(c, op, resTopic, name) {
			return kerr.TopicAuthorizationFailed
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !b.allowed(c, op, resGroup, name) {
			return kerr.GroupAuthorizationFailed
		}
	default:
		if !b.allowedCluster(c, op) {
			return kerr.ClusterAuthorizationFailed
		}
	}
	return nil
}
