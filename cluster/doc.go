// Package cluster is Troupe's cluster membership: Akka's member model (status, roles,
// app version, age and reachability) carried on hashicorp/serf, cluster events, and a
// split-brain resolver that downs members instead of serf's timers, with the margins
// that keep a singleton or a shard from running on both sides of a partition.
//
// # A node
//
// Start joins an actor system, with remoting started, to a cluster; Get finds it again:
//
//	remote.Start(sys, remote.Config{Registry: reg, ListenPort: 2552})
//	c, err := cluster.Start(sys, cluster.Config{
//		SeedNodes: []string{"10.0.0.5:7946"}, // gossip addresses of running members
//	})
//	err = c.WaitUp(ctx)    // this member is Up (or why not: the join failed, ctx ended)
//	err = c.Subscribe(ref) // a CurrentClusterState first, then every event in order
//
// The member's address is the transport's (troupe://system@host:port); serf gossips on
// a port of its own (GossipPort), and every member carries in its serf tags its address,
// incarnation uid, the status it reports for itself, its age, roles and app version.
// Joining through the seed nodes happens in the background: JoinProgress says how it
// goes, WaitUp waits for it, and failed attempts are logged. Every node should have the
// same seed nodes, the same first: only the first seed node forms a new cluster, and
// only when no other seed node is in one, so a restarted first seed joins the cluster
// the others run. Each cluster has an identity (ClusterID) that its members carry, and
// two clusters never merge: gossip from a member of another cluster is refused and
// logged as an error.
//
// The cluster uses the transport Start finds in the system (remote.Get): it hands it
// the failure detection of members and quarantines removed members' incarnations
// there. Config.Transport is the seam for serf's own network: it makes the memberlist
// transport serf gossips over (memberlist's NetTransport by default), for special
// networks or fault injection (testkit/faultnet drops gossip per link through it).
//
// # Bootstrap by discovery
//
// Where the addresses are not known in advance (Kubernetes), Config.Bootstrap finds
// the nodes through a discovery.Discovery instead of SeedNodes, as Akka's Cluster
// Bootstrap: every LookupInterval a node looks its contact points up and contacts them.
// If one is in a cluster, the node joins it at once. If none is, only the node with the
// lowest address forms a cluster, once the set has been unchanged for StableMargin, holds
// at least RequiredContactPoints, includes this node, and every other contact point
// answered; the others join it. A failed lookup keeps the last set and restarts the
// margin. With RequiredContactPoints set to the replica count one deployment forms one
// cluster whatever the timing; with fewer, nodes that see different sets for longer
// than StableMargin can form two. Bootstrap never gives up; JoinProgress says why it
// waits.
//
// # Member lifecycle
//
// A member starts Joining and moves itself Up once MinNrOfMembers (overall and per
// role) have joined; RegisterOnMemberUp callbacks run then. When it becomes Up it
// picks its age and never changes it, so every node that sees the same members agrees
// on the oldest (OldestChanged, CurrentClusterState.Oldest), overall and per role: the
// singleton and the sharding coordinator live there. Leave (run by coordinated
// shutdown in the cluster-leave phase) makes the member Leaving, then Exiting and
// Removed on every node, in that order. A removed identity never comes back; a node
// restarted on the same address is a new incarnation and a new member.
//
// # Reachability
//
// Two failure detectors run side by side. serf probes every member (with indirect
// probes through others), and each member heartbeats about five others over the remote
// transport, the path the application's messages take, chosen on a ring so that every
// member is watched by about five; a phi-accrual detector judges the answers. Each
// member gossips what it observes (Akka's reachability table: observer, subject and a
// version per observer) to the others over the remote transport. A member is
// unreachable (UnreachableMember) when one of its heartbeat observers says so, or the
// serf of a member that does not heartbeat it; it is reachable again when none does.
// A member that some observers cannot reach while it still observes others (its
// observations arrive, so some links work) is indirectly connected: a link fails in one
// direction, say, which serf's indirect probes hide.
//
// # Split-brain resolver
//
// An unreachable member is never removed by a timer alone. When membership and
// reachability have not changed for StableAfter, the resolver on every node decides
// which side survives (keep-majority by default; static-quorum, keep-oldest, down-all,
// lease-majority): the surviving side downs the others and spreads the decision; a node
// on the losing side downs itself, stops its cluster services and, unless
// KeepSystemWhenDowned, shuts its actor system down. Indirectly connected members are
// downed, and the strategy decides the clean partition beside them. When reachability
// keeps changing for StableAfter plus DownAllWhenUnstable (three quarters of it by
// default), every member is downed rather than deciding on a view that never settles;
// a decision that reaches a node from another member of its side counts as its own, so
// the first node of a side to decide decides for the side. Validate refuses a StableAfter shorter than twice the timing's detection spread
// (Timing.DetectionSpread).
//
// # The down-removal margin
//
// A downed member is removed at once, but the other side of a partition decides on its
// own schedule and needs a moment to stop. So a removal is followed by
// RemovalMarginPassed: at once after a graceful leave, and after DownRemovalMargin
// (StableAfter by default; Cluster.DownRemovalMargin returns the one in force) after a
// downing; meanwhile CurrentClusterState lists the member under AwaitingRemovalMargin. Take a removed member's work over (start its
// singleton, reallocate its shards) on RemovalMarginPassed, never on MemberRemoved.
// What this promises: the downed side has stopped its cluster services by then, as long
// as both sides' failure detection works within the detection spread (StableAfter is at
// least twice it) and the downed node is not paused (a garbage collection, a stopped
// VM) for longer than the margin; a lease (lease-majority) removes the reliance on
// timing for the decision itself. A downed member that the decision itself missed
// learns it from the others: each member that applies a Down quarantines the member's
// incarnation, the transport refuses it from then on, and a node refused by a member it
// counts as live downs itself, about a HeartbeatInterval after the first removal.
//
// # Metrics
//
// With actor.Config.MeterProvider set, the node reports the members it sees by status,
// the unreachable ones, and its split-brain resolver's decisions by strategy and
// action (troupe.cluster.*, listed in docs/operations.md).
//
// # What can be lost, and when
//
//   - Messages to a removed member: when a member is removed (after a leave or a
//     downing) its incarnation is quarantined in the transport, so every message to it
//     fails with remote.ErrQuarantined and becomes a dead letter, and every actor
//     watched there is reported Terminated with AddressTerminated. Watches fire at the
//     removal, before the margin: do not take work over on them.
//   - Messages to an unreachable member: the transport keeps them queued (bounded by
//     its outbound queue) until the member answers again or is removed; the cluster's
//     own heartbeats and gossip to it are lost the same way, which is how it is found
//     unreachable.
//   - Events to a subscriber: a subscriber whose Tell fails (a full mailbox, a remote
//     subscriber that cannot be reached) misses that event; it has become a dead
//     letter, and the cluster counts it and logs it (at most a line every 10s, with
//     the count of the lines left out). A subscriber that stops is unsubscribed; events
//     that reach it before then are dead letters, counted but not logged (expected).
//   - A Down decision on its way to the downed member: the decider's notice and serf's
//     user event can both miss it (the decider's path to it is cut, and gossip
//     retransmits a user event only a few times). The member then learns it from the
//     refusal of its next connection by a member that applied the Down, and downs
//     itself (logged as a warning naming that member).
//   - Gossip this node cannot use (malformed or oversized reachability gossip, a
//     malformed down notice, an oversized welcome answer, an Up notice of a member
//     its tags could not carry, a member with malformed tags) is dropped, counted and logged the same way.
//   - A joining member's welcome requests and their answers (docs/cluster.md, how a
//     joining member moves itself Up): one that is lost (to a crashed or partitioned
//     member, or before the answering member knows the joiner) is a dead letter,
//     counted and not logged; the joining member asks again every heartbeat interval
//     and stays Joining until every counted member has answered (WaitUp waits for it).
//     Its notice that it moved Up is sent once; one that is lost leaves that member
//     to learn it from serf's gossip, within a full state exchange (30 s). Members of
//     Troupe v0.1.0 are neither asked nor told (they do not speak these messages).
//   - A member of another cluster (another ClusterID in its tags) that reaches this
//     node's serf: it is never admitted (a member this node knew under that name is
//     downed), and the first time it is seen it is logged as an error naming both
//     clusters. Clusters never merge; its nodes must restart and join this one.
//
// # Pure cores
//
// The protocols are plain types without goroutines or I/O, table-tested in internal
// packages: the member view, tags and margins (internal/membership), the reachability
// table and heartbeat monitor (internal/reachability, with the failure detector of
// internal/phi), and the resolver (internal/sbr), composed by internal/clustercore,
// which a seeded simulation drives through partitions, leaves and crashes. The node
// (Start) is a thin actor around it that does serf's and the transport's I/O. The
// types a user reads are package member's, under the same names here. testkit/multinode runs several nodes in one test process, or as
// processes in network namespaces with real link faults.
package cluster
