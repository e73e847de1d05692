package cluster

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/serf/serf"
	"github.com/troupe-go/troupe/actor"
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
	tick struct{}
)

// tickInterval is how often the core checks the split-brain resolver and its own
// move to Up.
const tickInterval = 50 * time.Millisecond

// core is the actor around Membership and the Resolver: it feeds them serf's events,
// acts on their decisions (tags, downing, quarantine) and publishes the events.
type core struct {
	c    *Cluster
	ms   *Membership
	res  *Resolver
	subs map[actor.Ref]struct{}

	leaving, downed bool
	badTags         map[string]bool // node names whose malformed tags were logged
}

func (k *core) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case actor.Started:
		ctx.StartPeriodicTimer("tick", tick{}, tickInterval)
	case serfEvent:
		k.onSerf(m.ev)
	case tick:
		k.maybeUp()
		k.decide()
	case subscribe:
		if _, ok := k.subs[m.ref]; !ok {
			k.subs[m.ref] = struct{}{}
			ctx.Watch(m.ref)
			_ = m.ref.Tell(k.ms.State())
		}
	case unsubscribe:
		delete(k.subs, m.ref)
		ctx.Unwatch(m.ref)
	case actor.Terminated:
		delete(k.subs, m.Ref)
	case downRequest:
		u := m.u
		if m.addr != "" {
			for _, mem := range k.ms.Members() {
				if mem.Unique.Addr == m.addr {
					u = mem.Unique
				}
			}
		}
		k.down(u, true)
	case leaveRequest:
		k.leave(ctx, m.reply)
	case leaveDone:
		k.apply(k.ms.SetStatus(k.c.self.Unique, Exiting))
		k.apply(k.ms.Remove(k.c.self.Unique))
		k.c.stop()
		m.reply <- m.err
	}
}

func (k *core) onSerf(ev serf.Event) {
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
			k.c.log.Warn("malformed down event", zap.Error(err))
			return
		}
		k.down(u, false)
	}
}

func (k *core) onMember(t serf.EventType, sm serf.Member) {
	m, err := DecodeTags(sm.Tags)
	if err == nil && m.Unique.Addr != sm.Name {
		err = errors.New("the address tag differs from the node name")
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
	switch t {
	case serf.EventMemberJoin, serf.EventMemberUpdate:
		if k.ms.WasRemoved(u) {
			return
		}
		if k.ms.IsUnreachable(u) {
			k.apply(k.ms.Reachable(u))
		}
		k.apply(k.ms.Observe(m))
	case serf.EventMemberFailed:
		if k.ms.WasRemoved(u) {
			return // downed while it was reachable; now it is gone
		}
		if _, known := k.ms.Member(u); !known {
			k.apply(k.ms.Observe(m))
		}
		k.apply(k.ms.Unreachable(u))
	case serf.EventMemberLeave:
		cur, known := k.ms.Member(u)
		if !known {
			return
		}
		if cur.Status != Down {
			if cur.Status < Leaving {
				k.apply(k.ms.SetStatus(u, Leaving))
			}
			if cur.Status < Exiting {
				k.apply(k.ms.SetStatus(u, Exiting))
			}
		}
		k.apply(k.ms.Remove(u))
	case serf.EventMemberReap:
		if cur, known := k.ms.Member(u); known && (cur.Status == Down || cur.Status == Exiting) {
			k.apply(k.ms.Remove(u))
		}
	}
}

// apply publishes events from the membership and acts on them.
func (k *core) apply(evs []Event, err error) {
	if err != nil {
		k.c.log.Debug("membership input ignored", zap.Error(err))
	}
	if len(evs) == 0 {
		return
	}
	k.c.publishState(k.ms) // before the events: a subscriber reading State sees them
	now := time.Now()
	var downed []UniqueAddress
	for _, ev := range evs {
		if _, ok := ev.(OldestChanged); !ok {
			k.res.Changed(now)
		}
		switch e := ev.(type) {
		case MemberUp:
			if e.Member.Unique == k.c.self.Unique {
				k.c.markUp()
			}
		case MemberDowned:
			if e.Member.Unique != k.c.self.Unique {
				downed = append(downed, e.Member.Unique)
			}
		case MemberRemoved:
			if e.Member.Unique != k.c.self.Unique {
				if addr, err := actor.ParseAddress(e.Member.Unique.Addr); err == nil {
					k.c.link.Quarantine(addr, e.Member.Unique.UID, "removed from the cluster")
				}
			}
		}
		for s := range k.subs {
			_ = s.Tell(ev)
		}
	}
	// A downed member is removed at once (a downed node stops its cluster services);
	// this also removes an old incarnation that a restarted node replaced.
	for _, u := range downed {
		k.apply(k.ms.Remove(u))
	}
}

// maybeUp moves this member to Up once it has joined and min-nr-of-members are in. A
// member that joined an existing cluster also waits until it sees a member Up there:
// it then picks an age above that member's, so the members that formed the cluster
// stay older than those that joined it, and the oldest does not move while a cluster
// forms.
func (k *core) maybeUp() {
	self, ok := k.ms.Member(k.c.self.Unique)
	if !ok || self.Status != Joining || k.leaving || k.downed || !k.c.joined.Load() || !k.ms.MinMembersMet() {
		return
	}
	if !k.c.founder {
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
	tags, err := EncodeTags(self)
	if err == nil {
		err = k.c.serf.SetTags(tags)
	}
	if err != nil {
		k.c.log.Warn("publishing member tags", zap.Error(err))
	}
}

// decide runs the split-brain resolver once membership has been stable long enough.
func (k *core) decide() {
	if k.downed || k.leaving {
		return
	}
	d := k.res.Decide(time.Now(), k.ms.DowningInput())
	if d.Action == NoAction {
		return
	}
	k.c.log.Warn("split-brain resolver decided", zap.Stringer("action", d.Action), zap.Int("downing", len(d.Down)))
	for _, u := range d.Down {
		if u != k.c.self.Unique {
			k.down(u, true)
		}
	}
	if d.Downs(k.c.self.Unique) {
		k.down(k.c.self.Unique, false)
	}
}

// down declares u Down; spread tells the other members too.
func (k *core) down(u UniqueAddress, spread bool) {
	if k.downed {
		return
	}
	if u == k.c.self.Unique {
		k.downSelf()
		return
	}
	if _, known := k.ms.Member(u); !known {
		return
	}
	k.apply(k.ms.Down(u))
	if spread {
		if err := k.c.serf.UserEvent(userEventDown, []byte(u.String()), false); err != nil {
			k.c.log.Warn("spreading a down decision", zap.Error(err))
		}
	}
	// apply removed it. serf keeps the member as failed (it never answers again: a
	// downed node stops its serf) until ReconnectTimeout reaps it; serf's own removal
	// would block on a broadcast and leave a sleeping goroutine behind.
}

// downSelf stops this node's cluster services: it was downed, by the resolver on its
// own side or by another member. Unless configured otherwise the system shuts down.
func (k *core) downSelf() {
	k.downed = true
	k.c.log.Warn("this member was downed; leaving the cluster services")
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

// publishState refreshes the snapshot behind State and the transport's member list.
func (c *Cluster) publishState(ms *Membership) {
	st := ms.State()
	managed := make(map[actor.Address]bool, len(st.Members))
	for _, m := range st.Members {
		if addr, err := actor.ParseAddress(m.Unique.Addr); err == nil {
			managed[addr] = true
		}
	}
	c.managed.Store(&managed)
	c.mu.Lock()
	c.state = st
	c.mu.Unlock()
}

// markUp runs the RegisterOnMemberUp callbacks once.
func (c *Cluster) markUp() {
	c.mu.Lock()
	if c.up {
		c.mu.Unlock()
		return
	}
	c.up = true
	fs := c.onUp
	c.onUp = nil
	c.mu.Unlock()
	for _, f := range fs {
		go f()
	}
}

func (c *Cluster) isStopped() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}
