package persistence

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
)

// AtLeastOnceDelivery sends messages to other actors until they are confirmed, and
// keeps the record of what is unconfirmed in the entity's own events and snapshots,
// so that nothing is lost across a crash or a restart.
//
// Embed it in an Entity. Call Deliver from the handler of the event that records the
// intent to send (and from Recover for the same event, so that recovery rebuilds the
// record), and ConfirmDelivery from the handler of the event that records the
// confirmation. During recovery nothing is sent; once recovery completes, every
// delivery still unconfirmed is sent again. Unconfirmed messages are redelivered every
// RedeliverInterval; after WarnAfter attempts the entity receives an UnconfirmedWarning.
// The receiver must therefore tolerate duplicates.
type AtLeastOnceDelivery struct {
	// RedeliverInterval is how long a delivery waits for its confirmation before it is
	// sent again. Default 5s.
	RedeliverInterval time.Duration
	// WarnAfter is the number of attempts after which an UnconfirmedWarning is sent
	// to the entity (once per delivery). Default 5.
	WarnAfter int
	// MaxUnconfirmed bounds the unconfirmed deliveries; Deliver fails with
	// ErrTooManyUnconfirmed beyond it. Default 100,000.
	MaxUnconfirmed int

	nextID      uint64
	unconfirmed map[uint64]*delivery
	self        actor.Ref
	live        bool // recovery is complete: Deliver sends at once
}

type delivery struct {
	dest     actor.Ref
	msg      any
	attempts int
	last     time.Time
	warned   bool
}

// UnconfirmedDelivery describes one delivery waiting for its confirmation.
type UnconfirmedDelivery struct {
	DeliveryID  uint64
	Destination actor.Ref
	Message     any
}

// UnconfirmedWarning tells the entity which deliveries have reached WarnAfter attempts.
type UnconfirmedWarning struct {
	Unconfirmed []UnconfirmedDelivery
}

// DeliverySnapshot is the delivery state to include in a snapshot and to restore with
// SetDeliverySnapshot. Stored in a snapshot (or an event), each unconfirmed message
// keeps its registered type: it is serialised through the registry under its own
// manifest, so its type must be registered too. Its destination is stored as an
// actor path and resolves again on recovery.
type DeliverySnapshot struct {
	CurrentDeliveryID uint64
	Unconfirmed       []UnconfirmedDelivery
}

// ErrTooManyUnconfirmed is returned by Deliver when MaxUnconfirmed is reached.
var ErrTooManyUnconfirmed = errors.New("persistence: too many unconfirmed deliveries")

// redeliverTick is the runner's timer message.
type redeliverTick struct{}

// atLeastOnce is how the runner finds the embedded AtLeastOnceDelivery.
type atLeastOnce interface{ atLeastOnceDelivery() *AtLeastOnceDelivery }

func (a *AtLeastOnceDelivery) atLeastOnceDelivery() *AtLeastOnceDelivery { return a }

func (a *AtLeastOnceDelivery) interval() time.Duration {
	if a.RedeliverInterval > 0 {
		return a.RedeliverInterval
	}
	return 5 * time.Second
}

// Deliver sends build(id) to dest with a new delivery id, and keeps resending it until
// ConfirmDelivery(id). It returns the id.
func (a *AtLeastOnceDelivery) Deliver(dest actor.Ref, build func(deliveryID uint64) any) (uint64, error) {
	limit := a.MaxUnconfirmed
	if limit <= 0 {
		limit = 100_000
	}
	if len(a.unconfirmed) >= limit {
		return 0, fmt.Errorf("%w: %d", ErrTooManyUnconfirmed, limit)
	}
	if a.unconfirmed == nil {
		a.unconfirmed = make(map[uint64]*delivery)
	}
	a.nextID++
	id := a.nextID
	d := &delivery{dest: dest, msg: build(id)}
	a.unconfirmed[id] = d
	if a.live {
		a.send(d, time.Now())
	}
	return id, nil
}

// ConfirmDelivery marks id as delivered and reports whether it was unconfirmed.
func (a *AtLeastOnceDelivery) ConfirmDelivery(id uint64) bool {
	if _, ok := a.unconfirmed[id]; !ok {
		return false
	}
	delete(a.unconfirmed, id)
	return true
}

// NumberOfUnconfirmed is the number of deliveries waiting for confirmation.
func (a *AtLeastOnceDelivery) NumberOfUnconfirmed() int { return len(a.unconfirmed) }

// DeliverySnapshot returns the state to store in a snapshot.
func (a *AtLeastOnceDelivery) DeliverySnapshot() DeliverySnapshot {
	s := DeliverySnapshot{CurrentDeliveryID: a.nextID}
	for id, d := range a.unconfirmed {
		s.Unconfirmed = append(s.Unconfirmed, UnconfirmedDelivery{DeliveryID: id, Destination: d.dest, Message: d.msg})
	}
	sort.Slice(s.Unconfirmed, func(i, j int) bool { return s.Unconfirmed[i].DeliveryID < s.Unconfirmed[j].DeliveryID })
	return s
}

// SetDeliverySnapshot restores the state of a snapshot, typically from Recover's
// SnapshotOffer. The deliveries are sent again when recovery completes.
func (a *AtLeastOnceDelivery) SetDeliverySnapshot(s DeliverySnapshot) {
	a.nextID = s.CurrentDeliveryID
	a.unconfirmed = make(map[uint64]*delivery, len(s.Unconfirmed))
	for _, u := range s.Unconfirmed {
		a.unconfirmed[u.DeliveryID] = &delivery{dest: u.Destination, msg: u.Message}
	}
}

func (a *AtLeastOnceDelivery) send(d *delivery, now time.Time) {
	d.attempts++
	d.last = now
	_ = d.dest.Send(d.msg, a.self)
}

// start runs when recovery completes: it sends everything unconfirmed, in id order,
// and starts the redelivery timer.
func (a *AtLeastOnceDelivery) start(ctx actor.Context) {
	a.self, a.live = ctx.Self(), true
	now := time.Now()
	ids := make([]uint64, 0, len(a.unconfirmed))
	for id := range a.unconfirmed {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		a.send(a.unconfirmed[id], now)
	}
	ctx.StartPeriodicTimer(redeliverTick{}, redeliverTick{}, a.interval()/2)
}

// tick resends deliveries older than the interval and returns the warning to give
// the entity, if any delivery just reached WarnAfter attempts.
func (a *AtLeastOnceDelivery) tick() (UnconfirmedWarning, bool) {
	warnAfter := a.WarnAfter
	if warnAfter <= 0 {
		warnAfter = 5
	}
	now := time.Now()
	var warn UnconfirmedWarning
	ids := make([]uint64, 0, len(a.unconfirmed))
	for id := range a.unconfirmed {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		d := a.unconfirmed[id]
		if now.Sub(d.last) < a.interval() {
			continue
		}
		a.send(d, now)
		if d.attempts >= warnAfter && !d.warned {
			d.warned = true
			warn.Unconfirmed = append(warn.Unconfirmed, UnconfirmedDelivery{DeliveryID: id, Destination: d.dest, Message: d.msg})
		}
	}
	return warn, len(warn.Unconfirmed) > 0
}

// errDeliveryCodec reports an UnconfirmedDelivery encoded or decoded outside
// persistence, which alone knows the registry its message is encoded with.
var errDeliveryCodec = errors.New("persistence: an UnconfirmedDelivery is encoded only in events and snapshots of persistence")

// EncodeMsgpack encodes the delivery with its message serialised through the
// registry of persistence, under its manifest, so that the message decodes as the
// registered type it was (a plain msgpack encoding of Message, an interface, would
// decode as a map). It works inside the events and snapshots persistence encodes, and
// fails elsewhere.
func (u UnconfirmedDelivery) EncodeMsgpack(enc *msgpack.Encoder) error {
	cc, ok := serialization.EncoderContext(enc).(*codecContext)
	if !ok {
		return errDeliveryCodec
	}
	manifest, payload, err := cc.reg.AppendMarshal(nil, u.Message, cc)
	if err != nil {
		return fmt.Errorf("unconfirmed delivery %d: %w", u.DeliveryID, err)
	}
	if err := enc.EncodeMapLen(4); err != nil {
		return err
	}
	for _, kv := range []struct {
		k string
		v any
	}{{"DeliveryID", u.DeliveryID}, {"Destination", u.Destination}, {"Manifest", manifest}, {"Payload", payload}} {
		if err := enc.EncodeString(kv.k); err != nil {
			return err
		}
		if err := enc.Encode(kv.v); err != nil {
			return err
		}
	}
	return nil
}

// DecodeMsgpack decodes what EncodeMsgpack encoded, with the message decoded as its
// registered type. Unknown keys are skipped.
func (u *UnconfirmedDelivery) DecodeMsgpack(dec *msgpack.Decoder) error {
	cc, ok := serialization.DecoderContext(dec).(*codecContext)
	if !ok {
		return errDeliveryCodec
	}
	n, err := dec.DecodeMapLen()
	if err != nil {
		return err
	}
	var manifest string
	var payload []byte
	for range max(n, 0) {
		key, err := dec.DecodeString()
		if err != nil {
			return err
		}
		switch key {
		case "DeliveryID":
			err = dec.Decode(&u.DeliveryID)
		case "Destination":
			err = dec.Decode(&u.Destination)
		case "Manifest":
			manifest, err = dec.DecodeString()
		case "Payload":
			payload, err = dec.DecodeBytes()
		default:
			err = dec.Skip()
		}
		if err != nil {
			return err
		}
	}
	msg, err := cc.reg.UnmarshalContext(manifest, payload, cc)
	if err != nil {
		return fmt.Errorf("unconfirmed delivery %d: %w", u.DeliveryID, err)
	}
	u.Message = msg
	return nil
}
