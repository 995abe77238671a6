package broker

// DescribeUserScramCredentials v0 and AlterUserScramCredentials v0
// (KIP-554), as Kafka's ScramControlManager and ScramImage.
//
// Describe: no users (null or empty) lists every user with a credential;
// per user the mechanisms and iterations, never salts or keys;
// RESOURCE_NOT_FOUND for a user without credentials, DUPLICATE_RESOURCE for
// a user named twice.
//
// Alter: the client salts the password (kadm AlterUserSCRAMs,
// kafka-configs.sh); the broker derives StoredKey and ServerKey and drops
// the salted password. One result per user; a user named twice in one
// request (any mix of upsertions and deletions) is DUPLICATE_RESOURCE; an
// empty name or iterations outside 4096–16384 UNACCEPTABLE_CREDENTIAL; an
// unknown mechanism UNSUPPORTED_SASL_MECHANISM; deleting a missing
// credential RESOURCE_NOT_FOUND. The valid changes are written together,
// durably, before the answer. The salted password is password-equivalent
// and travels in the request: as Kafka, this is allowed on any listener;
// use a TLS listener where that matters.
//
// Deviations from Apache Kafka: with no authorizer (kbroker has none yet)
// anyone who can connect may call them, as on Kafka without one.

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/kbroker/kbroker/security/authn"
)

func (b *Broker) handleDescribeUserScramCredentials(c *conn, req *kmsg.DescribeUserSCRAMCredentialsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	store := b.security.store
	if !b.allowedCluster(c, opDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return respond(resp)
	}
	if len(req.Users) == 0 {
		for _, u := range store.Describe() {
			resp.Results = append(resp.Results, scramResult(u))
		}
		return respond(resp)
	}
	count := map[string]int{}
	for _, u := range req.Users {
		count[u.Name]++
	}
	done := map[string]bool{}
	for _, u := range req.Users {
		if done[u.Name] {
			continue
		}
		done[u.Name] = true
		r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		r.User = u.Name
		switch infos := store.Describe(u.Name); {
		case count[u.Name] > 1:
			r.ErrorCode = kerr.DuplicateResource.Code
			r.ErrorMessage = kmsg.StringPtr("Cannot describe SCRAM credentials for the same user twice in a single request: " + u.Name)
		case len(infos) == 0:
			r.ErrorCode = kerr.ResourceNotFound.Code
			r.ErrorMessage = kmsg.StringPtr("Attempt to describe a user credential that does not exist: " + u.Name)
		default:
			r = scramResult(infos[0])
		}
		resp.Results = append(resp.Results, r)
	}
	return respond(resp)
}

// scramResult describes one user's credentials.
func scramResult(u authn.UserInfo) kmsg.DescribeUserSCRAMCredentialsResponseResult {
	r := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
	r.User = u.Name
	for _, mech := range []string{authn.ScramSHA256, authn.ScramSHA512} {
		if it, ok := u.Mechanisms[mech]; ok {
			ci := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
			ci.Mechanism, ci.Iterations = authn.MechanismCode(mech), int32(it)
			r.CredentialInfos = append(r.CredentialInfos, ci)
		}
	}
	return r
}

func (b *Broker) handleAlterUserScramCredentials(c *conn, req *kmsg.AlterUserSCRAMCredentialsRequest) (result, error) {
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	store := b.security.store
	if !b.allowedCluster(c, opAlter) {
		seen := map[string]bool{}
		add := func(name string) {
			if !seen[name] {
				seen[name] = true
				r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				r.User, r.ErrorCode = name, kerr.ClusterAuthorizationFailed.Code
				resp.Results = append(resp.Results, r)
			}
		}
		for _, d := range req.Deletions {
			add(d.Name)
		}
		for _, u := range req.Upsertions {
			add(u.Name)
		}
		return respond(resp)
	}
	count := map[string]int{}
	var order []string
	for _, d := range req.Deletions {
		if count[d.Name] == 0 {
			order = append(order, d.Name)
		}
		count[d.Name]++
	}
	for _, u := range req.Upsertions {
		if count[u.Name] == 0 {
			order = append(order, u.Name)
		}
		count[u.Name]++
	}
	type verdict struct {
		code int16
		msg  string
	}
	verdicts := map[string]verdict{}
	fail := func(name string, err *kerr.Error, msg string) {
		if _, ok := verdicts[name]; !ok {
			verdicts[name] = verdict{err.Code, msg}
		}
	}
	for name, n := range count {
		if n > 1 {
			fail(name, kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
		}
	}
	var dels []authn.Deletion
	for _, d := range req.Deletions {
		mech := authn.MechanismName(d.Mechanism)
		switch {
		case d.Name == "":
			fail(d.Name, kerr.UnacceptableCredential, "Username must not be empty")
		case mech == "":
			fail(d.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
		case len(store.Describe(d.Name)) == 0 || store.Describe(d.Name)[0].Mechanisms[mech] == 0:
			fail(d.Name, kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
		}
		if _, bad := verdicts[d.Name]; !bad {
			dels = append(dels, authn.Deletion{User: d.Name, Mechanism: mech})
		}
	}
	var ups []authn.Upsert
	for _, u := range req.Upsertions {
		up := authn.Upsert{User: u.Name, Mechanism: authn.MechanismName(u.Mechanism), Iterations: int(u.Iterations),
			Salt: u.Salt, SaltedPassword: u.SaltedPassword}
		if err := authn.CheckUpsert(up); err != nil {
			switch {
			case errors.Is(err, authn.ErrUnknownMechanism):
				fail(u.Name, kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
			case errors.Is(err, authn.ErrTooManyIterations):
				fail(u.Name, kerr.UnacceptableCredential, fmt.Sprintf("Iterations must be between %d and %d", authn.MinIterations, authn.MaxIterations))
			case u.Name == "":
				fail(u.Name, kerr.UnacceptableCredential, "Username must not be empty")
			default:
				fail(u.Name, kerr.UnacceptableCredential, "Salt and salted password must not be empty")
			}
		}
		if _, bad := verdicts[u.Name]; !bad {
			ups = append(ups, up)
		}
	}
	if len(ups)+len(dels) > 0 {
		if err := store.Apply(ups, dels); err != nil {
			// Not durable: nothing changed; every valid entry fails.
			b.lg.Error("alter SCRAM credentials", zap.Error(err))
			for _, name := range order {
				fail(name, kerr.UnknownServerError, "The credentials could not be stored")
			}
		}
	}
	for _, name := range order {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = name
		if v, ok := verdicts[name]; ok {
			r.ErrorCode, r.ErrorMessage = v.code, kmsg.StringPtr(v.msg)
		}
		resp.Results = append(resp.Results, r)
	}
	return respond(resp)
}
