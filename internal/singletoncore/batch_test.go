package singletoncore

import (
	"fmt"
	"testing"
)

// batch returns proxy i's messages first..last as one Batch, in the epoch after
// after (sent to prev before).
func batch(i int, first, last, after uint64, prev int) Batch {
	e := env(i, first, after, prev)
	b := Batch{Proxy: e.Proxy, First: first, After: after, Prev: e.Prev}
	for s := first; s <= last; s++ {
		b.Payloads = append(b.Payloads, env(i, s, after, prev).Payload)
	}
	return b
}

func sendMany(from, to int) Event {
	var ps []Payload
	for n := from; n <= to; n++ {
		ps = append(ps, Payload{Manifest: "m", Data: fmt.Appendf(nil, "u%d", n)})
	}
	return SendMany{Payloads: ps}
}

// A proxy sends what it may send at once in one Batch, numbered on; what it buffers
// leaves in one Batch when the host answers; after it stops, each is dropped.
func TestProxySendsBatches(t *testing.T) {
	p := newProxy(t, ProxyConfig{})
	wantDecisions(t, feedProxy(p, sendMany(1, 2), up(1, 10)), "n1 <- Identify", "StartTimer identify")
	wantDecisions(t, feedProxy(p, send(3), sendMany(4, 5)))
	if st := p.Status(); st.Buffered != 5 {
		t.Fatalf("status %+v", st)
	}
	ds := p.Handle(IdentifyAck{From: node(1), Accepting: true})
	wantDecisions(t, show(ds), "CancelTimer identify", "n1 <- Batch u1 u2 u3 u4 u5")
	ds = p.Handle(sendMany(6, 8))
	wantDecisions(t, show(ds), "n1 <- Batch u6 u7 u8")
	wantDecisions(t, sentEnvelopes(ds), "n1 u6 6/0/-", "n1 u7 7/0/-", "n1 u8 8/0/-")
	wantDecisions(t, feedProxy(p, SendMany{}))
	wantDecisions(t, feedProxy(p, ProxyStopping{}), "n1 <- Detach")
	wantDecisions(t, feedProxy(p, sendMany(9, 10)), "Dropped u9", "Dropped u10")
}

// A full buffer drops the oldest of a SendMany too.
func TestProxyBatchOverflowsBuffer(t *testing.T) {
	p := newProxy(t, ProxyConfig{BufferSize: 2})
	wantDecisions(t, feedProxy(p, sendMany(1, 3)), "Dropped u1")
	feedProxy(p, up(1, 10))
	wantDecisions(t, feedProxy(p, IdentifyAck{From: node(1), Accepting: true}), "CancelTimer identify", "n1 <- Batch u2 u3")
}

// A host delivers a batch in order in one decision; one that must wait, or arrives
// while the singleton does not run, is handled as its envelopes.
func TestManagerBatches(t *testing.T) {
	m := newManager(t, 1, nil)
	feed(m, up(1, 10), up(2, 20), up(3, 30))
	wantDecisions(t, feed(m, batch(5, 1, 3, 0, 0)), "DeliverBatch 5:1 5:2 5:3")
	wantDecisions(t, feed(m, batch(5, 4, 5, 0, 0)), "DeliverBatch 5:4 5:5")
	// A straggler below the next expected is delivered at once, as an Envelope would be.
	wantDecisions(t, feed(m, batch(5, 2, 2, 0, 0)), "DeliverBatch 5:2")

	// A proxy that sent to node 3 first: held back until those are known to be lost
	// or arrive.
	wantDecisions(t, feed(m, batch(6, 3, 4, 2, 3)), "StartTimer order-wait")
	wantDecisions(t, feed(m, batch(6, 5, 5, 2, 3)))
	wantDecisions(t, feed(m, Relay{From: node(3), Ordered: []Envelope{env(6, 1, 0, 0), env(6, 2, 0, 0)}}),
		"Deliver 6:1", "Deliver 6:2", "Deliver 6:3", "Deliver 6:4", "Deliver 6:5", "CancelTimer order-wait")
	wantDecisions(t, feed(m, batch(6, 6, 7, 2, 3)), "DeliverBatch 6:6 6:7")

	// While the singleton restarts for a hand-over, batches are kept for the
	// successor, in order.
	wantDecisions(t, feed(m, HandOverToMe{From: node(2)}), "n2 <- HandOverInProgress", "SendTermination")
	wantDecisions(t, feed(m, batch(7, 1, 2, 0, 0)))
	wantDecisions(t, feed(m, ChildTerminated{}),
		"n2 <- HandOverDone(final=true next p5=6 next p6=8 next p7=3 ordered 7:1 ordered 7:2)",
		"n3 <- TakeOverFromMe")
	// In End, the successor gets them as envelopes.
	wantDecisions(t, feed(m, batch(7, 3, 4, 0, 0)), "n2 <- Envelope 7:3", "n2 <- Envelope 7:4")
}

// A batch for a manager that was downed is dropped, each message with a reason.
func TestManagerDropsBatchWhenDowned(t *testing.T) {
	m := newManager(t, 1, nil)
	feed(m, up(1, 10), up(2, 20))
	feed(m, SelfDowned{})
	wantDecisions(t, feed(m, batch(5, 1, 2, 0, 0)), "Dropped 5:1", "Dropped 5:2")
}

// Slice keeps the numbering.
func TestBatchSlice(t *testing.T) {
	b := batch(5, 10, 14, 3, 2).Slice(2, 4)
	if b.First != 12 || len(b.Payloads) != 2 || b.After != 3 || b.Prev != node(2) ||
		string(b.Payloads[0].Data) != "5:12" || b.Envelope(1).Seq != 13 {
		t.Fatalf("%+v", b)
	}
}
