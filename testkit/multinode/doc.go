// Package multinode runs several Troupe nodes (actor system, remoting and cluster
// membership) in one test process on 127.0.0.1, and injects faults between them, as
// Akka's multi-node test kit does with its test conductor.
//
// Start starts N nodes on free ports, the first as the seed, and waits until every
// node sees every node Up. Partition cuts two groups of nodes apart in both serf's
// gossip (through a wrapping memberlist transport that drops packets and refuses
// dials) and the remote transport (its fault-injection hooks); Heal removes the cuts. Crash
// kills a node without a leave, and Restart starts it again on the same addresses as a
// new incarnation. Await waits for a condition on a node's view of the cluster,
// re-checking at each cluster event.
//
// A few tests should also run real OS processes: BuildNode builds the example node
// (examples/cluster), StartNode runs it on free loopback ports and reads its
// addresses, and a Process can be waited on for output lines, stopped gracefully
// (SIGTERM) or killed with SIGKILL.
//
// Nodes use cluster.TestTiming and a stable-after of 2s, so a failure is detected and
// resolved in a few seconds. (With 1s, on a loaded two-core machine under -race, the
// members of one side sometimes detected the other side's members more than a second
// apart, and a side decided on half a picture.) Everything is shut down at the end of the test.
package multinode
