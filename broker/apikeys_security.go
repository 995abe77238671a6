package broker

// securityAPIs are authentication and authorization: SaslHandshake,
// SaslAuthenticate, the SCRAM credential APIs (KIP-554) and the ACL APIs.
// The ACL APIs are served without an authorizer, answering
// SECURITY_DISABLED as Kafka does: MirrorMaker 2 and admin UIs rely on
// that answer to skip ACL work instead of failing.
func securityAPIs() []api {
	return []api{
		{key: 17, min: 0, max: 1, handle: typed((*Broker).handleSaslHandshake)},
		{key: 36, min: 0, max: 2, handle: typed((*Broker).handleSaslAuthenticate)},
		{key: 29, min: 0, max: kmsgMax(29), handle: typed((*Broker).handleDescribeAcls)},
		{key: 30, min: 0, max: kmsgMax(30), handle: typed((*Broker).handleCreateAcls)},
		{key: 31, min: 0, max: kmsgMax(31), handle: typed((*Broker).handleDeleteAcls)},
		{key: 50, min: 0, max: 0, handle: typed((*Broker).handleDescribeUserScramCredentials)},
		{key: 51, min: 0, max: 0, handle: typed((*Broker).handleAlterUserScramCredentials)},
	}
}
