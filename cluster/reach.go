package cluster

import (
	"math/rand/v2"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/reachability"
	"github.com/troupe-go/troupe/internal/wiretypes"
	"github.com/troupe-go/troupe/member"
)

// The messages members exchange over the remote transport, between their cluster
// actors. They are Troupe's own wire types: every registry knows them.
type (
	// heartbeat asks the member ToUID at its heartbeat responder for an answer.
	heartbeat struct {
		From   member.UniqueAddress
		ToUID  uint64
		SentAt int64 // the sender's clock, in Unix nanoseconds; echoed in the answer
	}
	// heartbeatRsp answers a heartbeat.
	heartbeatRsp struct {
		From   member.UniqueAddress
		SentAt int64
	}
	// reachGossip carries the sender's reachability table (or its own row).
	reachGossip struct {
		From member.UniqueAddress
		Rows []reachability.Row
	}
	// downNotice spreads a down decision (as serf's user events do, by another path).
	downNotice struct {
		Down []member.UniqueAddress
	}
	// welcomeReq asks a member whether it knows From, a member that joined and waits
	// to move itself Up until every counted member does.
	welcomeReq struct {
		From member.UniqueAddress
	}
	// welcomeAck answers welcomeReq: From knows the member that asked, counts
	// Counted, and sees a member unreachable or not.
	welcomeAck struct {
		From        member.UniqueAddress
		Counted     []member.UniqueAddress
		Unreachable bool
	}
	// upNotice tells the members a joining member waited for that it moved itself
	// Up: Member is that member as its serf tags now publish it, which gossip may bring
	// to some member only at the next full exchange.
	upNotice struct {
		Member member.Member
	}
)

// SuppressDeadLetterLog: members exchange these all the time, and those sent to a
// member that is leaving, crashed or was removed die as expected dead letters (counted,
// not logged). What an operator must know of such a member is logged once by the
// cluster (downed, removed) and the transport (quarantined).
func (heartbeat) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as heartbeat's.
func (heartbeatRsp) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as heartbeat's.
func (reachGossip) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as heartbeat's (a down decision goes to every member, the
// downed one included).
func (downNotice) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as heartbeat's (a joining member asks every tick until each
// counted member has answered, a crashed one included).
func (welcomeReq) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as heartbeat's.
func (welcomeAck) SuppressDeadLetterLog() {}

// SuppressDeadLetterLog: as heartbeat's (serf's gossip brings the same news).
func (upNotice) SuppressDeadLetterLog() {}

func init() {
	wiretypes.MustRegister[heartbeat]("troupe.cluster.Heartbeat")
	wiretypes.MustRegister[heartbeatRsp]("troupe.cluster.HeartbeatRsp")
	wiretypes.MustRegister[reachGossip]("troupe.cluster.Reachability")
	wiretypes.MustRegister[downNotice]("troupe.cluster.Down")
	wiretypes.MustRegister[welcomeReq]("troupe.cluster.WelcomeReq")
	wiretypes.MustRegister[welcomeAck]("troupe.cluster.WelcomeAck")
	wiretypes.MustRegister[upNotice]("troupe.cluster.UpNotice")
}

// Timer messages of the core.
type (
	heartbeatTick struct{}
	gossipTick    struct{}
	checkTimer    struct{}
)

// Limits on gossip from other nodes: larger tables are refused.
const (
	maxGossipRows     = 10_000
	maxGossipSubjects = 10_000
	gossipFanout      = 3 // members the table goes to every HeartbeatInterval
)

// heartbeatName is the name of the heartbeat responder, a child of the cluster actor.
const heartbeatName = "heartbeat"

// peer holds Refs to another member's cluster actor and heartbeat responder.
type peer struct {
	core, heartbeat actor.Ref
}

// peerOf resolves (once) the Refs to member u's actors.
func (k *core) peerOf(u UniqueAddress) (peer, bool) {
	if p, ok := k.peers[u]; ok {
		return p, true
	}
	core, err := k.c.sys.Resolve(u.Addr + "/system/cluster")
	if err != nil {
		k.drops.note(k.c.log, "cannot address a member's cluster actor", err)
		return peer{}, false
	}
	hb, err := k.c.sys.Resolve(u.Addr + "/system/cluster/" + heartbeatName)
	if err != nil {
		k.drops.note(k.c.log, "cannot address a member's heartbeat responder", err)
		return peer{}, false
	}
	p := peer{core: core, heartbeat: hb}
	k.peers[u] = p
	return p, true
}

// sendHeartbeats sends a heartbeat to every monitored member. One that cannot be
// sent (the transport refused it and made it a dead letter) simply goes unanswered.
func (k *core) sendHeartbeats(ctx actor.Context, now time.Time) {
	for _, u := range k.mon.Targets() {
		if p, ok := k.peerOf(u); ok {
			_ = ctx.Send(p.heartbeat, heartbeat{From: k.c.self.Unique, ToUID: u.UID, SentAt: now.UnixNano()})
		}
	}
}

// onHeartbeatRsp records an answer; it reports whether it ended serf's observation
// that the member failed (the member answered a heartbeat sent after serf said so).
func (k *core) onHeartbeatRsp(m heartbeatRsp, now time.Time) bool {
	return k.cc.HeartbeatAnswered(m.From, time.Unix(0, m.SentAt), now)
}

// checkMonitor judges the monitored members at now and reports whether one changed
// reachability.
func (k *core) checkMonitor(now time.Time) bool { return k.cc.CheckMonitor(now) }

// refreshReachability brings the reachability state up to date (see
// clustercore.Core.RefreshReachability).
func (k *core) refreshReachability(ctx actor.Context, now time.Time) {
	k.run(ctx, k.cc.RefreshReachability(now))
}

// pushOwnRow sends this node's changed row to every live member at once, so that a
// new observation spreads in one hop wherever the links allow; the periodic gossip
// repairs what this misses.
func (k *core) pushOwnRow(ctx actor.Context) {
	msg := reachGossip{From: k.c.self.Unique, Rows: []reachability.Row{k.table.Own()}}
	for _, m := range k.ms.Members() {
		if m.Unique == k.c.self.Unique || m.Status == Down {
			continue
		}
		if p, ok := k.peerOf(m.Unique); ok {
			_ = ctx.Send(p.core, msg)
		}
	}
}

// askWelcome sends this member's welcome request to each member of to.
func (k *core) askWelcome(ctx actor.Context, to []UniqueAddress) {
	for _, u := range to {
		if p, ok := k.peerOf(u); ok {
			_ = ctx.Send(p.core, welcomeReq{From: k.c.self.Unique})
		}
	}
}

// announceUp tells each member of to that this member, self, moved itself Up.
func (k *core) announceUp(ctx actor.Context, to []UniqueAddress, self Member) {
	for _, u := range to {
		if p, ok := k.peerOf(u); ok {
			_ = ctx.Send(p.core, upNotice{Member: self})
		}
	}
}

// onWelcomeReq answers a joining member's welcome request if this node knows it.
func (k *core) onWelcomeReq(ctx actor.Context, m welcomeReq) {
	if !k.cc.Live(m.From) { // a member this node knows, not Down
		return // not yet: it asks again
	}
	if p, ok := k.peerOf(m.From); ok {
		w := k.cc.Welcome()
		_ = ctx.Send(p.core, welcomeAck{From: k.c.self.Unique, Counted: w.Counted, Unreachable: w.Unreachable})
	}
}

// gossip sends the whole table to a few live members this node can reach itself.
// Rows travel through any member that has them, so an observation reaches a member
// whose direct link to the observer is broken.
func (k *core) gossip(ctx actor.Context) {
	own := make(map[UniqueAddress]bool)
	for _, u := range k.table.Own().Unreachable {
		own[u] = true
	}
	var to []UniqueAddress
	for _, m := range k.ms.Members() {
		if m.Unique != k.c.self.Unique && m.Status != Down && !own[m.Unique] {
			to = append(to, m.Unique)
		}
	}
	if len(to) == 0 {
		return
	}
	rand.Shuffle(len(to), func(i, j int) { to[i], to[j] = to[j], to[i] })
	msg := reachGossip{From: k.c.self.Unique, Rows: k.table.Rows()}
	for _, u := range to[:min(gossipFanout, len(to))] {
		if p, ok := k.peerOf(u); ok {
			_ = ctx.Send(p.core, msg)
		}
	}
}

// onGossip merges another node's rows. Rows by members this node does not know (yet)
// are left out: the periodic gossip brings them again. Observations about members it
// does not know yet are kept, and count once the member is known; those about removed
// identities are dropped. It reports whether the table changed.
func (k *core) onGossip(m reachGossip) bool {
	if len(m.Rows) > maxGossipRows {
		k.drops.note(k.c.log, "reachability gossip refused: too many rows", nil)
		return false
	}
	for _, r := range m.Rows {
		if len(r.Unreachable) > maxGossipSubjects || r.Observer.UID == 0 || r.Observer.Addr == "" {
			k.drops.note(k.c.log, "reachability gossip refused: malformed row", nil)
			return false
		}
	}
	return k.cc.MergeRows(m.Rows)
}

// heartbeatResponder answers heartbeats addressed to this incarnation. It is a child
// of the cluster actor, so that a busy cluster actor does not delay the answers.
type heartbeatResponder struct {
	self UniqueAddress
}

func (h *heartbeatResponder) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(heartbeat); ok && m.ToUID == h.self.UID {
		_ = ctx.Respond(heartbeatRsp{From: h.self, SentAt: m.SentAt})
	}
}
