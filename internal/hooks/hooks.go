// Package hooks connects Troupe's packages to each other, and to the test kits, outside
// their public APIs: the cluster reaches the running transport's quarantine and
// failure-detection hand-over through it, and testkit/multinode reaches the fault
// injection (abort, block, crash) that production types do not export. Each running
// component registers its hooks with its actor system when it starts.
package hooks

import (
	"sync"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
)

// Remote is what a running remote transport offers the cluster and the test kits.
type Remote interface {
	// Quarantine ends communication with incarnation uid of the system at addr, as if
	// the transport had decided it itself. left says the member left the cluster
	// gracefully: the quarantine is then news, logged at info, not a warning.
	Quarantine(addr actor.Address, uid uint64, reason string, left bool)
	// SetMembership hands failure detection for the addresses where managed returns
	// true to the cluster; nil gives every address back to the transport.
	SetMembership(managed func(actor.Address) bool)
	// OnQuarantinedBy registers f, which the transport calls whenever the system at an
	// address refuses a connection from this incarnation because it has quarantined
	// it; nil unregisters. f runs on one of the transport's goroutines and must not
	// block.
	OnQuarantinedBy(f func(by actor.Address))
	// Abort stops the transport at once, as a crashed process would: nothing queued
	// is flushed.
	Abort()
	// SetBlocked cuts (true) or restores (false) the connections with addr, as a
	// network partition would.
	SetBlocked(addr actor.Address, blocked bool)
	// Serialization returns the transport's registry and a resolver for the actor refs
	// inside messages, for layers that carry serialized messages inside their own
	// (the singleton's proxies and managers).
	Serialization() (*serialization.Registry, serialization.RefResolver)
	// MaxFrameSize returns the largest frame the transport sends (its configuration's,
	// with the default applied), for layers that pack several messages into one.
	MaxFrameSize() int
}

// Cluster is what a running cluster node offers the test kits and the layers above
// it.
type Cluster interface {
	// Crash stops the node's membership at once without leaving, as a killed process
	// would.
	Crash()
	// DownRemovalMargin returns the node's down-removal margin (its configuration's,
	// with the default applied): the singleton bounds its hand-over retries by it.
	DownRemovalMargin() time.Duration
}

type registry struct {
	mu      sync.Mutex
	remote  Remote
	cluster Cluster
}

var ext = actor.NewExtensionID("troupe.internal.hooks", func(*actor.System) *registry { return &registry{} })

// SetRemote registers sys's transport.
func SetRemote(sys *actor.System, r Remote) {
	reg := ext.Get(sys)
	reg.mu.Lock()
	reg.remote = r
	reg.mu.Unlock()
}

// RemoteOf returns sys's transport, or nil when remoting is not started.
func RemoteOf(sys *actor.System) Remote {
	reg := ext.Get(sys)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.remote
}

// BatchLimit returns the bytes a layer's batch of messages (the singleton's proxies',
// sharding's regions') may take in sys: at most limit, and within one frame of sys's
// transport (half of it, or all but what the frame's own fields need, whichever is
// more). Without a transport, frames are remote.Config's default, 256 KiB.
func BatchLimit(sys *actor.System, limit int) int {
	const frameReserve = 1 << 10 // a frame's header, recipient, sender and manifest
	frame := 256 << 10
	if r := RemoteOf(sys); r != nil {
		frame = r.MaxFrameSize()
	}
	return min(limit, max(frame-frameReserve, frame/2))
}

// SetCluster registers sys's cluster node.
func SetCluster(sys *actor.System, c Cluster) {
	reg := ext.Get(sys)
	reg.mu.Lock()
	reg.cluster = c
	reg.mu.Unlock()
}

// ClusterOf returns sys's cluster node, or nil when the cluster is not started.
func ClusterOf(sys *actor.System) Cluster {
	reg := ext.Get(sys)
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.cluster
}
