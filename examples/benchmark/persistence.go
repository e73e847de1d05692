package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/persistence"
	"github.com/troupe-go/troupe/persistence/badgerjournal"
	"github.com/troupe-go/troupe/serialization"
)

// BenchEvent is the persisted event: a 100-byte payload.
type BenchEvent struct{ Data []byte }

// persistRig is a system with persistence on a fresh badger journal in a temp folder.
type persistRig struct {
	sys   *actor.System
	store *badgerjournal.Store
	dir   string
}

func newPersistRig() (*persistRig, error) {
	dir, err := os.MkdirTemp("", "troupe-bench-")
	if err != nil {
		return nil, err
	}
	store, err := badgerjournal.Open(context.Background(), badgerjournal.Config{Dir: dir})
	if err != nil {
		return nil, err
	}
	reg := serialization.NewRegistry()
	if err := serialization.Register[BenchEvent](reg, "bench.Event"); err != nil {
		return nil, err
	}
	sys, err := newSystem()
	if err != nil {
		return nil, err
	}
	if _, err := persistence.Start(sys, persistence.Config{Journal: store, Snapshots: store, Registry: reg}); err != nil {
		return nil, err
	}
	return &persistRig{sys: sys, store: store, dir: dir}, nil
}

func (r *persistRig) close() {
	shutdown(r.sys)
	_ = r.store.Close()
	_ = os.RemoveAll(r.dir)
}

// writer persists count events one after the other (Persist, then the next from the
// handler), recording each persist-to-handler latency if lat is set. A persist that
// fails ends it, and done reports the error.
type writer struct {
	id       string
	count    int
	done     *writers
	finished bool
	lat      []time.Duration
	record   bool
}

// writers is what the writers of a scenario share: the count of those still writing
// and the first error one of them met.
type writers struct {
	wg  sync.WaitGroup
	mu  sync.Mutex
	err error
}

func newWriters(n int) *writers {
	ws := &writers{}
	ws.wg.Add(n)
	return ws
}

// finish records that a writer is done, with the error that ended it, if any.
func (ws *writers) finish(err error) {
	if err != nil {
		ws.mu.Lock()
		if ws.err == nil {
			ws.err = err
		}
		ws.mu.Unlock()
	}
	ws.wg.Done()
}

// wait waits until every writer is done, and returns the first error.
func (ws *writers) wait() error {
	ws.wg.Wait()
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.err
}

type startWriting struct{}

// recovered is answered once the writer has recovered (commands wait for recovery).
type recovered struct{}

func (w *writer) PersistenceID() string { return w.id }

func (w *writer) Recover(persistence.Context) {}

func (w *writer) Receive(ctx persistence.Context) {
	switch m := ctx.Message().(type) {
	case startWriting:
		w.next(ctx)
	case recovered:
		_ = ctx.Respond(recovered{})
	case persistence.PersistRejected:
		w.finish(fmt.Errorf("%s: the journal rejected event %d: %w", w.id, m.SequenceNr, m.Err))
	case actor.Stopped: // a failed write stops the entity (the log says why)
		w.finish(fmt.Errorf("%s: stopped before it had written its events", w.id))
	}
}

// finish ends the writer, once.
func (w *writer) finish(err error) {
	if !w.finished {
		w.finished = true
		w.done.finish(err)
	}
}

func (w *writer) next(ctx persistence.Context) {
	if w.count == 0 {
		w.finish(nil)
		return
	}
	w.count--
	start := time.Now()
	err := persistence.Persist(ctx, BenchEvent{Data: make([]byte, 100)}, func(BenchEvent) {
		if w.record {
			w.lat = append(w.lat, time.Since(start))
		}
		w.next(ctx)
	})
	if err != nil {
		w.finish(fmt.Errorf("%s: %w", w.id, err))
	}
}

// runPersist: 1,000 entities persisting 100-byte events concurrently, synced.
func runPersist(n int) (result, error) {
	rig, err := newPersistRig()
	if err != nil {
		return nil, err
	}
	defer rig.close()
	const entities = 1000
	per := max(1, n/entities)
	done := newWriters(entities)
	refs := make([]actor.Ref, entities)
	for i := range refs {
		id := fmt.Sprintf("writer-%d", i)
		ref, err := rig.sys.Spawn(persistence.Props(func() persistence.Entity {
			return &writer{id: id, count: per, done: done}
		}), id)
		if err != nil {
			return nil, err
		}
		refs[i] = ref
	}
	r, err := measure(per*entities, func() error {
		for _, ref := range refs {
			_ = ref.Tell(startWriting{})
		}
		return done.wait()
	})
	if r != nil {
		r["entities"] = entities
	}
	return r, err
}

// runPersistLatency: one entity, sequential persist-then-handler, synced.
func runPersistLatency(n int) (result, error) {
	rig, err := newPersistRig()
	if err != nil {
		return nil, err
	}
	defer rig.close()
	done := newWriters(1)
	w := &writer{id: "latency", count: n, done: done, record: true}
	ref, err := rig.sys.Spawn(persistence.Props(func() persistence.Entity { return w }), "latency")
	if err != nil {
		return nil, err
	}
	r, err := measure(n, func() error {
		_ = ref.Tell(startWriting{})
		return done.wait()
	})
	if err != nil {
		return nil, err
	}
	lat := append([]time.Duration(nil), w.lat...)
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		return nil, errors.New("no latencies recorded")
	}
	r["p50_us"] = round(float64(lat[len(lat)/2].Microseconds()), 0)
	r["p99_us"] = round(float64(lat[len(lat)*99/100].Microseconds()), 0)
	return r, nil
}

// replayer counts replayed events and reports when recovery completes.
type replayer struct {
	events int
	done   chan int
}

func (p *replayer) PersistenceID() string { return "replayed" }

func (p *replayer) Recover(ctx persistence.Context) {
	switch ctx.Message().(type) {
	case BenchEvent:
		p.events++
	case persistence.RecoveryCompleted:
		p.done <- p.events
	}
}

func (p *replayer) Receive(persistence.Context) {}

// runRecover: replay n events of one entity.
func runRecover(n int) (result, error) {
	rig, err := newPersistRig()
	if err != nil {
		return nil, err
	}
	defer rig.close()
	payload, _, err := func() ([]byte, string, error) {
		reg := serialization.NewRegistry()
		_ = serialization.Register[BenchEvent](reg, "bench.Event")
		m, data, err := reg.Marshal(BenchEvent{Data: make([]byte, 100)})
		return data, m, err
	}()
	if err != nil {
		return nil, err
	}
	const chunk = 10_000
	for seq := 1; seq <= n; seq += chunk {
		w := persistence.AtomicWrite{PersistenceID: "replayed"}
		for i := seq; i < seq+chunk && i <= n; i++ {
			w.Events = append(w.Events, persistence.Record{
				PersistenceID: "replayed", SequenceNr: uint64(i), Manifest: "bench.Event", Payload: payload,
			})
		}
		res, err := rig.store.WriteMessages(context.Background(), []persistence.AtomicWrite{w})
		if err != nil {
			return nil, err
		}
		if res[0] != nil {
			return nil, res[0]
		}
	}
	done := make(chan int, 1)
	var got int
	r, err := measure(n, func() error {
		if _, err := rig.sys.Spawn(persistence.Props(func() persistence.Entity { return &replayer{done: done} }), "replayer"); err != nil {
			return err
		}
		got = <-done
		return nil
	})
	if err == nil && got != n {
		return nil, fmt.Errorf("replayed %d events, want %d", got, n)
	}
	return r, err
}
