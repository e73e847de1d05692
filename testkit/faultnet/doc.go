// Package faultnet is a network of Troupe nodes in one process that a test, or a
// program that shows how a cluster copes with failures, can break. It plugs into the
// public seams of the transports: remote.Config's Dial and Listen, and
// cluster.Config's Transport (serf's gossip). Each node is named; the faults are set
// per link and direction, between names:
//
//   - Cut(from, to) loses what from sends to: its gossip packets are dropped and its
//     gossip streams refused, and every remote connection on which from has something
//     to write to fails (is closed), as a TCP connection does when one direction
//     drops its packets; from's new connections to to are refused. The remote
//     transport between the two is therefore cut both ways, while gossip is cut one
//     way (serf routes around that with its indirect probes).
//   - CutGossip(from, to) drops from's gossip to to only.
//   - Blackhole(from, to) swallows what from writes to to on remote connections, with
//     no error (a connection that swallowed something stays silent until it is
//     closed), makes from's new connections to to hang until their dial gives up, and
//     drops gossip: the failure that only timeouts and failure detectors notice.
//   - Slow(from, to, d) delays every write from makes to to on a remote connection by
//     d, keeping their order.
//   - Restore(from, to) ends the faults of that direction, Heal every link's.
//   - Isolate(name) cuts all of a node's links both ways and closes its connections,
//     as a pulled cable or a killed process; Reconnect(name) ends it.
//
// Setting a Cut, Blackhole or Isolate closes the remote connections it concerns, so
// that nothing written before it is still in flight; Restore and Heal close the
// connections that swallowed writes, so that the transport dials afresh.
//
// Connections are told apart by the addresses the nodes listen and dial from, so
// every node of a Network must run in this process with its own seams from Node; a
// connection from elsewhere is never faulted. testkit/multinode builds its clusters
// on it.
package faultnet
