// Package sbr is the split-brain resolver as a pure state machine: Decide picks the
// members to down from a node's view of the members and the reachability table, and
// Resolver adds when a decision is due (stable-after, down-all-when-unstable) and the
// lease-majority protocol.
//
// The resolver runs on every node and there is no leader: a decision is a function of
// the members and of the reachability observations, not of which node computes it. In
// a clean partition each side's table holds only its own side's observations, and the
// strategies are mirror images (one side downs the other exactly when the other downs
// itself). When observations cross the sides (some links work) every node converges on
// the same table and takes the same decision, and a node downs itself when the decision
// lists it. Under lease-majority only the member responsible for its side acts.
//
// Nothing here starts a goroutine, reads a clock or does I/O; package cluster feeds it
// from its core actor and sets one timer to Step.Next.
package sbr
