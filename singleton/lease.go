package singleton

import (
	"context"
	"sync"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/lease"
	"go.uber.org/zap"
)

// leaseCallTimeout bounds one call to the lease.
const leaseCallTimeout = 10 * time.Second

// leaseRunner calls the manager's lease on a goroutine of its own, one call at a
// time and in the order the core asked for them, and reports the outcomes to the
// manager (leaseResult, leaseLost) tagged with the generation of the acquisition they
// belong to, so that a late outcome of an earlier one is ignored. It is used by the
// manager's goroutine only, except for stop.
type leaseRunner struct {
	lease lease.Lease
	self  actor.Ref
	log   *zap.Logger
	gen   uint64 // the current acquisition's generation

	ops    chan func(context.Context)
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	done   chan struct{}
}

func newLeaseRunner(l lease.Lease, self actor.Ref, log *zap.Logger) *leaseRunner {
	ctx, cancel := context.WithCancel(context.Background())
	r := &leaseRunner{lease: l, self: self, log: log, ops: make(chan func(context.Context), 16),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go r.loop()
	return r
}

func (r *leaseRunner) loop() {
	defer close(r.done)
	for {
		select {
		case op := <-r.ops:
			ctx, cancel := context.WithTimeout(r.ctx, leaseCallTimeout)
			op(ctx)
			cancel()
		case <-r.ctx.Done():
			return
		}
	}
}

func (r *leaseRunner) submit(op func(context.Context)) {
	select {
	case r.ops <- op:
	case <-r.ctx.Done():
	}
}

// acquire starts an acquisition; its outcome comes back as leaseResult.
func (r *leaseRunner) acquire() {
	r.gen++
	gen, self, l, log := r.gen, r.self, r.lease, r.log
	r.submit(func(ctx context.Context) {
		ok, err := l.Acquire(ctx, func(reason error) {
			log.Warn("singleton: the lease was lost", zap.Error(reason))
			_ = self.Tell(leaseLost{gen: gen})
		})
		if err != nil {
			log.Warn("singleton: acquiring the lease failed", zap.Error(err))
		}
		_ = self.Tell(leaseResult{gen: gen, ok: ok && err == nil})
	})
}

// release gives the lease up; outcomes of the acquisition before are ignored from now
// on.
func (r *leaseRunner) release() {
	r.gen++
	l, log := r.lease, r.log
	r.submit(func(ctx context.Context) {
		if _, err := l.Release(ctx); err != nil {
			log.Warn("singleton: releasing the lease failed; it expires by itself", zap.Error(err))
		}
	})
}

// stop ends the runner: a call in progress is cancelled, and a lease still held is
// released, within leaseCallTimeout.
func (r *leaseRunner) stop() {
	r.once.Do(func() {
		r.cancel()
		go func() {
			<-r.done
			ctx, cancel := context.WithTimeout(context.Background(), leaseCallTimeout)
			defer cancel()
			_, _ = r.lease.Release(ctx)
		}()
	})
}
