package share

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share session epochs (ShareRequestMetadata): 0 opens a session, -1
// closes it; in between each request carries the epoch after the last.
const (
	InitialSessionEpoch = 0
	FinalSessionEpoch   = -1
)

// TopicIDPartition names a partition by topic id.
type TopicIDPartition struct {
	TopicID   TopicID
	Partition int32
}

type sessionKey struct{ group, member string }

// session is a member's share session (KIP-932's share fetch sessions,
// Kafka's ShareSession): the partitions it fetches from, so that later
// requests name only what changed, and the epoch the next request must
// carry.
type session struct {
	epoch int32
	parts []TopicIDPartition
	// owner is the connection that opened the session: Kafka ties a share
	// session to its connection and ends it when the connection closes.
	owner any
}

// SessionRequest is what a ShareFetch or ShareAcknowledge says about its
// session.
type SessionRequest struct {
	Group, Member string
	Epoch         int32
	// Add are the partitions the request names (a ShareFetch's topics);
	// Forget those it drops (ForgottenTopicsData).
	Add, Forget []TopicIDPartition
	// Fetch is true for ShareFetch, false for ShareAcknowledge, which
	// may not open a session.
	Fetch bool
	// Owner identifies the connection the request came on (comparable).
	Owner any
}

// Session applies a request to the member's share session, as Kafka's
// SharePartitionManager.newContext and acknowledgeSessionUpdate: epoch 0
// opens (or replaces) the session with the request's partitions, -1
// closes it (the caller then releases the member's records), any other
// epoch must be the one the session expects (INVALID_SHARE_SESSION_EPOCH;
// SHARE_SESSION_NOT_FOUND without a session) and moves it on. It returns
// the partitions to fetch from.
func (c *Coordinator) Session(r SessionRequest) ([]TopicIDPartition, *kerr.Error) {
	if r.Group == "" || r.Member == "" {
		return nil, kerr.InvalidRequest
	}
	k := sessionKey{r.Group, r.Member}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.mu.sessions[k]
	switch r.Epoch {
	case InitialSessionEpoch:
		if !r.Fetch {
			return nil, kerr.InvalidShareSessionEpoch
		}
		if s == nil && len(c.mu.sessions) >= c.cfg.MaxSessions {
			return nil, kerr.ShareSessionLimitReached
		}
		s = &session{epoch: 1, owner: r.Owner}
		c.mu.sessions[k] = s
	case FinalSessionEpoch:
		if s == nil {
			return nil, kerr.ShareSessionNotFound
		}
		delete(c.mu.sessions, k)
		return nil, nil
	default:
		if s == nil {
			return nil, kerr.ShareSessionNotFound
		}
		if r.Epoch != s.epoch {
			return nil, kerr.InvalidShareSessionEpoch
		}
		s.epoch++
		if s.epoch < 0 {
			s.epoch = 1
		}
	}
	for _, tp := range r.Add {
		if !slices.Contains(s.parts, tp) {
			s.parts = append(s.parts, tp)
		}
	}
	if len(r.Forget) > 0 {
		s.parts = slices.DeleteFunc(s.parts, func(tp TopicIDPartition) bool { return slices.Contains(r.Forget, tp) })
	}
	return slices.Clone(s.parts), nil
}

// CloseSession ends a member's share session and releases its records, as
// a ShareFetch or ShareAcknowledge with the final epoch does once its
// acknowledgements are applied.
func (c *Coordinator) CloseSession(groupID, memberID string) {
	c.mu.Lock()
	delete(c.mu.sessions, sessionKey{groupID, memberID})
	c.mu.Unlock()
	c.releaseMember(groupID, memberID)
}

// CloseOwned ends every share session that owner (a connection) opened and
// releases their members' records, as Kafka does when a connection
// closes, so that a member that went away does not hold records until
// their locks expire.
func (c *Coordinator) CloseOwned(owner any) {
	var gone []sessionKey
	c.mu.Lock()
	for k, s := range c.mu.sessions {
		if s.owner == owner {
			gone = append(gone, k)
			delete(c.mu.sessions, k)
		}
	}
	c.mu.Unlock()
	for _, k := range gone {
		c.releaseMember(k.group, k.member)
	}
}
