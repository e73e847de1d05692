package persistence

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// plugins makes the runtime's calls to the journal and the snapshot store: each runs
// on a goroutine of its own, the caller waits for it at most its call timeout (a
// plug-in that ignores its context cannot hang an entity), and a circuit breaker per
// plug-in fails calls fast once the plug-in keeps failing.
type plugins struct {
	journal      Journal
	snaps        SnapshotStore
	jcfg, scfg   BreakerConfig
	eventTimeout time.Duration
	jb, sb       lockedBreaker
	stats        *counters

	running sync.WaitGroup // plug-in calls in flight, even abandoned ones
}

func newPlugins(cfg Config, stats *counters) *plugins {
	return &plugins{
		journal: cfg.Journal, snaps: cfg.Snapshots,
		jcfg: cfg.JournalBreaker, scfg: cfg.SnapshotBreaker,
		eventTimeout: cfg.RecoveryEventTimeout,
		jb:           lockedBreaker{b: newBreaker(cfg.JournalBreaker)},
		sb:           lockedBreaker{b: newBreaker(cfg.SnapshotBreaker)},
		stats:        stats,
	}
}

func newBreaker(c BreakerConfig) breaker {
	return breaker{maxFailures: c.MaxFailures, minReset: c.ResetTimeout, maxReset: c.MaxResetTimeout}
}

// lockedBreaker shares a breaker among the goroutines that call one plug-in, and
// reads the clock for it.
type lockedBreaker struct {
	mu sync.Mutex
	b  breaker
}

func (l *lockedBreaker) allow() (ticket, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.allow(time.Now())
}

// report gives the breaker the outcome of the call holding t, and its error.
func (l *lockedBreaker) report(t ticket, o outcome, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch o {
	case outcomeSuccess:
		l.b.succeeded(t)
	case outcomeFailure:
		l.b.failed(t, time.Now(), err)
	default:
		l.b.abandoned(t)
	}
}

func (l *lockedBreaker) state() BreakerState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.state
}

type outcome uint8

const (
	outcomeSuccess outcome = iota
	outcomeFailure
	outcomeAbandoned
)

// classify tells the breaker what a call's error says about the plug-in's health.
// Answers about the request (a rejected write, a delete beyond the highest sequence
// number, a corrupt record) show a working plug-in; a cancellation by the caller
// says nothing; every other error is a failure.
func classify(err error, caller context.Context) outcome {
	var corrupt *CorruptRecordError
	switch {
	case err == nil,
		errors.Is(err, ErrInvalidWrite), errors.Is(err, ErrSequenceConflict),
		errors.Is(err, ErrTooLarge), errors.Is(err, ErrBeyondHighest),
		errors.As(err, &corrupt):
		return outcomeSuccess
	case caller.Err() != nil:
		return outcomeAbandoned
	}
	return outcomeFailure
}

// run makes one plug-in call: fn runs on its own goroutine with a context that ends at
// the timeout (or, with idle, that is cancelled when fn has not called its progress
// function for timeout, up to a quarter more: see idleChecks), and run returns its error, or ErrCallTimeout at the
// timeout, or the caller's ctx error, or ErrCircuitOpen at once when the breaker
// refuses the call. after, when not nil, runs once fn has returned (on fn's goroutine),
// or at once when fn never started. abandoned reports that run returned while fn may
// still be running: whatever fn reads must then stay untouched.
func (p *plugins) run(ctx context.Context, br *lockedBreaker, timeout time.Duration, idle bool, what string,
	fn func(ctx context.Context, progress func()) error, after func()) (abandoned bool, err error) {
	t, err := br.allow()
	if err != nil {
		p.stats.callsRejected.Add(1)
		if after != nil {
			after()
		}
		return false, fmt.Errorf("%s: %w", what, err)
	}
	var cctx context.Context
	var cancel context.CancelFunc
	if idle {
		cctx, cancel = context.WithCancel(ctx)
	} else {
		cctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()
	// An idle call's progress is a count that fn adds to and the loop below looks at
	// idleChecks times per timeout: a replay calls progress for every event, and a
	// channel send that woke this goroutine for each one cost a replay about a
	// twentieth of its speed.
	var progressed atomic.Uint64
	signal := func() {}
	tick := timeout
	if idle {
		signal = func() { progressed.Add(1) }
		tick = timeout / idleChecks
	}
	done := make(chan error, 1)
	p.running.Add(1)
	go func() {
		defer p.running.Done()
		err := fn(cctx, signal)
		if after != nil {
			after()
		}
		done <- err
	}()
	timer := time.NewTimer(tick)
	defer timer.Stop()
	last, quiet := uint64(0), 0 // the count at the last tick, and ticks since it moved
	for {
		select {
		case err := <-done:
			if err != nil && !idle && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				// The plug-in gave up at the deadline it was given: the same timeout.
				err = fmt.Errorf("%w: %s did not answer within %v: %w", ErrCallTimeout, what, timeout, err)
				br.report(t, outcomeFailure, err)
				p.stats.callsTimedOut.Add(1)
				return false, err
			}
			br.report(t, classify(err, ctx), err)
			return false, err
		case <-timer.C:
			if idle {
				if now := progressed.Load(); now != last {
					last, quiet = now, 0
					timer.Reset(tick)
					continue
				}
				if quiet++; quiet < idleChecks {
					timer.Reset(tick)
					continue
				}
			}
			err := fmt.Errorf("%w: %s did not answer within %v", ErrCallTimeout, what, timeout)
			br.report(t, outcomeFailure, err)
			p.stats.callsTimedOut.Add(1)
			return true, err
		case <-ctx.Done():
			br.report(t, outcomeAbandoned, nil)
			return true, ctx.Err()
		}
	}
}

// idleChecks is how many times per timeout run looks at an idle call's progress: a
// call that makes none ends between its timeout and a quarter more after its last.
const idleChecks = 4

// write makes one journal call for writes. finished runs once the journal has
// returned (or at once when the call never started).
func (p *plugins) write(ctx context.Context, writes []AtomicWrite, finished func()) (results []error, abandoned bool, err error) {
	var res []error
	abandoned, err = p.run(ctx, &p.jb, p.jcfg.CallTimeout, false, "journal write", func(ctx context.Context, _ func()) error {
		var err error
		res, err = p.journal.WriteMessages(ctx, writes)
		return err
	}, finished)
	if err != nil || abandoned {
		return nil, abandoned, err
	}
	return res, false, nil
}

// replay replays the events of pid in [from, to], calling fn for each on the
// plug-in's goroutine, then end (there too, even after an error), so that fn and end
// may share state without a lock. It fails when no event arrives within the recovery
// event timeout. After an abandoned replay, fn may still be called.
func (p *plugins) replay(ctx context.Context, pid string, from, to uint64, fn func(Record) error, end func()) error {
	_, err := p.run(ctx, &p.jb, p.eventTimeout, true, fmt.Sprintf("replay of %q", pid), func(ctx context.Context, progress func()) error {
		defer end()
		return p.journal.ReplayMessages(ctx, pid, from, to, 0, func(r Record) error {
			progress()
			return fn(r)
		})
	}, nil)
	return err
}

// highest returns the highest sequence number of pid.
func (p *plugins) highest(ctx context.Context, pid string) (uint64, error) {
	var h atomic.Uint64
	_, err := p.run(ctx, &p.jb, p.jcfg.CallTimeout, false, fmt.Sprintf("highest sequence number of %q", pid), func(ctx context.Context, _ func()) error {
		n, err := p.journal.HighestSequenceNr(ctx, pid)
		h.Store(n)
		return err
	}, nil)
	return h.Load(), err
}

// deleteMessages deletes the events of pid up to toSeq.
func (p *plugins) deleteMessages(ctx context.Context, pid string, toSeq uint64) error {
	_, err := p.run(ctx, &p.jb, p.jcfg.CallTimeout, false, fmt.Sprintf("delete of %q to %d", pid, toSeq), func(ctx context.Context, _ func()) error {
		return p.journal.DeleteMessagesTo(ctx, pid, toSeq)
	}, nil)
	return err
}

// saveSnapshot stores s.
func (p *plugins) saveSnapshot(ctx context.Context, s Snapshot) error {
	_, err := p.run(ctx, &p.sb, p.scfg.CallTimeout, false, fmt.Sprintf("snapshot of %q at %d", s.Metadata.PersistenceID, s.Metadata.SequenceNr), func(ctx context.Context, _ func()) error {
		return p.snaps.SaveSnapshot(ctx, s)
	}, nil)
	return err
}

// loadSnapshot loads the newest snapshot of pid that c selects.
func (p *plugins) loadSnapshot(ctx context.Context, pid string, c SnapshotCriteria) (Snapshot, bool, error) {
	type loaded struct {
		s  Snapshot
		ok bool
	}
	var out atomic.Pointer[loaded]
	_, err := p.run(ctx, &p.sb, p.scfg.CallTimeout, false, fmt.Sprintf("snapshot load of %q", pid), func(ctx context.Context, _ func()) error {
		s, ok, err := p.snaps.LoadSnapshot(ctx, pid, c)
		out.Store(&loaded{s, ok})
		return err
	}, nil)
	if err != nil {
		return Snapshot{}, false, err
	}
	l := out.Load()
	return l.s, l.ok, nil
}

// deleteSnapshots deletes the snapshots of pid that c selects.
func (p *plugins) deleteSnapshots(ctx context.Context, pid string, c SnapshotCriteria) error {
	_, err := p.run(ctx, &p.sb, p.scfg.CallTimeout, false, fmt.Sprintf("snapshot delete of %q", pid), func(ctx context.Context, _ func()) error {
		return p.snaps.DeleteSnapshots(ctx, pid, c)
	}, nil)
	return err
}
