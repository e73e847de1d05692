package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/serf/serf"
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/membership"
	"github.com/troupe-go/troupe/internal/reachability"
	"github.com/troupe-go/troupe/internal/sbr"
	"github.com/troupe-go/troupe/member"
	"go.uber.org/zap"
)

// Messages of the core actor.
type (
	serfEvent   struct{ ev serf.Event }
	subscribe   struct{ ref actor.Ref }
	unsubscribe struct{ ref actor.Ref }
	downRequest struct {
		u    UniqueAddress
		addr string // instead of u: the member at this address, whatever its uid
	}
	leaveRequest struct{ reply chan error }
	leaveDone    struct {
		err   error
		reply chan error
	}
	// joinedNotice says that this node is in a cluster now: it formed it (founder)
	// or joined it.
	joinedNotice struct{ founder bool }
	// quarantinedBy says that the system at addr refused a connection from this
	// incarnation because it has quarantined it.
	quarantinedBy struct{ addr string }
)

// SuppressDeadLetterLog: the transport reports refusals until it stops, and the core
// may have stopped first (at the end of a shutdown): an expected dead letter.
func (quarantinedBy) SuppressDeadLetterLog() {}

// Keys of the core's timers.
const (
	timerHeartbeat = "heartbeat"
	timerGossip    = "gossip"
	timerCheck     = "check"
	timerResolver  = "resolver"
	timerMargin    = "margin"
	timerLease     = "lease"
)

// core is the actor around the pure cores: Membership (the member view), the
// reachability Table and heartbeat Monitor, the split-brain Resolver and the removal
// Margins. It feeds them serf's events, heartbeat answers and gossip, acts on their
// decisions (tags, downing, quarantine, lease) and publishes the events. Every input
// ends with settle, which brings the derived state up to date and sets the timers to
// the next moment something can be due.
type core struct {
	c       *Cluster
	ms      *membership.Membership
	table   *reachability.Table
	mon     *reachability.Monitor
	res     *sbr.Resolver
	margins *membership.Margins
	subs    map[actor.Ref]struct{}

	// serfFailed holds the members serf declared failed, with when (see
	// refreshReachability for when it counts). serf keeps a failed member dead until
	// it reconnects to it, which takes a while after a link heals: an answer to a
	// heartbeat sent after the failure ends the observation sooner.
	serfFailed map[UniqueAddress]time.Time
	peers      map[UniqueAddress]peer // Refs to other members' cluster actors
	heartbeat  actor.Ref              // this node's heartbeat responder
	reachKey   string                 // the unreachable and indirectly connected members last seen

	leaving, downed bool
	// joined is set once this node is in a cluster (joinedNotice; at once for a node
	// that forms one alone), founder when it formed it: only the founder moves itself
	// Up before it has seen a member Up.
	joined, founder bool
	// foreign holds the members of other clusters whose gossip reached this node's
	// view (logged once each).
	foreign         map[string]bool
	servicesStopped bool            // timers cancelled and responder stopped
	badTags         map[string]bool // node names whose malformed tags were logged
	drops           dropLog         // events and gossip this node could not deliver or use

	lease leaseState
}

func newCore(cfg Config, self Member) (*core, error) {
	ms, err := membership.NewMembership(membership.MembershipConfig{MinNrOfMembers: cfg.MinNrOfMembers, MinNrOfMembersOfRole: cfg.MinNrOfMembersOfRole}, self)
	if err != nil {
		return nil, err
	}
	res, err := sbr.NewResolver(cfg.Downing.resolverConfig(), time.Now())
	if err != nil {
		return nil, err
	}
	mon, err := reachability.NewMonitor(cfg.Timing.monitorConfig(), self.Unique)
	if err != nil {
		return nil, err
	}
	return &core{
		ms:         ms,
		table:      reachability.NewTable(self.Unique),
		mon:        mon,
		res:        res,
		margins:    membership.NewMargins(cfg.Downing.DownRemovalMargin),
		subs:       make(map[actor.Ref]struct{}),
		serfFailed: make(map[UniqueAddress]time.Time),
		peers:      make(map[UniqueAddress]peer),
	}, nil
}

func (k *core) Receive(ctx actor.Context) {
	now := time.Now()
	if done, ok := ctx.Message().(leaveDone); ok {
		k.apply(k.ms.SetStatus(k.c.self.Unique, Exiting))
		k.apply(k.ms.Remove(k.c.self.Unique))
		k.c.stop()
		done.reply <- done.err
	}
	if k.c.isStopped() {
		k.receiveStopped(ctx)
		return
	}
	// changed: the input may have changed the view (membership, reachability), which
	// is then brought up to date and decided on. Heartbeats, the bulk of the traffic,
	// change it only when a monitored member changes reachability.
	changed := true
	switch m := ctx.Message().(type) {
	case actor.Started:
		k.started(ctx)
	case serfEvent:
		k.onSerf(ctx, m.ev)
	case joinedNotice:
		k.joined, k.founder = true, m.founder
		k.publishSelf()
		k.observeSerfMembers() // the members of this cluster, passed over until now
	case heartbeatTick:
		k.sendHeartbeats(ctx, now)
		changed = k.checkMonitor(now)
	case heartbeatRsp:
		changed = k.onHeartbeatRsp(m, now)
		changed = k.checkMonitor(now) || changed
	case checkTimer:
		changed = k.checkMonitor(now)
	case gossipTick:
		k.gossip(ctx)
		changed = false
	case reachGossip:
		changed = k.onGossip(m)
	case resolverTimer:
		changed = false
		k.decide(ctx, now)
	case marginTimer:
		k.publish(k.margins.Due(now), now)
		k.maybeReleaseLease(now)
	case leaseTimer:
		k.maybeReleaseLease(now)
		changed = false
	case leaseResult:
		k.onLeaseResult(ctx, m, now)
	case leaseLost:
		k.onLeaseLost(m)
		changed = false
	case subscribe:
		if _, ok := k.subs[m.ref]; !ok {
			k.subs[m.ref] = struct{}{}
			ctx.Watch(m.ref)
			k.tell(m.ref, k.snapshot())
		}
		changed = false
	case unsubscribe:
		delete(k.subs, m.ref)
		ctx.Unwatch(m.ref)
		changed = false
	case actor.Terminated:
		delete(k.subs, m.Ref)
		changed = false
	case downRequest:
		u := m.u
		if m.addr != "" {
			for _, mem := range k.ms.Members() {
				if mem.Unique.Addr == m.addr {
					u = mem.Unique
				}
			}
		}
		k.down(ctx, []UniqueAddress{u}, true)
	case downNotice:
		if len(m.Down) > maxGossipRows {
			k.drops.note(k.c.log, "down notice refused: too many members", nil)
			return
		}
		k.down(ctx, m.Down, false)
	case leaveRequest:
		k.leave(ctx, m.reply)
	case quarantinedBy:
		k.onQuarantinedBy(m.addr)
		changed = false
	default:
		return
	}
	k.settle(ctx, now, changed)
}

// receiveStopped handles a message once this node has stopped its cluster services
// (it left, was downed, crashed or shut down): the heartbeats and gossip end, and only
// subscriptions and leave requests are still answered.
func (k *core) receiveStopped(ctx actor.Context) {
	if !k.servicesStopped {
		k.servicesStopped = true
		ctx.CancelAllTimers()
		if !k.heartbeat.IsZero() {
			_ = ctx.Stop(k.heartbeat)
		}
	}
	switch m := ctx.Message().(type) {
	case subscribe:
		if _, ok := k.subs[m.ref]; !ok {
			k.subs[m.ref] = struct{}{}
			ctx.Watch(m.ref)
			k.tell(m.ref, k.snapshot())
		}
	case unsubscribe:
		delete(k.subs, m.ref)
		ctx.Unwatch(m.ref)
	case actor.Terminated:
		delete(k.subs, m.Ref)
	case leaveRequest:
		m.reply <- nil
	case leaseResult:
		k.onLeaseResult(ctx, m, time.Now())
	case marginTimer:
	}
}

// started begins the heartbeats and the gossip.
func (k *core) started(ctx actor.Context) {
	t := k.c.cfg.Timing
	ref, err := ctx.Spawn(actor.PropsOf(func() actor.Actor { return &heartbeatResponder{self: k.c.self.Unique} }), heartbeatName)
	if err != nil {
		k.c.log.Error("starting the heartbeat responder", zap.Error(err))
	}
	k.heartbeat = ref
	ctx.StartPeriodicTimer(timerHeartbeat, heartbeatTick{}, t.HeartbeatInterval)
	ctx.StartPeriodicTimer(timerGossip, gossipTick{}, t.HeartbeatInterval)
}

// settle brings the derived state up to date after an input that changed it: the
// member's own move to Up, its reachability observations and their consequences, and
// the resolver's decision. Then it sets the timers to the next moment something can be
// due.
func (k *core) settle(ctx actor.Context, now time.Time, changed bool) {
	if k.downed || k.c.isStopped() {
		return // the next message stops the services (receiveStopped)
	}
	if changed {
		k.maybeUp()
		k.refreshReachability(ctx, now)
		k.decide(ctx, now)
		if k.downed || k.c.isStopped() {
			return
		}
	}
	k.armTimers(ctx, now)
}

// armTimers sets the one-shot timers to the monitor's next check and the next margin.
func (k *core) armTimers(ctx actor.Context, now time.Time) {
	arm := func(key string, msg any, at time.Time, ok bool) {
		if !ok {
			ctx.CancelTimer(key)
			return
		}
		ctx.StartSingleTimer(key, msg, max(at.Sub(now), time.Millisecond))
	}
	at, ok := k.mon.NextCheck()
	arm(timerCheck, checkTimer{}, at, ok)
	at, ok = k.margins.Next()
	arm(timerMargin, marginTimer{}, at, ok)
	at, ok = k.lease.releaseAt, k.lease.held
	arm(timerLease, leaseTimer{}, at, ok)
}

func (k *core) onSerf(ctx actor.Context, ev serf.Event) {
	switch e := ev.(type) {
	case serf.MemberEvent:
		for _, sm := range e.Members {
			k.onMember(e.Type, sm)
		}
	case serf.UserEvent:
		if e.Name != userEventDown {
			return
		}
		u, err := parseUnique(string(e.Payload))
		if err != nil {
			k.drops.note(k.c.log, "malformed down event ignored", err)
			return
		}
		k.down(ctx, []UniqueAddress{u}, false)
	}
}

// observeSerfMembers takes in the members serf knows as if each had just changed.
func (k *core) observeSerfMembers() {
	for _, sm := range k.c.serf.Members() {
		switch sm.Status {
		case serf.StatusAlive:
			k.onMember(serf.EventMemberUpdate, sm)
		case serf.StatusFailed:
			k.onMember(serf.EventMemberFailed, sm)
		}
	}
}

func (k *core) onMember(t serf.EventType, sm serf.Member) {
	m, err := membership.DecodeTags(sm.Tags)
	if err == nil && nodeName(m.Unique.Addr) != sm.Name {
		err = errors.New("the address tag does not match the node name")
	}
	var id string
	if err == nil {
		id, err = membership.ClusterOf(sm.Tags)
	}
	if err != nil {
		if !k.badTags[sm.Name] {
			if k.badTags == nil {
				k.badTags = make(map[string]bool)
			}
			k.badTags[sm.Name] = true
			k.c.log.Warn("member with malformed tags ignored", zap.String("node", sm.Name), zap.Error(err))
		}
		return
	}
	u := m.Unique
	if u == k.c.self.Unique && t != serf.EventMemberUpdate && t != serf.EventMemberJoin {
		return
	}
	if id != "" && id != k.c.ClusterID() {
		k.foreignMember(u, sm.Name, id)
		return
	}
	switch t {
	case serf.EventMemberJoin, serf.EventMemberUpdate:
		if k.ms.WasRemoved(u) {
			return
		}
		delete(k.serfFailed, u) // alive again, if it was failed
		k.apply(k.ms.Observe(m))
	case serf.EventMemberFailed:
		if k.ms.WasRemoved(u) {
			return // downed while it was reachable; now it is gone
		}
		cur, known := k.ms.Member(u)
		if known && (cur.Status == Leaving || cur.Status == Exiting) {
			// A member that was leaving and that serf now reports failed has left:
			// serf says "failed" rather than "left" when its leave intent was lost or
			// came after memberlist's notice. A member becomes Leaving only in its
			// cluster-leave phase, after the layers above handed its work over, so
			// nothing is lost by removing it now; waiting for the resolver to down it
			// held the others' majority (and their coordinators' writes) for
			// stable-after.
			k.left(u, cur)
			return
		}
		if !known {
			k.apply(k.ms.Observe(m))
		}
		k.serfFailed[u] = time.Now()
	case serf.EventMemberLeave:
		if cur, known := k.ms.Member(u); known {
			k.left(u, cur)
		}
	case serf.EventMemberReap:
		if cur, known := k.ms.Member(u); known && (cur.Status == Down || cur.Status == Exiting) {
			k.apply(k.ms.Remove(u))
		}
	}
}

// left removes member u, which has left the cluster, through Exiting unless it is Down.
func (k *core) left(u UniqueAddress, cur Member) {
	if cur.Status != Down {
		if cur.Status < Leaving {
			k.apply(k.ms.SetStatus(u, Leaving))
		}
		if cur.Status < Exiting {
			k.apply(k.ms.SetStatus(u, Exiting))
		}
	}
	k.apply(k.ms.Remove(u))
}

// foreignMember handles a member that belongs to another cluster (or, before this
// node has joined one, to any cluster): it is not one of this cluster's members. Once
// this node is in a cluster, that is logged as an error, once per member, and a member
// seen before it joined the other cluster is downed here.
func (k *core) foreignMember(u UniqueAddress, name, id string) {
	if !k.joined {
		return // the join process decides which cluster to join; observeSerfMembers follows
	}
	if !k.foreign[name] {
		if k.foreign == nil {
			k.foreign = make(map[string]bool)
		}
		k.foreign[name] = true
		k.c.log.Error("a member of another cluster reached this node's view; it is not a member here (clusters never merge)",
			zap.String("node", name), zap.String("their_cluster", id), zap.String("our_cluster", k.c.ClusterID()))
	}
	if _, known := k.ms.Member(u); known {
		k.apply(k.ms.Down(u))
	}
}

// apply publishes events from the membership and acts on them.
func (k *core) apply(evs []member.Event, err error) {
	if err != nil {
		k.c.log.Debug("membership input ignored", zap.Error(err))
	}
	if len(evs) == 0 {
		return
	}
	now := time.Now()
	var downed []UniqueAddress
	var follow []member.Event
	selfUp := false
	for _, ev := range evs {
		switch ev.(type) {
		case OldestChanged, UnreachableMember, ReachableMember:
			// Not membership changes; reachability is tracked by refreshReachability.
		default:
			k.res.MembershipChanged(now)
		}
		switch e := ev.(type) {
		case MemberUp:
			selfUp = selfUp || e.Member.Unique == k.c.self.Unique
		case MemberDowned:
			if e.Member.Unique != k.c.self.Unique {
				downed = append(downed, e.Member.Unique)
			}
		case MemberRemoved:
			u := e.Member.Unique
			if u == k.c.self.Unique {
				break
			}
			delete(k.serfFailed, u)
			delete(k.peers, u)
			k.table.Remove(u)
			if addr, err := actor.ParseAddress(u.Addr); err == nil {
				if e.PreviousStatus == Down {
					k.c.link.Quarantine(addr, u.UID, "downed and removed from the cluster", false)
				} else {
					k.c.link.Quarantine(addr, u.UID, "left the cluster", true)
				}
			}
			follow = append(follow, k.margins.Removed(e, now)...)
		}
	}
	k.publish(evs, now)
	if selfUp {
		// After the snapshot is published: WaitUp's callers read State and find
		// themselves Up in it.
		k.c.markUp()
	}
	k.publish(follow, now)
	// A downed member is removed at once (a downed node stops its cluster services);
	// this also removes an old incarnation that a restarted node replaced. Its work is
	// taken over only after the removal margin (RemovalMarginPassed).
	for _, u := range downed {
		k.apply(k.ms.Remove(u))
	}
}

// publish refreshes the snapshot and sends the events to the subscribers, in order.
func (k *core) publish(evs []member.Event, _ time.Time) {
	if len(evs) == 0 {
		return
	}
	k.c.publishState(k.snapshot()) // before the events: a subscriber reading State sees them
	for _, ev := range evs {
		for s := range k.subs {
			k.tell(s, ev)
		}
	}
}

// snapshot returns the current state with the members awaiting their margin.
func (k *core) snapshot() CurrentClusterState {
	st := k.ms.State()
	st.AwaitingRemovalMargin = k.margins.Pending()
	return st
}

// tell sends a subscriber a message; a failure (a full mailbox, a remote subscriber
// that cannot be reached) has become a dead letter, and is counted and logged here too.
func (k *core) tell(to actor.Ref, msg any) {
	if err := to.Tell(msg); err != nil {
		k.drops.note(k.c.log, "cluster event not delivered to a subscriber", err)
	}
}

// maybeUp moves this member to Up once it has joined and min-nr-of-members are in. A
// member that joined an existing cluster also waits until it sees a member Up there:
// it then picks an age above that member's, so the members that formed the cluster
// stay older than those that joined it, and the oldest does not move while a cluster
// forms.
func (k *core) maybeUp() {
	self, ok := k.ms.Member(k.c.self.Unique)
	if !ok || self.Status != Joining || k.leaving || k.downed || !k.joined || !k.ms.MinMembersMet() {
		return
	}
	if !k.founder {
		if _, seen := k.ms.Oldest(""); !seen {
			return
		}
	}
	self.Status = Up
	self.UpNumber = k.ms.NextUpNumber(time.Now().UnixMilli())
	k.apply(k.ms.Observe(self))
	k.publishSelf()
}

// publishSelf writes this member's current status and age into its serf tags.
func (k *core) publishSelf() {
	self, ok := k.ms.Member(k.c.self.Unique)
	if !ok {
		return
	}
	tags, err := membership.EncodeTagsIn(self, k.c.ClusterID())
	if err == nil {
		err = k.c.serf.SetTags(tags)
	}
	if err != nil {
		k.c.log.Warn("publishing member tags", zap.Error(err))
	}
}

// down declares the members Down and then, if it is listed, this node. With spread it
// first tells every member: a serf user event per member, which gossip carries around
// broken links, and a notice over the remote transport to each member, which arrives
// at once and is sent even by a node that downs itself (its transport flushes what is
// queued before it closes). Members this node does not know are skipped.
func (k *core) down(ctx actor.Context, us []UniqueAddress, spread bool) {
	if k.downed || len(us) == 0 {
		return
	}
	if spread {
		for _, u := range us {
			if err := k.c.serf.UserEvent(userEventDown, []byte(u.String()), false); err != nil {
				k.c.log.Warn("spreading a down decision", zap.Error(err))
			}
		}
		notice := downNotice{Down: us}
		for _, m := range k.ms.Members() {
			if m.Unique == k.c.self.Unique || m.Status == Down {
				continue
			}
			if p, ok := k.peerOf(m.Unique); ok {
				_ = ctx.Send(p.core, notice)
			}
		}
	}
	self := false
	for _, u := range us {
		if u == k.c.self.Unique {
			self = true
			continue
		}
		if _, known := k.ms.Member(u); known {
			k.apply(k.ms.Down(u))
		}
	}
	// apply removed them. serf keeps each as failed (it never answers again: a downed
	// node stops its serf) until ReconnectTimeout reaps it; serf's own removal would
	// block on a broadcast and leave a sleeping goroutine behind.
	if self {
		k.downSelf()
	}
}

// downSelf stops this node's cluster services: it was downed, by the resolver on its
// own side or by another member. Unless configured otherwise the system shuts down.
func (k *core) downSelf() {
	k.downed = true
	k.c.log.Warn("this member was downed; stopping the cluster services")
	k.apply(k.ms.Down(k.c.self.Unique))
	k.c.stop()
	k.apply(k.ms.Remove(k.c.self.Unique))
	if !k.c.cfg.KeepSystemWhenDowned {
		sys := k.c.sys
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = sys.Shutdown(ctx)
		}()
	}
}

// onQuarantinedBy handles the refusal of a connection from this incarnation by the
// system at addr, which has quarantined it. A member quarantines another when it
// removes it, and it removes it when it is Down: by a decision of any member, which
// every member applies. So a live member (in this node's view) that refuses this
// incarnation has applied a Down of it that never reached this node: the decider's
// serf user event and notice can both miss it when the decider's own path to it is
// cut (a one-way fault). This node then downs itself at once, as Akka's cluster does
// when another member quarantines it, well before the others' removal margin ends;
// without this it would run on until its own resolver decided. The refusal names this
// incarnation (its uid is what the member refused), so an old incarnation's downing
// never stops a new one. A refusal while this node leaves is expected: the others
// remove it when serf spreads its leave. (A transport also quarantines a peer that
// leaves too many system messages unacknowledged; that member can no longer talk to
// this one either, and stopping is the way out then too.)
func (k *core) onQuarantinedBy(addr string) {
	if k.leaving || k.downed || !k.joined {
		return
	}
	for _, m := range k.ms.Members() {
		if m.Unique.Addr == addr && m.Unique != k.c.self.Unique && m.Status != Down {
			k.c.log.Warn("a member refuses this incarnation: it quarantined it, as it does when it removes this member from the cluster; "+
				"the decision that downed this member did not reach it", zap.Stringer("by", m.Unique))
			k.downSelf()
			return
		}
	}
}

// leave starts a graceful leave: Leaving in the tags, then serf's leave.
func (k *core) leave(ctx actor.Context, reply chan error) {
	if k.leaving || k.downed || k.c.isStopped() {
		reply <- nil
		return
	}
	k.leaving = true
	k.apply(k.ms.Leave(k.c.self.Unique))
	k.publishSelf()
	self, s := ctx.Self(), k.c.serf
	go func() {
		err := s.Leave()
		_ = self.Tell(leaveDone{err: err, reply: reply})
	}()
}

// parseUnique parses UniqueAddress.String().
func parseUnique(s string) (UniqueAddress, error) {
	i := strings.LastIndexByte(s, '#')
	if i <= 0 {
		return UniqueAddress{}, errors.New("no uid")
	}
	uid, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil || uid == 0 {
		return UniqueAddress{}, errors.New("bad uid")
	}
	return UniqueAddress{Addr: s[:i], UID: uid}, nil
}
