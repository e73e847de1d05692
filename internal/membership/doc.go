// Package membership is the cluster's member model as pure state machines: a node's
// view of the members (Membership), the members' ages (NextUpNumber), the
// serf tags each member describes itself with (EncodeTags, DecodeTags), the events the
// view implies, and the down-removal margin (Margins).
//
// Nothing here starts a goroutine, reads a clock or does I/O: each method takes one
// observation (and the time, where timing matters) and returns the events that follow.
// Package cluster runs them inside its core actor. The types a user reads (Member,
// UniqueAddress, MemberStatus, the events, CurrentClusterState) are package member's.
//
// # Rules the view keeps
//
//   - Statuses only move forward (Joining, Up, Leaving, Exiting, Down, Removed), and
//     Removed is reached only from Exiting or Down.
//   - No member becomes Up before min-nr-of-members have joined.
//   - A removed identity never comes back; a new incarnation on a member's address
//     replaces the old one, which is downed.
//   - Every node that sees the same members agrees on the oldest, overall and per role:
//     a member's age is chosen once, when it becomes Up (NextUpNumber), and never
//     changes.
//
//troupe:core
package membership
