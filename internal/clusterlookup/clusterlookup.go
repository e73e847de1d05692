// Package clusterlookup finds the cluster node of an actor system, for the layers above
// the cluster (sharding) until the cluster package offers cluster.Get(sys) itself. Who
// starts a cluster node registers it here (tests, examples); the package goes away once
// cluster.Get exists.
package clusterlookup

import (
	"sync"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
)

var nodes = struct {
	mu sync.Mutex
	m  map[*actor.System]*cluster.Cluster
}{m: map[*actor.System]*cluster.Cluster{}}

// Set registers c as the cluster node of sys; nil forgets it.
func Set(sys *actor.System, c *cluster.Cluster) {
	nodes.mu.Lock()
	defer nodes.mu.Unlock()
	if c == nil {
		delete(nodes.m, sys)
		return
	}
	nodes.m[sys] = c
}

// Get returns the cluster node of sys, or nil.
func Get(sys *actor.System) *cluster.Cluster {
	nodes.mu.Lock()
	defer nodes.mu.Unlock()
	return nodes.m[sys]
}
