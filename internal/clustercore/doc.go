// Package clustercore composes the cluster's pure cores, the member view
// (membership.Membership), the removal margins (membership.Margins), the reachability
// table and heartbeat monitor (package reachability) and the split-brain resolver
// (package sbr), into one state machine: what a node does when serf reports a member,
// when it joins, leaves, is downed or refused, when a margin passes, when its
// reachability observations change (RefreshReachability) and when its resolver decides
// (Decide, LeaseResult).
//
// Its inputs are plain values: serf's member events translated into a Kind and a
// decoded member.Member, down decisions, and the current time, always an argument.
// Each input returns the Effects that follow, in the order they must happen: events
// to publish (with the state a subscriber then reads), this member's tags to publish,
// members to quarantine and forget, reachability detail to publish and rows to push,
// decisions to spread, the lease to acquire, this node's stop. Package cluster's core
// actor translates serf's events, sends and answers heartbeats (feeding the Monitor),
// merges gossiped rows (into the Table), carries the effects out, runs the timers and
// holds the lease.
//
// Nothing here starts a goroutine, reads a clock or does I/O.
//
// # Rules it keeps
//
//   - A removed identity never comes back: serf's later news of it is ignored.
//   - A downed member is removed at once (a downed node stops its cluster services);
//     its work is taken over only after the removal margin (RemovalMarginPassed).
//   - A member seen Leaving or Exiting that serf reports failed has left: serf says
//     "failed" rather than "left" when the leave intent was lost. It is removed as
//     having left (through Exiting), not left to the resolver.
//   - A member that left or was downed is quarantined when it is removed: for good
//     when it was downed, harmlessly (it knows) when it left.
//   - This member moves itself Up only once it has joined and min-nr-of-members are in;
//     a member that joined an existing cluster also waits until it sees a member Up.
//   - A live member that refuses this incarnation has applied a Down of it: this node
//     downs itself.
//   - The resolver decides only once the members and the unreachable set it sees
//     have been unchanged for StableAfter (or, when reachability never settles,
//     downs everything after DownAllWhenUnstable); another observer confirming what
//     is already known is no change.
//
//troupe:core
package clustercore
