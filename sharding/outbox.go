package sharding

import (
	"bytes"
	"fmt"

	"github.com/troupe-go/troupe/actor"
	"go.uber.org/zap"
)

// outbox holds what a region forwarded to regions on other nodes since its last flush:
// a batch per region (msgDeliveries). The region flushes it when the flush it sent
// itself comes back through its mailbox (after whatever was in the mailbox then), when
// a region's batch holds a batch's worth, and before it handles any message other than
// a delivery, or sends a region anything but a batched forward. So a lone forward
// waits for one mailbox step at most, and nothing the region does later overtakes a
// forward it made earlier.
type outbox struct {
	batches []*deliveryBatch // one per region with deliveries waiting
	spare   []*deliveryBatch // emptied batches, to reuse
	// full is the size at which a batch holds a batch's worth, and the size above which
	// a delivery travels alone: a batch's encoding stays within twice that.
	full int
	// flushQueued is set while a flush the region sent itself is on its way.
	flushQueued bool
}

// maxSpareBuffer bounds the capacity of an encodings' buffer the outbox reuses.
const maxSpareBuffer = 2 * maxDeliveriesBytes

// newOutbox returns an outbox for batches of at most limit bytes.
func newOutbox(limit int) outbox {
	return outbox{full: max((limit-deliveriesOverhead)/2, 1)}
}

// batchFor returns the batch for region to, starting one when there is none.
func (o *outbox) batchFor(to actor.Ref) *deliveryBatch {
	for _, b := range o.batches {
		if b.to == to {
			return b
		}
	}
	var b *deliveryBatch
	if n := len(o.spare); n > 0 {
		b, o.spare = o.spare[n-1], o.spare[:n-1]
		b.to = to
	} else {
		b = &deliveryBatch{to: to}
	}
	o.batches = append(o.batches, b)
	return b
}

// flushDeliveries is the message a region sends itself to flush its outbox.
type flushDeliveries struct{}

// forwardBatched adds d, forwarded to region to on another node, to to's batch.
func (r *regionActor) forwardBatched(ctx actor.Context, to actor.Ref, d *delivery) {
	b := r.out.batchFor(to)
	alone, err := b.add(r.codec, d, r.out.full)
	if err != nil {
		r.drop(ctx, d, fmt.Errorf("sharding: message %T for entity %q cannot go to %v: %w", d.msg, d.entity, to, err))
		return
	}
	if alone != nil {
		// Too large for a batch: it goes alone, after what was batched before it.
		r.flushTo(ctx, to)
		r.sendDelivery(to, alone, d.sender)
		return
	}
	switch {
	case b.size >= r.out.full:
		r.flushTo(ctx, to)
	case !r.out.flushQueued:
		r.out.flushQueued = true
		_ = r.self.Tell(flushDeliveries{})
	}
}

// flushOutbox sends every batch in the outbox.
func (r *regionActor) flushOutbox(ctx actor.Context) {
	for len(r.out.batches) > 0 {
		r.flushTo(ctx, r.out.batches[0].to)
	}
}

// flushTo sends the batch for region to, if there is one.
func (r *regionActor) flushTo(_ actor.Context, to actor.Ref) {
	for i, b := range r.out.batches {
		if b.to != to {
			continue
		}
		r.out.batches = append(r.out.batches[:i], r.out.batches[i+1:]...)
		if b.count == 0 || r.sendBatch(b) {
			b.reset()
			if cap(b.payloads) <= maxSpareBuffer {
				r.out.spare = append(r.out.spare, b)
			}
		}
		return
	}
}

// sendBatch sends b to its region, and reports whether b may be reused: the
// transport encodes a message to another node before Send returns, and keeps it only
// when it refuses it (as a dead letter).
func (r *regionActor) sendBatch(b *deliveryBatch) bool {
	err := b.to.Send(&msgDeliveries{out: b}, r.self)
	if err == nil {
		return true
	}
	// The transport has sent the batch to dead letters already.
	r.entry.stats.undelivered.Add(uint64(b.count))
	r.drops.warn(r.log, "sharding: messages for another region were not sent", zap.Stringer("region", b.to),
		zap.Int("messages", b.count), zap.Error(err))
	return false
}

// sendDelivery sends m to region to with sender, counting and logging a refusal.
func (r *regionActor) sendDelivery(to actor.Ref, m *msgDelivery, sender actor.Ref) {
	if err := to.Send(m, sender); err != nil {
		// The transport has sent it to dead letters already.
		r.entry.stats.undelivered.Add(1)
		r.drops.warn(r.log, "sharding: a message for another region was not sent", zap.Stringer("region", to), zap.Error(err))
	}
}

// fromRegionBatch takes the deliveries of a batch another region forwarded, in order,
// each as fromRegion takes a forward. It decodes (or copies) every delivery's
// encoding before it goes on, so it gives the batch's memory back at the end.
func (r *regionActor) fromRegionBatch(ctx actor.Context, m *msgDeliveries) {
	if m == nil {
		return
	}
	defer m.in.release()
	var c batchCursor
	for in, ok := m.in.next(&c); ok; in, ok = m.in.next(&c) {
		msg, err := in.msg, error(nil)
		if msg == nil { // not decoded on the transport's reader, or not decodable
			msg, err = r.codec.Decode(in.manifest, in.payload)
		}
		if err != nil {
			r.entry.stats.undelivered.Add(1)
			_ = ctx.System().DeadLetters().Send(&msgDelivery{Shard: in.shard, Entity: in.entity, Manifest: in.manifest,
				Payload: bytes.Clone(in.payload)}, in.sender)
			r.drops.warn(r.log, "sharding: a delivery from another region cannot be decoded; sent to dead letters",
				zap.String("entity", string(in.entity)), zap.Error(err))
			continue
		}
		local := delivery{shard: in.shard, entity: in.entity, msg: msg, sender: in.sender}
		// The shard's fast path says whether the core would deliver to the shard here
		// (refreshLocal keeps it so, after each message and each delivery below).
		if fp := r.fast[in.shard]; fp != nil && fp.local.Load() && fp.tryDeliver(&local) {
			continue
		}
		d := new(delivery)
		*d = local
		r.apply(ctx, r.core.deliver(d.shard, d))
		r.refreshLocal(d.shard)
	}
}
