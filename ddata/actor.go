package ddata

import (
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/replication"
	"github.com/troupe-go/troupe/member"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// entry is the replicator's state of one key: the envelope (value or deletion,
// pruning state, delta versions) and the bookkeeping that lets the hot path stay
// cheap: digests, deltas, notifications and durable writes are marked here and
// done later, once per tick, whatever the number of updates in between.
type entry struct {
	envelope
	stale        bool // the digest in replicator.digests is out of date (queued in stale)
	deltaPending bool // local changes whose delta is not taken yet (queued in dirty)
	fullPending  bool // one of them has no delta (a merge, a pruning): it travels as full state
	notifyQueued bool // queued in notifyQ
	hasSubs      bool // the key has subscribers
	durable      bool // the key is stored on disk
	storeQueued  bool // queued in storeKeys
}

// Timer messages.
type (
	tickGossip  struct{}
	tickDeltas  struct{}
	tickNotify  struct{}
	tickPruning struct{}
	opTimer     struct{ id uint64 }
)

// memberInfo is another member the replicator replicates with.
type memberInfo struct {
	m       cluster.Member
	addr    actor.Address
	exiting bool
	ref     actor.Ref // its replicator, resolved on first use
}

// replicator is the replicator actor: a shell that does the I/O around pure types.
// The replication protocol (quorum counting, read and write aggregation, gossip
// digests and chunks, delta propagation and the receiver's delta verdict) is the
// core package internal/replication; the CRDT side (envelopes, merges, pruner,
// subscribers) is this package's own.
type replicator struct {
	h       *Replicator
	cfg     Config
	reg     *serialization.Registry
	self    cluster.UniqueAddress
	log     *zap.Logger
	ctx     actor.Context // the current message's context, valid inside Receive only
	rng     *rand.Rand
	drops   rateLog // bad input from peers
	sendsL  rateLog // failed sends
	started bool

	entries map[string]*entry
	digests map[string]Digest // every key's digest; out of date for stale entries
	stale   []string
	dirty   []string // keys with local changes whose delta is not taken
	notifyQ []string // keys with subscribers changed since the last notify

	members     map[cluster.UniqueAddress]*memberInfo
	unreachable map[cluster.UniqueAddress]bool
	selfMember  cluster.Member
	peerList    []peer // cached; nil when out of date
	peersOK     bool

	deltas      *deltaPropagation
	deltaNodes  int // nodes delta propagation sends to
	pruner      *pruner
	gossipRound uint64

	subs      *subscribers[actor.Ref]
	notifiers map[string]map[actor.Ref]notifier
	watching  map[actor.Ref]int // subscriber -> number of keys

	nextID uint64
	writes map[uint64]*writeOp
	reads  map[uint64]*readOp

	durable   durableMatcher
	store     *durableStore
	storeKeys []string
	waiters   []storeWaiter // for the next batch
	inflight  []storeWaiter // for the batch being written
	storeBusy bool
	storeKick bool
}

func newReplicator(h *Replicator) *replicator {
	cfg := h.cfg
	a := &replicator{
		h:           h,
		cfg:         cfg,
		reg:         h.reg,
		self:        h.self,
		log:         h.sys.Logger().With(zap.String("component", "ddata"), zap.Stringer("node", h.self)),
		rng:         rand.New(rand.NewPCG(randomUID(), randomUID())),
		entries:     make(map[string]*entry),
		digests:     make(map[string]Digest),
		members:     make(map[cluster.UniqueAddress]*memberInfo),
		unreachable: make(map[cluster.UniqueAddress]bool),
		deltas:      newDeltaPropagation(cfg.MaxDeltaSize),
		pruner:      newPruner(h.self, cfg.MaxPruningDissemination, cfg.PruningMarkerTimeToLive),
		subs:        newSubscribers[actor.Ref](cfg.NotifySubscribersInterval),
		notifiers:   make(map[string]map[actor.Ref]notifier),
		watching:    make(map[actor.Ref]int),
		writes:      make(map[uint64]*writeOp),
		reads:       make(map[uint64]*readOp),
		durable:     newDurableMatcher(cfg.DurableKeys),
	}
	a.drops.lim.Interval, a.drops.lim.Burst = 10*time.Second, 10
	a.sendsL.lim.Interval, a.sendsL.lim.Burst = 10*time.Second, 10
	return a
}

// Receive implements actor.Actor.
func (a *replicator) Receive(ctx actor.Context) {
	a.ctx = ctx
	defer a.recoverPanic(ctx)
	switch m := ctx.Message().(type) {
	case request:
		m.handle(a, ctx.Sender())
	case *writeMsg:
		a.receiveWrite(m, ctx.Sender())
	case *writeReplyMsg:
		a.receiveWriteReply(m, ctx.Sender())
	case *readMsg:
		a.receiveRead(m, ctx.Sender())
	case *readResultMsg:
		a.receiveReadResult(m, ctx.Sender())
	case *statusMsg:
		a.receiveStatus(m, ctx.Sender())
	case *gossipMsg:
		a.receiveGossip(m, ctx.Sender())
	case *deltasMsg:
		a.receiveDeltas(m, ctx.Sender())
	case *fullRequestMsg:
		a.receiveFullRequest(m, ctx.Sender())
	case opTimer:
		a.opTimeout(m.id)
	case tickDeltas:
		a.propagateDeltas()
	case tickGossip:
		a.gossip()
	case tickNotify:
		a.notifySubscribers(false)
	case tickPruning:
		a.prune()
	case storeDone:
		a.storeDone(m)
	case actor.Terminated:
		a.unsubscribe("", m.Ref)
	case actor.Started:
		a.start(ctx)
	case actor.Stopped:
		a.stop()
	default:
		a.clusterEvent(m)
	}
	if a.storeKick {
		a.kickStore()
	}
	if a.h.metrics != nil {
		a.h.gauges.keys.Store(int64(len(a.entries)))
	}
}

// recoverPanic keeps the replicator running after a bug: its state is the node's
// replicas, and a restart would lose them.
func (a *replicator) recoverPanic(ctx actor.Context) {
	if p := recover(); p != nil {
		a.h.stats.panics.Add(1)
		a.log.Error("ddata: the replicator panicked handling a message; it keeps running",
			zap.String("message", fmt.Sprintf("%T", ctx.Message())), zap.Any("panic", p),
			zap.ByteString("stack", debug.Stack()))
	}
}

func (a *replicator) start(ctx actor.Context) {
	if a.started {
		return
	}
	a.started = true
	if a.store != nil {
		a.store.start(ctx.Self())
	}
	ctx.StartPeriodicTimer(tickNotify{}, tickNotify{}, a.cfg.NotifySubscribersInterval)
	if c := a.cfg.Cluster; c != nil {
		ctx.StartPeriodicTimer(tickGossip{}, tickGossip{}, a.cfg.GossipInterval)
		if !a.cfg.DisableDeltas {
			ctx.StartPeriodicTimer(tickDeltas{}, tickDeltas{}, replication.DeltaInterval(a.cfg.GossipInterval))
		}
		ctx.StartPeriodicTimer(tickPruning{}, tickPruning{}, a.cfg.PruningInterval)
		c.Subscribe(ctx.Self())
	}
}

// stop writes the durable changes not stored yet and closes the store. (The
// cluster drops the subscription of a stopped subscriber itself.)
func (a *replicator) stop() {
	if s := a.store; s != nil {
		s.stopWriter()
		if len(a.storeKeys) > 0 {
			batch, _ := a.encodeStoreBatch()
			if err := s.write(batch); err != nil {
				a.h.stats.storeFailures.Add(uint64(len(batch)))
				a.log.Error("ddata: the durable store failed to write the last changes at stop", zap.Int("keys", len(batch)), zap.Error(err))
			}
		}
		s.closeDB()
		a.store = nil
	}
	close(a.h.stopped)
}

// reply sends a response to a requester; a failure is logged (the requester is
// gone).
func (a *replicator) reply(to actor.Ref, msg any) {
	if err := a.ctx.Send(to, msg); err != nil {
		a.sendsL.warn(a.log, "ddata: could not deliver a reply", zap.Stringer("to", to), zap.String("reply", fmt.Sprintf("%T", msg)), zap.Error(err))
	}
}

// send sends a message to another replicator, counting and logging a failure.
func (a *replicator) send(to actor.Ref, msg any) {
	if err := a.ctx.Send(to, msg); err != nil {
		a.h.stats.sendFailures.Add(1)
		a.sendsL.warn(a.log, "ddata: could not send to a replicator", zap.Stringer("to", to), zap.String("message", fmt.Sprintf("%T", msg)), zap.Error(err))
	}
}

// newEntry adds a key holding d.
func (a *replicator) newEntry(key string, d ReplicatedData) *entry {
	e := &entry{envelope: envelope{data: d}, durable: a.durable.match(key), hasSubs: a.subs.has(key)}
	a.entries[key] = e
	return e
}

// changed records that key's value changed, whoever changed it: its digest is out
// of date, its subscribers are to hear of it, and a durable key is to be stored.
func (a *replicator) changed(key string, e *entry) {
	if !e.stale {
		e.stale = true
		a.stale = append(a.stale, key)
	}
	if e.hasSubs && !e.notifyQueued {
		e.notifyQueued = true
		a.notifyQ = append(a.notifyQ, key)
	}
	if e.durable {
		a.queueStore(key, e, storeWaiter{})
	}
}

// localChanged is changed for a change made here: its delta is to be propagated
// (full: the change has no delta, the value travels whole).
func (a *replicator) localChanged(key string, e *entry, full bool) {
	a.changed(key, e)
	if a.cfg.DisableDeltas || a.cfg.Cluster == nil {
		return
	}
	if _, ok := e.data.(DeltaData); !ok {
		return
	}
	if full {
		e.fullPending = true
	}
	if !e.deltaPending {
		e.deltaPending = true
		a.dirty = append(a.dirty, key)
	}
}

// flushDelta takes key's pending delta and numbers it for propagation, so that the
// envelope says which changes it holds (deltaVersions[self]) before the value or
// the delta is sent.
func (a *replicator) flushDelta(key string, e *entry) {
	if !e.deltaPending {
		return
	}
	e.deltaPending = false
	full := e.fullPending
	e.fullPending = false
	dd, ok := e.data.(DeltaData)
	if !ok || e.deleted {
		return
	}
	d, changed := dd.TakeDelta()
	if full {
		d, changed = nil, true
	}
	if !changed {
		return
	}
	var seq uint64
	switch {
	case a.deltaNodes == 0:
		seq = a.deltas.Bump(key) // nobody to send it to: the next delta shows a gap
	case d == nil:
		seq = a.deltas.UpdateFull(key)
	default:
		seq = a.deltas.Update(key, d)
	}
	if e.deltaVersions == nil {
		e.deltaVersions = make(map[cluster.UniqueAddress]uint64)
	}
	e.deltaVersions[a.self] = seq
}

// digestOf returns e's digest, computing it when out of date.
func (a *replicator) digestOf(key string, e *entry) Digest {
	if e == nil {
		return notFoundDigest
	}
	if !e.stale {
		if d, ok := a.digests[key]; ok {
			return d
		}
	}
	d, err := e.digest(a.reg)
	if err != nil {
		a.drops.warn(a.log, "ddata: cannot encode a value for its digest", zap.String("key", key), zap.Error(err))
		return notFoundDigest
	}
	e.stale = false
	a.digests[key] = d
	return d
}

// refreshDigests brings every digest up to date.
func (a *replicator) refreshDigests() {
	for _, key := range a.stale {
		if e := a.entries[key]; e != nil && e.stale {
			a.digestOf(key, e)
		}
	}
	a.stale = a.stale[:0]
}

// keyIDs returns the keys that are not deleted, sorted.
func (a *replicator) keyIDs() []string {
	out := make([]string, 0, len(a.entries))
	for k, e := range a.entries {
		if !e.deleted {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// mergeIncoming merges an envelope from another node into key's entry (creating
// it), and records the change. The envelope is not kept.
func (a *replicator) mergeIncoming(key string, env *envelope) (*entry, error) {
	e := a.entries[key]
	created := e == nil
	if created {
		e = &entry{durable: a.durable.match(key), hasSubs: a.subs.has(key)}
	}
	wasDeleted := e.deleted
	if err := e.mergeIncoming(env, a.self, time.Now()); err != nil {
		return nil, err
	}
	if created {
		a.entries[key] = e
	}
	if e.deleted && !wasDeleted {
		a.deltas.Delete(key)
	}
	a.changed(key, e)
	return e, nil
}

// invalid counts and logs data from a peer that is refused.
func (a *replicator) invalid(what string, from cluster.UniqueAddress, key string, err error) {
	a.h.stats.invalidData.Add(1)
	a.drops.warn(a.log, "ddata: refused "+what+" from another node", zap.Stringer("from", from), zap.String("key", key), zap.Error(err))
}

// ignored counts and logs a message refused whole.
func (a *replicator) ignored(why string, msg any, sender actor.Ref) {
	a.h.stats.ignored.Add(1)
	a.drops.warn(a.log, "ddata: ignored a message: "+why, zap.String("message", fmt.Sprintf("%T", msg)), zap.Stringer("sender", sender))
}

// checkSender returns the node a message claims to come from, after checking it
// against the address it came from; member requires a known member.
func (a *replicator) checkSender(from nodeWire, msg any, sender actor.Ref, member bool) (cluster.UniqueAddress, bool) {
	n, err := from.node()
	if err != nil {
		a.ignored("bad sender node", msg, sender)
		return n, false
	}
	if info := a.members[n]; info != nil {
		if sender.Address() != info.addr {
			a.ignored("sender does not match the node it names", msg, sender)
			return n, false
		}
		return n, true
	}
	if member {
		// Normal while a node joins (it sees us Up before we see it): counted, and
		// logged at debug level only.
		a.h.stats.ignored.Add(1)
		a.log.Debug("ddata: ignored a message from a node that is not a member (yet)",
			zap.String("message", fmt.Sprintf("%T", msg)), zap.Stringer("from", n))
		return n, false
	}
	addr, err := actor.ParseAddress(n.Addr)
	if err != nil || sender.Address() != addr {
		a.ignored("sender does not match the node it names", msg, sender)
		return n, false
	}
	return n, true
}

// --- membership ---

// clusterEvent applies a cluster event (or the initial state) to the members the
// replicator replicates with.
func (a *replicator) clusterEvent(ev any) {
	switch e := ev.(type) {
	case cluster.CurrentClusterState:
		a.setState(e)
	case cluster.MemberUp:
		a.memberUp(e.Member)
	case cluster.MemberExited:
		a.memberExited(e.Member)
	case cluster.MemberDowned:
		a.memberDowned(e.Member)
	case cluster.MemberRemoved:
		a.memberRemoved(e.Member)
	case cluster.UnreachableMember:
		a.setReachable(e.Member.Unique, false)
	case cluster.ReachableMember:
		a.setReachable(e.Member.Unique, true)
	}
}

// counts reports whether m is a member the replicator replicates with.
func (a *replicator) counts(m cluster.Member) bool {
	return m.Unique != a.self && (a.cfg.Role == "" || m.HasRole(a.cfg.Role))
}

func (a *replicator) setState(st cluster.CurrentClusterState) {
	clear(a.members)
	clear(a.unreachable)
	for _, m := range st.Members {
		if m.Unique == a.self {
			a.selfMember = m
			continue
		}
		switch m.Status {
		case cluster.Up, cluster.Leaving:
			a.addMember(m, false)
		case cluster.Exiting:
			a.addMember(m, true)
		}
	}
	for _, m := range st.Unreachable {
		a.unreachable[m.Unique] = true
	}
	a.membersChanged()
}

func (a *replicator) addMember(m cluster.Member, exiting bool) {
	if !a.counts(m) {
		return
	}
	info := a.members[m.Unique]
	if info == nil {
		if !a.replaceIncarnation(m) {
			return
		}
		addr, err := actor.ParseAddress(m.Unique.Addr)
		if err != nil {
			a.log.Warn("ddata: a member's address does not parse; not replicating with it", zap.Stringer("member", m.Unique), zap.Error(err))
			return
		}
		info = &memberInfo{addr: addr}
		a.members[m.Unique] = info
	}
	info.m, info.exiting = m, info.exiting || exiting
}

// replaceIncarnation makes room for m when another incarnation of its node (the same
// address, another uid) is a member: an address is bound by one process at a time, so
// of two incarnations that are both Up the younger has replaced the older, whose
// Down and Removed may still be on their way. It reports false when m is the older,
// late news of an incarnation already replaced.
func (a *replicator) replaceIncarnation(m cluster.Member) bool {
	for n, info := range a.members {
		if n.Addr != m.Unique.Addr {
			continue
		}
		if !info.m.IsOlderThan(m) {
			return false
		}
		delete(a.members, n)
	}
	return true
}

func (a *replicator) memberUp(m cluster.Member) {
	if m.Unique == a.self {
		a.selfMember = m
		return
	}
	a.addMember(m, false)
	a.membersChanged()
}

func (a *replicator) memberExited(m cluster.Member) {
	if m.Unique == a.self {
		a.selfMember = m
		return
	}
	if _, ok := a.members[m.Unique]; ok {
		a.addMember(m, true)
		a.membersChanged()
	}
}

// memberDowned stops counting a downed member: it is removed at once, and never
// answers again. Its data is pruned once it is removed.
func (a *replicator) memberDowned(m cluster.Member) {
	if _, ok := a.members[m.Unique]; ok {
		delete(a.members, m.Unique)
		a.membersChanged()
	}
}

func (a *replicator) memberRemoved(m cluster.Member) {
	if m.Unique == a.self {
		return
	}
	delete(a.members, m.Unique)
	delete(a.unreachable, m.Unique)
	if a.cfg.Role == "" || m.HasRole(a.cfg.Role) {
		a.pruner.nodeRemoved(m.Unique, time.Now())
	}
	a.membersChanged()
}

func (a *replicator) setReachable(n cluster.UniqueAddress, reachable bool) {
	if reachable {
		delete(a.unreachable, n)
	} else if n != a.self {
		a.unreachable[n] = true
	}
	a.membersChanged()
}

// membersChanged updates what depends on the members.
func (a *replicator) membersChanged() {
	a.peersOK = false
	var nodes []cluster.UniqueAddress
	for n := range a.members {
		if !a.unreachable[n] {
			nodes = append(nodes, n)
		}
	}
	a.deltas.SetNodes(nodes)
	a.deltaNodes = len(nodes)
}

// peers returns the other members, for reads and writes.
func (a *replicator) peers() []peer {
	if !a.peersOK {
		a.peerList = a.peerList[:0]
		for n, info := range a.members {
			a.peerList = append(a.peerList, peer{Node: n, Reachable: !a.unreachable[n], Exiting: info.exiting})
		}
		a.peersOK = true
	}
	return a.peerList
}

// refOf returns the replicator of member n, or false when n is not a member.
func (a *replicator) refOf(n cluster.UniqueAddress) (actor.Ref, bool) {
	info := a.members[n]
	if info == nil {
		return actor.Ref{}, false
	}
	if info.ref.Address() == (actor.Address{}) {
		ref, err := a.h.sys.Resolve(info.addr.String() + "/system/" + actorName)
		if err != nil {
			a.sendsL.warn(a.log, "ddata: cannot resolve another node's replicator", zap.Stringer("node", n), zap.Error(err))
			return actor.Ref{}, false
		}
		info.ref = ref
	}
	return info.ref, true
}

// sendTo sends msg to member n's replicator.
func (a *replicator) sendTo(n cluster.UniqueAddress, msg any) {
	if ref, ok := a.refOf(n); ok {
		a.send(ref, msg)
	}
}

// isLeader reports whether this node is the oldest member (with the role): the
// one that starts pruning.
func (a *replicator) isLeader() bool {
	all := make([]cluster.Member, 0, len(a.members)+1)
	all = append(all, a.selfMember)
	for _, info := range a.members {
		all = append(all, info.m)
	}
	oldest, ok := member.Oldest(all, a.cfg.Role)
	return ok && oldest.Unique == a.self
}

// selfWire is this node on the wire.
func (a *replicator) selfWire() nodeWire { return toNodeWire(a.self) }
