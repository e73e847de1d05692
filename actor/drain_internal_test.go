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

// The layout promise of cell: cur is 64 bytes or more away from what senders read.
func TestCellLayoutKeepsCurApart(t *testing.T) {
	var c cell
	cur := unsafe.Offsetof(c.cur) + unsafe.Sizeof(c.cur)
	for name, off := range map[string]uintptr{
		"sched": unsafe.Offsetof(c.sched), "state": unsafe.Offsetof(c.state),
		"userq": unsafe.Offsetof(c.userq), "box": unsafe.Offsetof(c.box), "sysq": unsafe.Offsetof(c.sysq),
	} {
		if off < cur+64 {
			t.Errorf("%s at offset %d is within 64 bytes of cur, which ends at %d", name, off, cur)
		}
	}
	if size := unsafe.Sizeof(c); size > 160 {
		t.Errorf("cell is %d bytes; keep it within the 160-byte size class", size)
	}
}

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
		ref, _ := sys.Spawn(PropsFunc(func(ctx Context) {
			switch ctx.Message().(type) {
			case string:
				<-gate
			case int:
				handled++
			}
		}), "bursty")
		c := ref.p.(*cell)
		_ = ref.Tell("block")
		synctest.Wait()
		for i := range 1000 {
			_ = ref.Tell(i)
		}
		close(gate)
		synctest.Wait()
		owned := func(f func()) {
			for !c.sched.CompareAndSwap(schedIdle, schedRunning) {
				synctest.Wait()
			}
			f()
			c.sched.Store(schedIdle)
		}
		owned(func() {
			if handled != 1000 || !c.userq.Grown() {
				t.Fatalf("after the burst: handled %d, grown %v", handled, c.userq.Grown())
			}
		})
		time.Sleep(2 * janitorInterval)
		synctest.Wait()
		owned(func() {
			if c.userq.Grown() {
				t.Fatal("the janitor did not release the grown mailbox of an idle actor")
			}
		})
	})
}
