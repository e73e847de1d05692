package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// plug is one node incarnation's way to the journal every node shares: every call
// takes the incarnation's latency to the database, and one write in ten 50 to 500 ms
// more (a busy database: entities then take a while to let go of their shards), and the plug is pulled when the node crashes, so that a crashed
// process writes nothing more, while the actors it leaves behind the network cut run
// down. A write that conflicts with another writer's is reported to the checker.
type plug struct {
	j           persistence.Journal
	latency     time.Duration
	pulled      atomic.Bool
	incarnation string
	chk         *Checker

	mu  sync.Mutex
	rng *rand.Rand
}

func (p *plug) check() error {
	time.Sleep(p.latency)
	if p.pulled.Load() {
		return persistence.ErrClosed
	}
	return nil
}

func (p *plug) WriteMessages(ctx context.Context, w []persistence.AtomicWrite) ([]error, error) {
	p.mu.Lock()
	spike := p.rng.IntN(10) == 0
	d := time.Duration(50+p.rng.IntN(450)) * time.Millisecond
	p.mu.Unlock()
	if spike {
		time.Sleep(d)
	}
	if err := p.check(); err != nil {
		return nil, err
	}
	res, err := p.j.WriteMessages(ctx, w)
	for i, e := range res {
		if errors.Is(e, persistence.ErrSequenceConflict) {
			p.chk.Conflict(w[i].PersistenceID, p.incarnation, e)
		}
	}
	return res, err
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
