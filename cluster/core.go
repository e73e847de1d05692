package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/serf/serf"
	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/clustercore"
	"github.com/troupe-go/troupe/internal/membership"
	"github.com/troupe-go/troupe/internal/reachability"
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

// core is the actor around the pure composition of the cluster's cores
// (internal/clustercore: the member view, the removal margins, the reachability table
// and heartbeat monitor, the split-brain resolver). It translates serf's events for it,
// feeds it heartbeat answers and gossip, carries out its effects (publishing events
// and tags, quarantines, stopping) and runs the timers. Every input ends with settle,
// which brings the derived state up to date and sets the timers to the next moment
// something can be due.
type core struct {
	c    *Cluster
	cc   *clustercore.Core
	subs map[actor.Ref]struct{}

	// The parts of cc the shell reads: the members (to address messages), the
	// table's rows (to gossip), the monitor's targets and the timers' next moments.
	ms      *membership.Membership
	table   *reachability.Table
	mon     *reachability.Monitor
	margins *membership.Margins

	peers     map[UniqueAddress]peer // Refs to other members' cluster actors
	heartbeat actor.Ref              // this node's heartbeat responder

	servicesStopped bool            // timers cancelled and responder stopped
	badTags         map[string]bool // node names whose malformed tags were logged
	drops           dropLog         // events and gossip this node could not deliver or use

	lease leaseState
}

func newCore(cfg Config, self Member) (*core, error) {
	cc, err := clustercore.New(clustercore.Config{
		Self:              self,
		Membership:        membership.MembershipConfig{MinNrOfMembers: cfg.MinNrOfMembers, MinNrOfMembersOfRole: cfg.MinNrOfMembersOfRole},
		Resolver:          cfg.Downing.resolverConfig(),
		Monitor:           cfg.Timing.monitorConfig(),
		DownRemovalMargin: cfg.Downing.DownRemovalMargin,
	}, time.Now())
	if err != nil {
		return nil, err
	}
	return &core{
		cc:      cc,
		ms:      cc.Membership(),
		table:   cc.Table(),
		mon:     cc.Monitor(),
		margins: cc.Margins(),
		subs:    make(map[actor.Ref]struct{}),
		peers:   make(map[UniqueAddress]peer),
	}, nil
}

// run carries out the core's effects, in order.
func (k *core) run(ctx actor.Context, effects []clustercore.Effect) {
	for _, e := range effects {
		switch e := e.(type) {
		case clustercore.Observations:
			if k.c.setObservations(e.Records) {
				changed := ReachabilityChanged{Observations: e.Records}
				for s := range k.subs {
					k.tell(s, changed)
				}
			}
		case clustercore.PushOwnRow:
			k.pushOwnRow(ctx)
		case clustercore.AcquireLease:
			k.acquireLease(ctx)
		case clustercore.Decided:
			k.decided(e)
		case clustercore.Spread:
			k.spread(ctx, e.Down, e.To)
		case clustercore.Publish:
			k.c.publishState(e.State) // before the events: a subscriber reading State sees them
			for _, ev := range e.Events {
				for s := range k.subs {
					k.tell(s, ev)
				}
			}
		case clustercore.MarkUp:
			k.c.markUp()
		case clustercore.AskWelcome:
			k.askWelcome(ctx, e.To)
		case clustercore.AnnounceUp:
			k.announceUp(ctx, e.To, e.Self)
		case clustercore.SetTags:
			tags, err := membership.EncodeTagsIn(e.Self, k.c.ClusterID())
			if err == nil {
				err = k.c.serf.SetTags(tags)
			}
			if err != nil {
				k.c.log.Warn("publishing member tags", zap.Error(err))
			}
		case clustercore.Removed:
			delete(k.peers, e.Member)
			if addr, err := actor.ParseAddress(e.Member.Addr); err == nil {
				if e.Harmless {
					k.c.r.Quarantine(addr, e.Member.UID, "left the cluster", true)
				} else {
					k.c.r.Quarantine(addr, e.Member.UID, "downed and removed from the cluster", false)
				}
			}
		case clustercore.Stop:
			k.c.stop()
		case clustercore.Downed:
			if !k.c.cfg.KeepSystemWhenDowned {
				sys := k.c.sys
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					defer cancel()
					_ = sys.Shutdown(ctx)
				}()
			}
		case clustercore.Log:
			fields := make([]zap.Field, 0, len(e.Fields))
			for _, f := range e.Fields {
				fields = append(fields, zap.String(f.Key, f.Value))
			}
			switch e.Level {
			case clustercore.Error:
				k.c.log.Error(e.Msg, fields...)
			case clustercore.Warn:
				k.c.log.Warn(e.Msg, fields...)
			case clustercore.Info:
				k.c.log.Info(e.Msg, fields...)
			default:
				k.c.log.Debug(e.Msg, fields...)
			}
		}
	}
}

func (k *core) Receive(ctx actor.Context) {
	now := time.Now()
	if done, ok := ctx.Message().(leaveDone); ok {
		k.run(ctx, k.cc.LeaveDone(now))
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
		k.onSerf(ctx, m.ev, now)
	case joinedNotice:
		k.run(ctx, k.cc.JoinedCluster(m.founder))
		k.observeSerfMembers(ctx, now) // the members of this cluster, passed over until now
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
		k.run(ctx, k.cc.AskWelcomes())
		changed = false
	case welcomeReq:
		k.onWelcomeReq(ctx, m)
		changed = false
	case welcomeAck:
		if len(m.Counted) > maxGossipRows {
			k.drops.note(k.c.log, "welcome answer refused: too many members", nil)
			return
		}
		k.run(ctx, k.cc.Welcomed(m.From, clustercore.Welcome{Counted: m.Counted, Unreachable: m.Unreachable}, now))
	case upNotice:
		if _, err := membership.EncodeTags(m.Member); err != nil {
			k.drops.note(k.c.log, "up notice refused: not a member serf's tags could carry", err)
			return
		}
		k.run(ctx, k.cc.AnnouncedUp(m.Member, now))
	case reachGossip:
		changed = k.onGossip(m)
	case resolverTimer:
		changed = false
		k.decide(ctx, now)
	case marginTimer:
		k.run(ctx, k.cc.MarginsDue(now))
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
		k.run(ctx, k.cc.QuarantinedBy(m.addr, now))
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
	if k.cc.Downed() || k.c.isStopped() {
		return // the next message stops the services (receiveStopped)
	}
	if changed {
		k.run(ctx, k.cc.MaybeUp(now))
		k.refreshReachability(ctx, now)
		k.decide(ctx, now)
		if k.cc.Downed() || k.c.isStopped() {
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

func (k *core) onSerf(ctx actor.Context, ev serf.Event, now time.Time) {
	switch e := ev.(type) {
	case serf.MemberEvent:
		for _, sm := range e.Members {
			k.onMember(ctx, e.Type, sm, now)
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
func (k *core) observeSerfMembers(ctx actor.Context, now time.Time) {
	for _, sm := range k.c.serf.Members() {
		switch sm.Status {
		case serf.StatusAlive:
			k.onMember(ctx, serf.EventMemberUpdate, sm, now)
		case serf.StatusFailed:
			k.onMember(ctx, serf.EventMemberFailed, sm, now)
		}
	}
}

// serfKinds translates serf's member event types for the core.
var serfKinds = map[serf.EventType]clustercore.Kind{
	serf.EventMemberJoin:   clustercore.Join,
	serf.EventMemberUpdate: clustercore.Update,
	serf.EventMemberFailed: clustercore.Failed,
	serf.EventMemberLeave:  clustercore.Leave,
	serf.EventMemberReap:   clustercore.Reap,
}

func (k *core) onMember(ctx actor.Context, t serf.EventType, sm serf.Member, now time.Time) {
	kind, ok := serfKinds[t]
	if !ok {
		return
	}
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
	if !membership.SpeaksWelcome(sm.Tags) {
		k.cc.Legacy(m.Unique) // Troupe v0.1.0: it neither answers a welcome request nor takes an Up notice
	}
	k.run(ctx, k.cc.MemberEvent(kind, sm.Name, m, id, k.c.ClusterID(), now))
}

// snapshot returns the current state with the members awaiting their margin.
func (k *core) snapshot() CurrentClusterState { return k.cc.Snapshot() }

// tell sends a subscriber a message; a failure (a full mailbox, a remote subscriber
// that cannot be reached) has become a dead letter, and is counted and logged here too.
func (k *core) tell(to actor.Ref, msg any) {
	if err := to.Tell(msg); err != nil {
		k.drops.note(k.c.log, "cluster event not delivered to a subscriber", err)
	}
}

// down declares the members Down and then, if it is listed, this node. With spread it
// first tells every member (see spread). Members this node does not know are skipped.
func (k *core) down(ctx actor.Context, us []UniqueAddress, spread bool) {
	if k.cc.Downed() || len(us) == 0 {
		return
	}
	if spread {
		var to []UniqueAddress
		for _, m := range k.ms.Members() {
			if m.Unique != k.c.self.Unique && m.Status != Down {
				to = append(to, m.Unique)
			}
		}
		k.spread(ctx, us, to)
	}
	// The core removes them. serf keeps each as failed (it never answers again: a
	// downed node stops its serf) until ReconnectTimeout reaps it; serf's own removal
	// would block on a broadcast and leave a sleeping goroutine behind.
	k.run(ctx, k.cc.Down(us, time.Now()))
}

// spread tells every member of a down decision: a serf user event per downed member,
// which gossip carries around broken links, and a notice over the remote transport to
// each member in to, which arrives at once and is sent even by a node that downs
// itself (its transport flushes what is queued before it closes).
func (k *core) spread(ctx actor.Context, us, to []UniqueAddress) {
	for _, u := range us {
		if err := k.c.serf.UserEvent(userEventDown, []byte(u.String()), false); err != nil {
			k.c.log.Warn("spreading a down decision", zap.Error(err))
		}
	}
	notice := downNotice{Down: us}
	for _, u := range to {
		if p, ok := k.peerOf(u); ok {
			_ = ctx.Send(p.core, notice)
		}
	}
}

// leave starts a graceful leave: Leaving in the tags, then serf's leave.
func (k *core) leave(ctx actor.Context, reply chan error) {
	if k.c.isStopped() {
		reply <- nil
		return
	}
	effects, ok := k.cc.Leave(time.Now())
	if !ok {
		reply <- nil
		return
	}
	k.run(ctx, effects)
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
