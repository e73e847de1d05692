package hooks

import (
	"sync"

	"github.com/hashicorp/memberlist"
	"github.com/troupe-go/troupe/actor"
)

// GossipWrapper wraps a cluster node's serf transport; testkit/multinode uses one to
// drop gossip between nodes it partitions.
type GossipWrapper func(memberlist.NodeAwareTransport) memberlist.NodeAwareTransport

type gossipSlot struct {
	mu   sync.Mutex
	wrap GossipWrapper
}

var gossipExt = actor.NewExtensionID("troupe.internal.hooks.gossip", func(*actor.System) *gossipSlot { return &gossipSlot{} })

// SetGossipWrapper makes the cluster started later in sys wrap its serf transport with
// wrap.
func SetGossipWrapper(sys *actor.System, wrap GossipWrapper) {
	s := gossipExt.Get(sys)
	s.mu.Lock()
	s.wrap = wrap
	s.mu.Unlock()
}

// GossipWrapperOf returns the wrapper set for sys, or nil.
func GossipWrapperOf(sys *actor.System) GossipWrapper {
	s := gossipExt.Get(sys)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.wrap
}
