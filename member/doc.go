// Package member holds the cluster's domain types: who the members are and what
// happens to them. A Member is one node of the cluster as a node sees it: its identity
// (UniqueAddress: the address it is reached at and the uid of this incarnation), its
// status (MemberStatus: Joining, Up, Leaving, Exiting, Down, Removed, only ever moving
// forward), its roles, its application version and its age (UpNumber).
//
// The events (MemberJoined, MemberUp, ..., RemovalMarginPassed, UnreachableMember,
// ReachableMember, OldestChanged, and the detail events DowningDecision and
// ReachabilityChanged) are what package cluster publishes to its subscribers, after a
// CurrentClusterState snapshot. Package cluster gives the same types under the same
// names, so a program that uses the cluster needs no import of this package; the
// layers above the cluster (singleton, sharding, ddata) and the pure protocol cores
// under internal/ use these types without depending on the cluster's transport.
//
// Two orders are defined here and used everywhere: CompareAddress, the one order by
// address behind every "lowest address" rule, and CompareAge (Member.IsOlderThan),
// oldest first, by which every node that sees the same members agrees on the oldest
// (Oldest, OldestByRole), where the singleton and the sharding coordinator live.
//
// Nothing here does I/O or keeps state: these are values and functions of values.
package member
