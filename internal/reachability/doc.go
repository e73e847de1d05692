// Package reachability is the cluster's own failure detection, beside serf's, as pure
// state machines: Monitor decides whom a node heartbeats (a ring, so that every member
// is watched by a few others) and judges the answers with a phi-accrual detector, and
// Table holds who cannot reach whom, with a version per observer, so that the nodes
// can gossip their observations and merge them, after Akka's reachability table.
//
// Heartbeats travel over the remote transport, the path the application's messages
// take, so a link that loses them is a link that loses messages; serf's gossip, with
// its indirect probes through other members, would route around a link that fails in
// one direction only. A member is unreachable when any observer reports it so. A member
// that some observers cannot reach while it observes others (its observations still
// arrive) is indirectly connected; package sbr decides what to do about it.
//
// Nothing here starts a goroutine, reads a clock or does I/O.
//
//troupe:core
package reachability
