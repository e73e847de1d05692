package sharding

import (
	"fmt"
	"sync"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"go.uber.org/zap"
)

// outbox holds what a region forwarded to regions on other nodes since its last flush:
// a batch per region (msgDeliveries). The region flushes it when the flush it sent
// itself comes back through its mailbox (after whatever was in the mailbox then), when
// a region's batch holds a batch's worth, and before it handles any message other than
// a delivery, or sends a region anything but a batched forward. So a lone forward
// waits for one mailbox step at most, and nothing the region does later overtakes a
// forward it made earlier.
//
// EntityRefs add to it too, without the region's mailbox: a message for a shard whose
// home is a region on another node goes straight into that region's batch when the
// region would forward it there now (direct, kept by the region with every change of a
// shard's route, see regionActor.refreshRoute) and no message of the EntityRef's shard
// is still on its way through the region (directRoute.viaRegion). The outbox is shut
// while the region handles anything but a delivery: the region flushes it first, and
// what it decides then (a hand-off beginning, a home lost) is in direct before an
// EntityRef may add again. A sender's messages so keep their order whichever way each
// goes: one added here is in the batch before any it sends later through the region.
//
// The fields up to closed are guarded by mu; the others never change.
type outbox struct {
	mu      sync.Mutex
	batches []*deliveryBatch // one per region with deliveries waiting
	spare   []*deliveryBatch // emptied batches, to reuse
	// full is the size at which a batch holds a batch's worth, and the size above which
	// a delivery travels alone: a batch's encoding stays within twice that.
	full int
	// flushQueued is set while a flush the region sent itself is on its way.
	flushQueued bool
	// codec encodes the messages of the batches; decoders decode them again, for a
	// batch that becomes a dead letter (deliveryBatch.decoders).
	codec    *serialization.Codec
	decoders *sync.Pool
	// direct holds the shards EntityRefs may add messages for, each with its home.
	direct map[ShardID]actor.Ref
	// open is false while the region handles a message other than a delivery, and for
	// good once the region has stopped (closed).
	open, closed bool

	// What sending a batch needs besides: the region (the batches' sender and the
	// flushes' recipient), and where a refusal is counted and logged.
	self  actor.Ref
	stats *typeStats
	log   *zap.Logger
	drops *rateLog
}

// maxSpareBuffer bounds the capacity of an encodings' buffer the outbox reuses.
const maxSpareBuffer = 2 * maxDeliveriesBytes

// newOutbox returns the (open) outbox of region r, for batches of at most limit bytes.
func newOutbox(r *regionActor, codec *serialization.Codec, limit int) *outbox {
	return &outbox{
		full:     max((limit-deliveriesOverhead)/2, 1),
		codec:    codec,
		decoders: &r.ext.decoders,
		open:     true,
		self:     r.self, stats: r.entry.stats, log: r.log, drops: r.drops,
	}
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
		b = &deliveryBatch{to: to, decoders: o.decoders}
	}
	o.batches = append(o.batches, b)
	return b
}

// add adds d, forwarded to region to, to to's batch, and flushes that batch when it
// holds a batch's worth. It reports whether the caller must send the region a flush
// (the first delivery since the last flush), or returns d as a msgDelivery of its own
// when it is too large for a batch (not added: the caller flushes to's batch and sends
// it), or an error when d's message cannot be encoded (nothing added). mu is held.
func (o *outbox) add(to actor.Ref, d *delivery) (alone *msgDelivery, flush bool, err error) {
	b := o.batchFor(to)
	if alone, err = b.add(o.codec, d, o.full); err != nil || alone != nil {
		return alone, false, err
	}
	switch {
	case b.size >= o.full:
		o.flushTo(to)
	case !o.flushQueued:
		o.flushQueued = true
		flush = true
	}
	return nil, flush, nil
}

// flushAll sends every batch. mu is held.
func (o *outbox) flushAll() {
	for len(o.batches) > 0 {
		o.flushTo(o.batches[0].to)
	}
}

// flushTo sends the batch for region to, if there is one. mu is held.
func (o *outbox) flushTo(to actor.Ref) {
	for i, b := range o.batches {
		if b.to != to {
			continue
		}
		o.batches = append(o.batches[:i], o.batches[i+1:]...)
		if b.count == 0 || o.send(b) {
			b.reset()
			if cap(b.payloads) <= maxSpareBuffer {
				o.spare = append(o.spare, b)
			}
		}
		return
	}
}

// send sends b to its region, and reports whether b may be reused: the transport
// encodes a message to another node before Send returns. A batch it refuses becomes
// dead letters (one per delivery, EachUserMessage), read before Send returns too; it
// is not reused all the same, in case a transport keeps it longer. mu is held.
func (o *outbox) send(b *deliveryBatch) bool {
	err := b.to.Send(&msgDeliveries{out: b}, o.self)
	if err == nil {
		return true
	}
	// The transport has sent the batch to dead letters already.
	o.stats.undelivered.Add(uint64(b.count))
	o.drops.warn(o.log, "sharding: messages for another region were not sent", zap.Stringer("region", b.to),
		zap.Int("messages", b.count), zap.Error(err))
	return false
}

// sendDirect adds a message from an EntityRef for entity id of shard to the batch of
// the shard's home, when the outbox is open and the region would forward it there now
// (direct), and reports whether it did. It adds nothing when the message cannot be
// encoded or would travel alone: the region places it then, and reports or sends it.
func (o *outbox) sendDirect(shard ShardID, id EntityID, msg any, sender actor.Ref) bool {
	o.mu.Lock()
	to, ok := o.direct[shard]
	if !ok || !o.open {
		o.mu.Unlock()
		return false
	}
	d := delivery{shard: shard, entity: id, msg: msg, sender: sender}
	alone, flush, err := o.add(to, &d)
	self := o.self
	o.mu.Unlock()
	if flush {
		_ = self.Tell(flushDeliveries{})
	}
	return err == nil && alone == nil
}

// setDirect records whether EntityRefs may add messages for shard s, and for which
// region (see sendDirect).
func (o *outbox) setDirect(s ShardID, to actor.Ref, ok bool) {
	o.mu.Lock()
	o.putDirect(s, to, ok)
	o.mu.Unlock()
}

// putDirect is setDirect with mu held.
func (o *outbox) putDirect(s ShardID, to actor.Ref, ok bool) {
	if !ok {
		delete(o.direct, s)
		return
	}
	if o.direct == nil {
		o.direct = map[ShardID]actor.Ref{}
	}
	o.direct[s] = to
}

// flushOwn sends every batch when the flush the region sent itself comes back.
func (o *outbox) flushOwn() {
	o.mu.Lock()
	o.flushQueued = false
	o.flushAll()
	o.mu.Unlock()
}

// shut keeps EntityRefs out while the region handles a message other than a delivery,
// and sends every batch first.
func (o *outbox) shut() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.open = false
	o.flushAll()
	o.mu.Unlock()
}

// reopen lets EntityRefs in again after shut, unless the outbox is closed.
func (o *outbox) reopen() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.open = !o.closed
	o.mu.Unlock()
}

// close shuts the outbox for good and sends every batch: its region has stopped, or
// has been replaced.
func (o *outbox) close() {
	if o == nil {
		return
	}
	o.mu.Lock()
	o.open, o.closed = false, true
	o.direct = nil
	o.flushAll()
	o.mu.Unlock()
}

// flushDeliveries is the message a region sends itself to flush its outbox.
type flushDeliveries struct{}

// forwardBatched adds d, forwarded to region to on another node, to to's batch.
func (r *regionActor) forwardBatched(ctx actor.Context, to actor.Ref, d *delivery) {
	o := r.out
	o.mu.Lock()
	alone, flush, err := o.add(to, d)
	if alone != nil {
		// Too large for a batch: it goes alone, after what was batched before it.
		o.flushTo(to)
	}
	o.mu.Unlock()
	switch {
	case err != nil:
		r.drop(ctx, d, fmt.Errorf("sharding: message %T for entity %q cannot go to %v: %w", d.msg, d.entity, to, err))
	case alone != nil:
		r.sendDelivery(to, alone, d.sender)
	case flush:
		_ = r.self.Tell(flushDeliveries{})
	}
}

// flushOutbox sends every batch in the outbox.
func (r *regionActor) flushOutbox() {
	r.out.mu.Lock()
	r.out.flushAll()
	r.out.mu.Unlock()
}

// flushTo sends the batch for region to, if there is one.
func (r *regionActor) flushTo(to actor.Ref) {
	r.out.mu.Lock()
	r.out.flushTo(to)
	r.out.mu.Unlock()
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
			ctx.System().PublishDeadLetter(r.self, undecodable(in.entity, in.manifest, in.payload), in.sender, err)
			r.drops.warn(r.log, "sharding: a delivery from another region cannot be decoded; sent to dead letters",
				zap.String("entity", string(in.entity)), zap.Error(err))
			continue
		}
		local := delivery{shard: in.shard, entity: in.entity, msg: msg, sender: in.sender}
		// The shard's fast path says whether the core would deliver to the shard here
		// (refreshRoute keeps it so, after each message and each delivery below).
		if fp := r.fast[in.shard]; fp != nil && fp.local.Load() && fp.tryDeliver(&local) {
			continue
		}
		d := new(delivery)
		*d = local
		r.apply(ctx, r.core.Deliver(d.shard, d))
		r.refreshRoute(d.shard)
	}
}
