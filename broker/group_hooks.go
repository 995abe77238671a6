package broker

import "github.com/kbroker/kbroker/group"

// onGroupState hears the group coordinator's state changes.
func (b *Broker) onGroupState(groupID string, s group.State) {}
