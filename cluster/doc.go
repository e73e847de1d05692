// Package cluster is Troupe's cluster membership: Akka's member model (status, roles,
// app version, age and reachability), cluster events, and a split-brain resolver, to be
// carried on hashicorp/serf.
//
// # What exists now
//
// The protocols, as pure state machines with no goroutines, clocks or network (the
// way DESIGN.md §6 asks), each tested with table tests:
//
//   - Member and UniqueAddress: a member's identity is its address plus an incarnation
//     uid, so a restarted node is a new member. Statuses move only forward: Joining, Up,
//     Leaving, Exiting, Down, Removed (MemberStatus.CanMoveTo).
//   - Age: Member.IsOlderThan orders members by UpNumber, then by address, and Oldest
//     picks the oldest Up or Leaving member, overall or with a role. There is no leader
//     to hand out up-numbers as in Akka; instead a member chooses its own age when it
//     becomes Up (NextUpNumber: its wall clock in milliseconds, but always above every
//     age it has seen) and publishes it in its tags, so every node reading the same tags
//     agrees on the oldest.
//   - Tags: EncodeTags and DecodeTags carry a member (version, address, uid, status,
//     age, roles, app version) in serf tags. Malformed tags are an error, never a panic;
//     DecodeTags has a fuzz target.
//   - Membership: one node's view. It takes observations (a member's tags, a leave, a
//     down, a removal, reachability changes) and returns the events to publish, in
//     order: MemberJoined, MemberUp, MemberLeft, MemberExited, MemberDowned,
//     MemberRemoved, UnreachableMember, ReachableMember and OldestChanged (overall and
//     per role). It gates Joining to Up on min-nr-of-members (overall and per role),
//     ignores illegal transitions and never lets a removed identity back in. State
//     returns the CurrentClusterState a new subscriber gets first.
//   - Split-brain resolver: Decide is a pure function from the members, the unreachable
//     set and the strategy (keep-majority by default, static-quorum, keep-oldest,
//     down-all) to the members to down, this node's side included when it loses. An
//     equal keep-majority split keeps the side with the lowest address. Resolver adds
//     the stable-after wait (StableTracker); with no unreachable member it never
//     decides anything.
//
// # What is coming
//
// The node itself: an actor that runs serf (gossip encryption with a keyring), turns
// serf's member events and tags into Membership inputs and its own status into tags,
// moves itself Up when MinMembersMet, runs the Resolver on a timer of
// Resolver.Remaining, spreads Down decisions, publishes events to subscribers,
// joins through seed nodes, leaves gracefully as a coordinated-shutdown phase, and tells
// remote to quarantine removed incarnations and terminate watches on them. Then
// testkit/multinode, docs/cluster.md and examples/cluster.
package cluster
