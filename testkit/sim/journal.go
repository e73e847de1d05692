package sim

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// plug is one node incarnation's way to the journal every node shares: every call
// takes the incarnation's latency to the database, and the plug is pulled when the
// node crashes, so that a crashed process writes nothing more, while the actors it
// leaves behind the network cut run down.
type plug struct {
	j       persistence.Journal
	latency time.Duration
	pulled  atomic.Bool
}

func (p *plug) check() error {
	time.Sleep(p.latency)
	if p.pulled.Load() {
		return persistence.ErrClosed
	}
	return nil
}

func (p *plug) WriteMessages(ctx context.Context, w []persistence.AtomicWrite) ([]error, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	return p.j.WriteMessages(ctx, w)
}

func (p *plug) ReplayMessages(ctx context.Context, pid string, from, to, max uint64, fn func(persistence.Record) error) error {
	if err := p.check(); err != nil {
		return err
	}
	return p.j.ReplayMessages(ctx, pid, from, to, max, fn)
}

func (p *plug) HighestSequenceNr(ctx context.Context, pid string) (uint64, error) {
	if err := p.check(); err != nil {
		return 0, err
	}
	return p.j.HighestSequenceNr(ctx, pid)
}

func (p *plug) DeleteMessagesTo(ctx context.Context, pid string, to uint64) error {
	if err := p.check(); err != nil {
		return err
	}
	return p.j.DeleteMessagesTo(ctx, pid, to)
}

// Close closes nothing: the journal outlives every node.
func (p *plug) Close() error { return nil }
