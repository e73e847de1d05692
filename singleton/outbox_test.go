package singleton

import (
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/serialization"
)

// outboxMsg is the outbox tests' message.
type outboxMsg struct{ Body []byte }

// TestOutboxKeepsRecycledBuffers: a take from an empty outbox (the proxy's own flush
// arriving after a full batch went) keeps the buffers the last batch gave back, so
// that a stream of full batches reuses one set of buffers instead of growing new ones
// from the smallest size each time.
func TestOutboxKeepsRecycledBuffers(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*outboxMsg](reg, "test.outboxMsg"); err != nil {
		t.Fatal(err)
	}
	codec := reg.NewCodec(nil)
	node := cluster.UniqueAddress{Addr: "troupe://a@127.0.0.1:2552", UID: 1}
	o := newOutbox(core.ProxyID{Node: node, Path: "/system/singleton-proxy/p"}, 4<<10)
	var msg any = &outboxMsg{Body: make([]byte, 100)}
	fill := func() {
		t.Helper()
		for {
			full, err := o.add(codec, msg, actor.Ref{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if full {
				return
			}
		}
	}
	fill()
	ps, tables, data := o.take()
	o.recycle(ps, tables, data)
	if ps, _, _ := o.take(); len(ps) != 0 {
		t.Fatalf("an empty outbox took %d messages", len(ps))
	}
	if o.tables != tables || cap(o.data) != cap(data) || cap(o.pending) != cap(ps) {
		t.Fatal("a take from an empty outbox dropped the recycled buffers")
	}
	allocs := testing.AllocsPerRun(10, func() {
		fill()
		ps, tables, data := o.take()
		o.recycle(ps, tables, data)
		o.take()
	})
	if allocs > 0 {
		t.Errorf("a full batch through recycled buffers allocates %v times, want 0", allocs)
	}
}
