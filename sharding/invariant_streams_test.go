package sharding

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/testkit"
)

// The invariant checker's streams of tells: clients send numbered tells through
// EntityRefs (the path that adds to the region's batches itself and reaches local
// entities directly) to a few plain entities, which record what they receive. A
// stream is one client's tells through one node's incarnation: its order is what
// Troupe keeps. The checks: no entity ever receives a stream's tells out of order or
// twice, whatever the schedule; and, when shards only moved gracefully, every tell of
// a stream whose node stayed up arrives.

// SeqTell is the n-th tell of a stream.
type SeqTell struct {
	Stream string
	N      int
}

// seqSync asks a stream entity to answer, pacing the stream's client.
type seqSync struct{}

// streamEntityIDs are the entities the streams go to.
var streamEntityIDs = entityIDs(6)

// streamLog records, per entity and stream, the tells received, in the order the
// entity's incarnations handled them.
type streamLog struct {
	mu         sync.Mutex
	last       map[[2]string]int    // (entity, stream) -> the last N received
	lastAt     map[[2]string]string // ... and the node incarnation that received it
	received   map[string]int       // stream -> tells received
	violations []string
	changed    chan struct{}
}

func newStreamLog() *streamLog {
	return &streamLog{last: map[[2]string]int{}, lastAt: map[[2]string]string{}, received: map[string]int{},
		changed: make(chan struct{}, 1)}
}

func (l *streamLog) record(id EntityID, node string, m SeqTell) {
	l.mu.Lock()
	k := [2]string{string(id), m.Stream}
	if prev, ok := l.last[k]; ok && m.N <= prev {
		l.violations = append(l.violations, fmt.Sprintf("entity %s on %s got tell %d of %q after tell %d (on %s)",
			id, node, m.N, m.Stream, prev, l.lastAt[k]))
	}
	l.last[k], l.lastAt[k] = m.N, node
	l.received[m.Stream]++
	l.mu.Unlock()
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// awaitReceived waits until every stream in want has had its count received, or
// until timeout; it returns the streams short of their count.
func (l *streamLog) awaitReceived(want map[string]int, timeout time.Duration) map[string][2]int {
	deadline := time.After(timeout)
	for {
		short := map[string][2]int{}
		l.mu.Lock()
		for s, n := range want {
			if got := l.received[s]; got != n {
				short[s] = [2]int{got, n}
			}
		}
		l.mu.Unlock()
		if len(short) == 0 {
			return nil
		}
		select {
		case <-l.changed:
		case <-deadline:
			return short
		}
	}
}

// streamEntity records the SeqTells it receives and answers seqSync.
type streamEntity struct {
	id   EntityID
	node string // the node incarnation it runs on
	log  *streamLog
}

func (e *streamEntity) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case SeqTell:
		e.log.record(e.id, e.node, m)
	case seqSync:
		_ = ctx.Respond(1) // an int: registered with the tests' registry
	}
}

// seqConfig is the configuration of the stream entities' type, "Seq".
func seqConfig(node string, log *streamLog) EntityConfig {
	c := persistentCounterConfig()
	c.EntityFactory = func(id EntityID) *actor.Props {
		return actor.PropsOf(func() actor.Actor { return &streamEntity{id: id, node: node, log: log} })
	}
	c.Timings.RebalanceInterval = time.Second
	return c
}

// streamNode is what a stream client sends through: a node's incarnation, named, and
// its EntityRefs of the stream entities.
type streamNode struct {
	name string
	refs []EntityRef[any]
}

// newStreamNode starts the "Seq" type on s and returns the node's EntityRefs to it.
func newStreamNode(t *testing.T, s *Sharding, sys *actor.System, name string, log *streamLog) streamNode {
	if _, err := s.Start("Seq", seqConfig(name, log)); err != nil {
		t.Fatal(err)
	}
	n := streamNode{name: name}
	for _, id := range streamEntityIDs {
		ref, err := EntityRefFor[any](sys, "Seq", id)
		if err != nil {
			t.Fatal(err)
		}
		n.refs = append(n.refs, ref)
	}
	return n
}

// runStreamClient sends bursts of numbered tells through nodes picked from live, each
// burst one stream's continuation, until stop is closed; it counts in sent the tells
// each stream handed over. A burst ends early when its node starts to leave.
func runStreamClient(c int, rng *rand.Rand, live *liveRegions, stop <-chan struct{}, sent *streamCounts) {
	next := map[string]int{}
	for {
		select {
		case <-stop:
			return
		default:
		}
		node, sn, ok := live.pickStream(rng)
		if !ok {
			continue
		}
		stream := fmt.Sprintf("client%d via %s", c, sn.name)
		last := 0
		for range 20 {
			if live.isLeaving(node) {
				break
			}
			next[stream]++
			last = rng.IntN(len(sn.refs))
			if sn.refs[last].Tell(SeqTell{Stream: stream, N: next[stream]}) == nil {
				sent.add(stream)
			}
		}
		// Pace the stream by a round trip (its answer, or its timeout).
		ctx, cancel := context.WithTimeout(context.Background(), testkit.Dilated(2*time.Second))
		_, _ = sn.refs[last].Ask(ctx, seqSync{}).Result(ctx)
		cancel()
	}
}

// streamCounts counts the tells each stream handed over.
type streamCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *streamCounts) add(stream string) {
	s.mu.Lock()
	s.n[stream]++
	s.mu.Unlock()
}

// through returns the counts of the streams through the named node incarnations.
func (s *streamCounts) through(names []string) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for stream, n := range s.n {
		for _, name := range names {
			if strings.HasSuffix(stream, " via "+name) {
				out[stream] = n
			}
		}
	}
	return out
}

// checkStreams reports the streams' violations: tells out of order or twice, always;
// and, when only graceful moves happened, tells of streams through nodes that stayed
// up that never arrived.
func checkStreams(t *testing.T, seed uint64, schedule []string, log *streamLog, sent *streamCounts, stayed []string, lossless bool) {
	t.Helper()
	log.mu.Lock()
	violations := slices.Clone(log.violations)
	streams, tells := len(log.received), 0
	for _, n := range log.received {
		tells += n
	}
	log.mu.Unlock()
	for _, v := range violations {
		t.Errorf("seed %d (schedule %v): stream order: %s", seed, schedule, v)
	}
	if !lossless {
		t.Logf("seed %d: %d streams of tells (%d received) kept their order", seed, streams, tells)
		return
	}
	want := sent.through(stayed)
	if short := log.awaitReceived(want, testkit.Dilated(20*time.Second)); len(short) > 0 {
		t.Errorf("seed %d (schedule %v): tells lost in graceful moves (stream: received, sent): %v", seed, schedule, short)
	}
	t.Logf("seed %d: %d streams of tells (%d received) kept their order; the %d through nodes that stayed up lost nothing",
		seed, streams, tells, len(want))
}
