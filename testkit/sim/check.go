package sim

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/troupe-go/troupe/persistence"
)

// Checker collects what the nodes of a simulation report, and finds the violations of
// Troupe's guarantees in it: two live instances of a singleton or of an entity, an
// acknowledged event missing from a recovered history (or a gap or reorder in one), a
// request lost while nothing but graceful changes happened. A node incarnation is
// named by a string ("n2#3": node 2, third start); what a crashed incarnation reports
// after its crash is ignored, as a crashed process reports nothing. Its methods are
// safe for concurrent use; the zero Checker is not usable: call NewChecker.
type Checker struct {
	mu         sync.Mutex
	start      time.Time
	live       map[string]string // "kind/id" -> incarnation running it
	dead       map[string]bool   // crashed incarnations
	acked      map[string][]Persisted
	failed     []failedRequest
	calm       []window // when nothing but graceful changes happened
	violations []string
}

// Persisted is one event of an entity's history: its sequence number, and the
// operation (the request's number) that wrote it; 0 for an event no request wrote
// (the simulation's entities store one when they are handed off).
type Persisted struct {
	Seq, Op uint64
}

type failedRequest struct {
	what       string
	sent, done time.Time
	err        error
}

type window struct{ from, to time.Time }

// NewChecker returns a checker with nothing reported; its clock starts now.
func NewChecker() *Checker {
	return &Checker{
		start: time.Now(),
		live:  make(map[string]string),
		dead:  make(map[string]bool),
		acked: make(map[string][]Persisted),
	}
}

// Violationf records a violation found by the caller.
func (c *Checker) Violationf(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violationf(format, args...)
}

// violationf records a violation; c.mu is held.
func (c *Checker) violationf(format string, args ...any) {
	c.violations = append(c.violations, fmt.Sprintf("at %v: ", c.elapsed())+fmt.Sprintf(format, args...))
}

func (c *Checker) elapsed() time.Duration { return time.Since(c.start).Round(time.Millisecond) }

// Violations returns the violations found so far, in the order they were found.
func (c *Checker) Violations() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.violations)
}

// Started reports that incarnation runs an instance of kind ("singleton", "entity")
// named id. Another live instance anywhere is a violation.
func (c *Checker) Started(kind, id, incarnation string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead[incarnation] {
		return
	}
	key := kind + "/" + id
	if other, ok := c.live[key]; ok {
		c.violationf("two live instances of %s: on %s and on %s", key, other, incarnation)
	}
	c.live[key] = incarnation
}

// Stopped reports that incarnation's instance of kind named id has stopped.
func (c *Checker) Stopped(kind, id, incarnation string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := kind + "/" + id
	if c.live[key] == incarnation {
		delete(c.live, key)
	}
}

// Crashed reports that incarnation crashed now: its instances are gone, and what it
// reports later is ignored.
func (c *Checker) Crashed(incarnation string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead[incarnation] = true
	for key, inc := range c.live {
		if inc == incarnation {
			delete(c.live, key)
		}
	}
}

// Conflict reports that the journal refused incarnation's write of pid because
// another writer had used its sequence number: two instances of the entity wrote.
func (c *Checker) Conflict(pid, incarnation string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dead[incarnation] {
		c.violationf("%s: a write on %s conflicted with another writer's: %v", pid, incarnation, err)
	}
}

// Acked reports that the request op to the entity persisting as pid was answered:
// its event is stored at seq. The requests of one entity are sent one after another,
// so their sequence numbers must grow.
func (c *Checker) Acked(pid string, op, seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	acks := c.acked[pid]
	if n := len(acks); n > 0 && acks[n-1].Seq >= seq {
		c.violationf("%s: request %d acknowledged at sequence number %d, after request %d at %d", pid, op, seq, acks[n-1].Op, acks[n-1].Seq)
	}
	c.acked[pid] = append(acks, Persisted{Seq: seq, Op: op})
}

// Recovered reports the history an incarnation of the entity pid recovered: it must
// be gap-free from 1, name each operation once, and hold every acknowledged event at
// its sequence number.
func (c *Checker) Recovered(pid, incarnation string, history []Persisted) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead[incarnation] {
		return
	}
	c.checkHistory(pid, "recovered on "+incarnation, history)
}

// checkHistory checks one history of pid; c.mu is held.
func (c *Checker) checkHistory(pid, where string, history []Persisted) {
	ops := make(map[uint64]uint64, len(history))
	for i, p := range history {
		if p.Seq != uint64(i+1) {
			c.violationf("%s %s: event %d has sequence number %d (a gap or a reorder)", pid, where, i+1, p.Seq)
			return
		}
		if p.Op == 0 {
			continue
		}
		if seq, dup := ops[p.Op]; dup {
			c.violationf("%s %s: request %d stored twice, at %d and %d", pid, where, p.Op, seq, p.Seq)
		}
		ops[p.Op] = p.Seq
	}
	for _, a := range c.acked[pid] {
		switch {
		case a.Seq > uint64(len(history)):
			c.violationf("%s %s: acknowledged request %d at sequence number %d is lost (history ends at %d)", pid, where, a.Op, a.Seq, len(history))
		case history[a.Seq-1].Op != a.Op:
			c.violationf("%s %s: sequence number %d holds request %d, but request %d was acknowledged there", pid, where, a.Seq, history[a.Seq-1].Op, a.Op)
		}
	}
}

// CheckJournal reads the history of every entity with an acknowledged request from
// the journal and checks it as Recovered does.
func (c *Checker) CheckJournal(ctx context.Context, j persistence.Journal, decode func(persistence.Record) (op uint64, err error)) error {
	c.mu.Lock()
	pids := make([]string, 0, len(c.acked))
	for pid := range c.acked {
		pids = append(pids, pid)
	}
	c.mu.Unlock()
	slices.Sort(pids)
	for _, pid := range pids {
		var h []Persisted
		err := j.ReplayMessages(ctx, pid, 1, ^uint64(0), 0, func(r persistence.Record) error {
			op, err := decode(r)
			h = append(h, Persisted{Seq: r.SequenceNr, Op: op})
			return err
		})
		if err != nil {
			return fmt.Errorf("sim: replaying %s: %w", pid, err)
		}
		c.mu.Lock()
		c.checkHistory(pid, "in the journal at the end", h)
		c.mu.Unlock()
	}
	return nil
}

// RequestFailed reports a request that got no answer (or an error) between sent and
// now. Unless a fault other than a graceful change overlaps that time (see Calm),
// it is a violation: nothing may be lost while nodes join and leave gracefully.
func (c *Checker) RequestFailed(what string, sent time.Time, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = append(c.failed, failedRequest{what: what, sent: sent, done: time.Now(), err: err})
}

// Calm reports that from from to to, nothing but graceful changes (joins, leaves)
// happened and nothing else still had effects.
func (c *Checker) Calm(from, to time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if to.After(from) {
		c.calm = append(c.calm, window{from, to})
	}
}

// CheckRequests turns every failed request that fell wholly within a calm window into
// a violation.
func (c *Checker) CheckRequests() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.failed {
		for _, w := range c.calm {
			if !f.sent.Before(w.from) && !f.done.After(w.to) {
				c.violations = append(c.violations, fmt.Sprintf("at %v: %s, sent at %v while only graceful changes happened, failed: %v",
					f.done.Sub(c.start).Round(time.Millisecond), f.what, f.sent.Sub(c.start).Round(time.Millisecond), f.err))
				break
			}
		}
	}
}

// Counts returns how many requests were acknowledged and how many failed.
func (c *Checker) Counts() (acked, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, a := range c.acked {
		acked += len(a)
	}
	return acked, len(c.failed)
}
