// Package sbr is the split-brain resolver as a pure state machine: Decide picks the
// members to down from a node's view of the members and the reachability table, and
// Resolver adds when a decision is due (stable-after, down-all-when-unstable) and the
// lease-majority protocol.
//
// The resolver runs on every node and there is no leader: a decision is a function of
// the members and of the reachability observations, and of which node computes it only
// through the observations of members across a broken link from that node (it cannot
// reach them, or they cannot reach it), which it sets aside unless another member of
// its side still reaches them both ways (then the link failed, not the network, and the
// node decides as the bystanders do). In a clean partition each side decides on its
// own side's observations, and
// the strategies are mirror images (one side downs the other exactly when the other
// downs itself). When observations cross the sides (some links work) the nodes that
// reach each other converge on the same table and take the same decision, and a node
// downs itself when the decision lists it. Under lease-majority only the member
// responsible for its side acts.
//
// The first decision taken on a side is the side's decision: a node that applies a
// decision that reached it from another member counts it as its own for
// down-all-when-unstable. The members of a side may know different members (one that
// joined a moment before the partition is known to some only); a node left with
// members unreachable that the decider did not know decides on them after its own
// stable-after wait, instead of downing its own side for instability.
//
// Nothing here starts a goroutine, reads a clock or does I/O; package cluster feeds it
// from its core actor and sets one timer to Step.Next.
//
//troupe:core
package sbr
