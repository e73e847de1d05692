package cluster

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/clustercore"
	"github.com/troupe-go/troupe/internal/ratelog"
	"go.uber.org/zap"
)

// Messages of the core about the resolver and its lease.
type (
	resolverTimer struct{}
	marginTimer   struct{}
	leaseTimer    struct{}
	leaseResult   struct {
		acquired bool
		err      error
	}
	leaseLost struct{ err error }
)

// leaseState is what the core knows of the lease-majority lease.
type leaseState struct {
	acquiring bool            // an Acquire is in flight
	held      bool            // acquired and neither released nor lost
	releaseAt time.Time       // not released before (see holdLease)
	waitFor   []UniqueAddress // members downed under the lease: released once their margins passed
}

// decide asks the resolver, acts on its decision and sets its timer.
func (k *core) decide(ctx actor.Context, now time.Time) {
	if k.cc.Downed() || k.cc.Leaving() {
		ctx.CancelTimer(timerResolver)
		return
	}
	effects, next := k.cc.Decide(now)
	k.run(ctx, effects)
	if k.cc.Downed() || k.c.isStopped() {
		return
	}
	if next.IsZero() {
		ctx.CancelTimer(timerResolver)
	} else {
		ctx.StartSingleTimer(timerResolver, resolverTimer{}, max(next.Sub(now), time.Millisecond))
	}
}

// decided logs the resolver's decision, counts it and publishes it to this node's
// subscribers; the downs follow.
func (k *core) decided(e clustercore.Decided) {
	d := e.Decision
	obs := make([]string, 0, len(e.Records))
	for _, r := range e.Records {
		obs = append(obs, r.Observer.String()+">"+r.Subject.String())
	}
	fields := []zap.Field{zap.Stringer("action", d.Action), zap.Int("downing", len(d.Down)), zap.Stringers("members", d.Down),
		zap.Strings("observations", obs)}
	if e.Unstable {
		k.c.log.Warn("split-brain resolver: reachability did not settle; downing every member", fields...)
	} else {
		k.c.log.Warn("split-brain resolver decided", fields...)
	}
	k.c.decisions.note(d.Action)
	decision := DowningDecision{Strategy: k.c.cfg.Downing.Strategy.String(), Action: d.Action.String(),
		Down: slices.Clone(d.Down), Unstable: e.Unstable}
	for s := range k.subs {
		k.tell(s, decision)
	}
}

// acquireLease starts acquiring the lease in the background; the outcome arrives as a
// leaseResult.
func (k *core) acquireLease(ctx actor.Context) {
	if k.lease.acquiring || k.lease.held {
		if k.lease.held { // still held from an earlier decision: decide at once
			_ = ctx.Self().Tell(leaseResult{acquired: true})
		}
		return
	}
	k.lease.acquiring = true
	l := k.c.cfg.Downing.Lease
	self, c := ctx.Self(), k.c
	timeout := l.Settings().WithDefaults().OperationTimeout
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		opCtx, cancel := context.WithTimeout(c.leaseCtx, timeout)
		defer cancel()
		ok, err := l.Acquire(opCtx, func(err error) { _ = self.Tell(leaseLost{err: err}) })
		_ = self.Tell(leaseResult{acquired: ok && err == nil, err: err})
	}()
}

// onLeaseResult acts on the resolver's decision for the lease's outcome.
func (k *core) onLeaseResult(ctx actor.Context, m leaseResult, now time.Time) {
	k.lease.acquiring = false
	if m.acquired && !k.lease.held {
		k.lease.held, k.lease.releaseAt = true, now.Add(k.holdLease())
		k.c.leaseReleaseAt.Store(k.lease.releaseAt.UnixNano())
	}
	log := k.c.log.With(zap.Bool("acquired", m.acquired), zap.Error(m.err))
	if k.cc.Downed() || k.c.isStopped() {
		log.Info("lease-majority: lease outcome after this node stopped")
		return
	}
	log.Warn("lease-majority: lease outcome")
	effects, d := k.cc.LeaseResult(now, m.acquired)
	if m.acquired {
		for _, u := range d.Down {
			if u != k.c.self.Unique {
				k.lease.waitFor = append(k.lease.waitFor, u)
			}
		}
	}
	k.run(ctx, effects)
	k.maybeReleaseLease(now)
}

// holdLease is the least time this node holds the lease after acquiring it: the other
// side of the partition, which waited AcquireLeaseDelayForMinority before trying,
// must have failed to acquire it, and decided to down itself, before it becomes free;
// its decision comes within StableAfter plus DownAllWhenUnstable of its first change,
// plus that delay.
func (k *core) holdLease() time.Duration {
	d := k.c.cfg.Downing
	return d.StableAfter + max(d.DownAllWhenUnstable, 0) + d.AcquireLeaseDelayForMinority
}

func (k *core) onLeaseLost(m leaseLost) {
	if k.lease.held {
		k.c.log.Warn("lease-majority: the lease was lost", zap.Error(m.err))
	}
	k.lease.held = false
}

// maybeReleaseLease releases a held lease once every member downed under it has
// passed its removal margin (by then the other side has stopped) and holdLease has
// passed (by then the other side has decided); holding it longer would only make the
// next partition's decision wait for it to expire.
func (k *core) maybeReleaseLease(now time.Time) {
	if !k.lease.held || now.Before(k.lease.releaseAt) {
		return
	}
	for _, u := range k.lease.waitFor {
		if _, member := k.ms.Member(u); member || k.margins.IsPending(u) {
			return
		}
	}
	k.lease.held, k.lease.waitFor = false, nil
	l, c := k.c.cfg.Downing.Lease, k.c
	timeout := l.Settings().WithDefaults().OperationTimeout
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		opCtx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		if _, err := l.Release(opCtx); err != nil {
			c.log.Warn("lease-majority: releasing the lease", zap.Error(err))
		}
	}()
}

// releaseLease releases the lease when this node holds it as it shuts down, unless
// holdLease has not passed yet: the other side of a recent partition may still be
// deciding, and the lease then expires in the store instead.
func (c *Cluster) releaseLease(ctx context.Context) {
	c.leaseCancel()
	l := c.cfg.Downing.Lease
	if l == nil || !l.CheckLease() {
		return
	}
	if at := time.Unix(0, c.leaseReleaseAt.Load()); time.Now().Before(at) {
		c.log.Warn("lease-majority: shutting down with the lease held until the other side has decided; it expires in the store",
			zap.Time("release after", at))
		return
	}
	if _, err := l.Release(ctx); err != nil {
		c.log.Warn("lease-majority: releasing the lease at shutdown", zap.Error(err))
	}
}

// dropLog counts what the cluster could not deliver or use, and logs it at a bounded
// rate: the first occurrence at once, then at most one line per interval with the count
// of what was left out.
type dropLog struct {
	mu    sync.Mutex
	count uint64
	lim   ratelog.Limiter // set up on first use
}

const dropLogInterval = 10 * time.Second

func (d *dropLog) note(log *zap.Logger, what string, err error) {
	d.mu.Lock()
	d.count++
	if d.lim.Interval == 0 {
		d.lim.Interval = dropLogInterval
	}
	ok, suppressed := d.lim.Allow(time.Now())
	total := d.count
	d.mu.Unlock()
	if !ok {
		return
	}
	log.Warn(what, zap.Error(err), zap.Int("not logged since the last line", suppressed), zap.Uint64("total", total))
}
