package actor

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"
)

type drainMsg struct{}

// BenchmarkDrain measures the consumer side alone: push a batch on this goroutine,
// then drain it here, so no other core is involved.
func BenchmarkDrain(b *testing.B) {
	sys, err := New("drain", Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = sys.Shutdown(context.Background()) }()
	n := 0
	ref, _ := sys.Spawn(PropsFunc(func(ctx Context) {
		if _, ok := ctx.Message().(*drainMsg); ok {
			n++
		}
	}), "sink")
	c := ref.p.(*cell)
	// Take the cell over for this goroutine.
	for !c.sched.CompareAndSwap(schedIdle, schedRunning) {
	}
	msg := &drainMsg{}
	const batch = 128
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		for range batch {
			c.userq.Push(envelope{msg: msg})
		}
		for c.drain(1 << 30) {
		}
	}
	b.StopTimer()
	c.sched.Store(schedIdle)
}

// The layout promise of cell: it fills the 128-byte size class, whose objects are
// 128-byte aligned, so its first 64 bytes (cur and what only the owner reads) and its
// last 64 (what senders read) are separate cache lines.
func TestCellLayout(t *testing.T) {
	var c cell
	if size := unsafe.Sizeof(c); size != 128 {
		t.Errorf("cell is %d bytes; it must be 128, one allocator size class of two cache lines", size)
	}
	for name, off := range map[string]uintptr{
		"cur": unsafe.Offsetof(c.cur), "actor": unsafe.Offsetof(c.actor),
		"props": unsafe.Offsetof(c.props), "parent": unsafe.Offsetof(c.parent),
	} {
		if off >= 64 {
			t.Errorf("%s at offset %d is not on the owner's line", name, off)
		}
	}
	for name, off := range map[string]uintptr{
		"sys": unsafe.Offsetof(c.sys), "sched": unsafe.Offsetof(c.sched), "state": unsafe.Offsetof(c.state),
		"userq": unsafe.Offsetof(c.userq), "sysq": unsafe.Offsetof(c.sysq), "x": unsafe.Offsetof(c.x),
	} {
		if off < 64 {
			t.Errorf("%s at offset %d shares the owner's line", name, off)
		}
	}
	// Every cell starts a 128-byte block: the allocator's size class for it aligns so.
	for range 100 {
		cellSink = new(cell) // on the heap, as spawned cells are
		if p := uintptr(unsafe.Pointer(cellSink)); p%128 != 0 {
			t.Fatalf("a cell at %#x is not 128-byte aligned", p)
		}
	}
	cellSink = nil
}

var cellSink *cell

// A mailbox that grew under a burst is kept while the actor is busy and released by
// the janitor once the actor has been idle for an interval.
func TestJanitorReleasesGrownMailbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := New("janitor", Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sys.Shutdown(context.Background()) }()
		gate := make(chan struct{})
		handled := 0
		c := burst(sys, gate, func() { handled++ })
		close(gate)
		synctest.Wait()
		owning(c, func() {
			if handled != 1000 || !c.userq.Grown() {
				t.Fatalf("after the burst: handled %d, grown %v", handled, c.userq.Grown())
			}
		})
		time.Sleep(2 * janitorInterval)
		synctest.Wait()
		owning(c, func() {
			if c.userq.Grown() {
				t.Fatal("the janitor did not release the grown mailbox of an idle actor")
			}
		})
	})
}

// burst spawns an actor in sys that blocks on gate for each string and calls onInt for
// each int, blocks it with a string and sends it 1,000 ints, and returns its cell. Call
// it inside a synctest bubble.
func burst(sys *System, gate chan struct{}, onInt func()) *cell {
	ref, _ := sys.Spawn(PropsFunc(func(ctx Context) {
		switch ctx.Message().(type) {
		case string:
			<-gate
		case int:
			onInt()
		}
	}), "bursty")
	_ = ref.Tell("block")
	synctest.Wait()
	for i := range 1000 {
		_ = ref.Tell(i)
	}
	return ref.p.(*cell)
}

// owning runs f while the test owns cell c (as a worker would), once c is idle.
func owning(c *cell, f func()) {
	for !c.sched.CompareAndSwap(schedIdle, schedRunning) {
		synctest.Wait()
	}
	f()
	c.sched.Store(schedIdle)
}

// A cell whose mailbox grew is offered to the janitor once, not on every drain, and a
// sweep that finds it busy keeps it a candidate: once it is idle, a later sweep
// releases the grown mailbox, though the actor never ran dry again in between.
func TestJanitorKeepsABusyCandidate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sys, err := New("janitor", Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sys.Shutdown(context.Background()) }()
		gate := make(chan struct{})
		c := burst(sys, gate, func() {})
		ref := Ref{c}
		gate <- struct{}{}
		synctest.Wait() // the burst is handled: the grown mailbox is offered
		candidate := func() bool {
			sys.jan.mu.Lock()
			defer sys.jan.mu.Unlock()
			_, ok := sys.jan.cands[c]
			return ok && c.state.Load()&stateJanitor != 0
		}
		if !candidate() {
			t.Fatal("the grown mailbox was not offered to the janitor")
		}
		_ = ref.Tell("block") // busy through the next sweep
		synctest.Wait()
		time.Sleep(janitorInterval)
		synctest.Wait()
		if !candidate() {
			t.Fatal("a sweep that found the actor busy forgot it")
		}
		gate <- struct{}{} // idle again, with nothing left to offer
		synctest.Wait()
		time.Sleep(janitorInterval)
		synctest.Wait()
		var grown bool
		owning(c, func() { grown = c.userq.Grown() })
		if grown || candidate() {
			t.Fatalf("after an idle sweep: grown %v, candidate %v", grown, candidate())
		}
	})
}
