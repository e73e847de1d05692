// Package cluster is Troupe's cluster membership: Akka's member model (status, roles,
// app version, age and reachability) carried on hashicorp/serf, cluster events, and a
// split-brain resolver that downs members instead of serf's timers.
//
// # A node
//
// Start joins an actor system with remoting to a cluster:
//
//	r, _ := remote.Start(sys, remote.Config{Registry: reg, ListenPort: 2552})
//	c, err := cluster.Start(sys, cluster.Config{
//		Remote:    r,
//		SeedNodes: []string{"10.0.0.5:7946"}, // gossip addresses of running members
//	})
//	c.Subscribe(ref) // CurrentClusterState first, then every event in order
//
// serf gossips on its own port (GossipPort) and carries each member in its tags:
// the remote address, the incarnation uid, the status the member reports for itself,
// its age, roles and app version (EncodeTags, versioned). A member with malformed tags
// is ignored with a log line.
//
// # Member lifecycle
//
// A member starts Joining and moves itself Up once MinNrOfMembers (overall and per
// role) have joined; RegisterOnMemberUp callbacks run then. When it becomes Up it picks
// its age (NextUpNumber: its clock in milliseconds, but above every age it has seen) and
// never changes it, so every node that sees the same members agrees on the oldest
// (Oldest, OldestChanged), overall and per role: the singleton and the sharding
// coordinator live there. Leave (run by coordinated shutdown in the cluster-leave
// phase) makes the member Leaving, then serf's leave makes it Exiting and Removed on
// every node, in that order.
//
// serf's failure detector makes a member Unreachable, never Removed: an unreachable
// member stays until the split-brain resolver (or Down by hand) downs it. A removed
// identity never comes back; a node restarted on the same address is a new
// incarnation (a new uid) and a new member.
//
// # Split-brain resolver
//
// When some members are unreachable and membership has not changed for StableAfter,
// Decide picks the surviving side: keep-majority (the default; an exactly equal split
// keeps the side with the lowest address), static-quorum, keep-oldest or down-all. The
// surviving side downs the others and spreads the decision; a node on the losing side
// downs itself, stops its cluster services and, unless KeepSystemWhenDowned, shuts its
// actor system down. With no unreachable member nothing is ever downed.
//
// # Remote integration
//
// Membership replaces the transport's heartbeat failure detector for members: when a
// member is removed, its incarnation is quarantined in the remote transport, so every
// watched actor there gets Terminated with AddressTerminated.
//
// # Pure state machines
//
// The protocols are plain types without goroutines or I/O, tested with table tests:
// Membership (the view and the events it implies), Decide and Resolver (downing),
// EncodeTags and DecodeTags (fuzzed). The node (Start) is a thin actor around them that
// does serf's I/O. testkit/multinode runs several nodes in one test process and
// injects partitions and crashes.
package cluster
