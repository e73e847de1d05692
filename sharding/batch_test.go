package sharding

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/internal/shardcore"
	"github.com/troupe-go/troupe/internal/wirebatch"
	"github.com/troupe-go/troupe/serialization"
	"github.com/troupe-go/troupe/testkit"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// testBatchOf adds ds to a new batch with codec, failing the test if one does not fit.
func testBatchOf(t testing.TB, codec *serialization.Codec, ds ...delivery) *deliveryBatch {
	t.Helper()
	b := &deliveryBatch{}
	for i := range ds {
		alone, err := b.add(codec, &ds[i], 1<<20)
		if err != nil || alone != nil {
			t.Fatalf("adding delivery %d: %v, %v", i, alone, err)
		}
	}
	return b
}

func marshalDeliveries(t testing.TB, reg *serialization.Registry, m *msgDeliveries) []byte {
	t.Helper()
	manifest, data, err := reg.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if manifest != deliveriesName {
		t.Fatalf("manifest %q, want %q", manifest, deliveriesName)
	}
	return data
}

func unmarshalDeliveries(reg *serialization.Registry, data []byte, ctx any) ([]batchedDelivery, error) {
	v, err := reg.UnmarshalContext(deliveriesName, data, ctx)
	if err != nil {
		return nil, err
	}
	return v.(*msgDeliveries).in.all(), nil
}

// sameDeliveries reports how a differs from b, or "".
func sameDeliveries(a, b []batchedDelivery) string {
	if len(a) != len(b) {
		return fmt.Sprintf("%d deliveries, want %d", len(a), len(b))
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.shard != y.shard || x.entity != y.entity || x.sender != y.sender || x.manifest != y.manifest || !bytes.Equal(x.payload, y.payload) {
			return fmt.Sprintf("delivery %d: %+v, want %+v", i, x, y)
		}
	}
	return ""
}

// A batch of deliveries with several senders (and none) and manifests survives the
// transport's encoding: each delivery keeps its shard, entity, sender and message, in
// order.
func TestDeliveriesRoundTrip(t *testing.T) {
	sys := testkit.NewSystem(t)
	a, b := testkit.NewProbe(t, sys).Ref(), testkit.NewProbe(t, sys).Ref()
	reg := testRegistry(t)
	res := refResolver{sys}
	codec := reg.NewCodec(res)
	ds := []delivery{
		{shard: "1", entity: "e1", msg: Increment{By: 1}, sender: a},
		{shard: "1", entity: "e1", msg: Increment{By: 2}, sender: b},
		{shard: "22", entity: "entity-2", msg: GetCount{}},
		{shard: "1", entity: "e3", msg: "text", sender: a},
		{shard: "3", entity: "e1", msg: Increment{By: 3}, sender: b},
	}
	batch := testBatchOf(t, codec, ds...)
	if len(batch.senders) != 3 || len(batch.manifests) != 3 {
		t.Fatalf("tables of %d senders and %d manifests, want 3 and 3", len(batch.senders), len(batch.manifests))
	}
	got, err := unmarshalDeliveries(reg, marshalDeliveries(t, reg, &msgDeliveries{out: batch}), res)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ds) {
		t.Fatalf("%d deliveries, want %d", len(got), len(ds))
	}
	for i, d := range ds {
		g := got[i]
		msg, err := codec.Decode(g.manifest, g.payload)
		if err != nil || g.shard != d.shard || g.entity != d.entity || g.sender != d.sender || msg != d.msg {
			t.Fatalf("delivery %d: %+v (%v, %v), want %+v", i, g, msg, err, d)
		}
	}
	// What decodes encodes to the same deliveries again.
	again, err := unmarshalDeliveries(reg, marshalDeliveries(t, reg, &msgDeliveries{out: batchOf(got)}), res)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sameDeliveries(again, got); diff != "" {
		t.Fatal(diff)
	}
}

// A batch decoded into the memory of one released before it reads as itself (the
// memory holds nothing of the earlier batch), and a stream of batches whose memory is
// released decodes without allocating for their index and encodings.
func TestDeliveriesMemoryReused(t *testing.T) {
	sys := testkit.NewSystem(t)
	reg := testRegistry(t)
	res := refResolver{sys}
	codec := reg.NewCodec(res)
	big := testBatchOf(t, codec, delivery{shard: "1", entity: "e1", msg: "a longer text than the other"},
		delivery{shard: "2", entity: "e2", msg: Increment{By: 2}}, delivery{shard: "3", entity: "e3", msg: GetCount{}})
	small := testBatchOf(t, codec, delivery{shard: "4", entity: "e4", msg: "short"})
	bigData := marshalDeliveries(t, reg, &msgDeliveries{out: big})
	smallData := marshalDeliveries(t, reg, &msgDeliveries{out: small})
	want := func(data []byte) []batchedDelivery {
		t.Helper()
		ds, err := unmarshalDeliveries(reg, data, res)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	wantBig, wantSmall := want(bigData), want(smallData)
	decode := func(data []byte) *msgDeliveries {
		t.Helper()
		v, err := reg.UnmarshalContext(deliveriesName, data, res)
		if err != nil {
			t.Fatal(err)
		}
		return v.(*msgDeliveries)
	}
	for range 10 {
		m := decode(bigData)
		if diff := sameDeliveries(m.in.all(), wantBig); diff != "" {
			t.Fatal(diff)
		}
		m.in.release()
		m = decode(smallData)
		if diff := sameDeliveries(m.in.all(), wantSmall); diff != "" {
			t.Fatal(diff)
		}
		m.in.release()
		m.in.release() // a second release gives nothing back twice
	}
	if raceEnabled {
		return // sync.Pool drops items at random under the race detector
	}
	without := testing.AllocsPerRun(20, func() { _, _ = codec.Decode(deliveriesName, bigData) })
	with := testing.AllocsPerRun(20, func() {
		v, _ := codec.Decode(deliveriesName, bigData)
		v.(*msgDeliveries).in.release()
	})
	if with > without-2 {
		t.Errorf("a batch decoded into released memory allocates %v times, one in new memory %v", with, without)
	}
}

// A batch decoded under the context of a system that runs sharding (as a transport's
// reader decodes it) carries its messages decoded already, as the region's codec would
// decode them; one that does not decode is left to the region (which sends it to dead
// letters with the error). Released, the batch's memory keeps none of the messages.
func TestDeliveriesDecodeOnTheReceivingSystem(t *testing.T) {
	sys := testkit.NewSystem(t)
	reg := testRegistry(t)
	if _, err := Start(sys, Config{Registry: reg}); err != nil {
		t.Fatal(err)
	}
	sender := testkit.NewProbe(t, sys).Ref()
	res := refResolver{sys}
	codec := reg.NewCodec(res)
	ds := []delivery{
		{shard: "1", entity: "e1", msg: Increment{By: 1}, sender: sender},
		{shard: "2", entity: "e2", msg: "text"},
		{shard: "1", entity: "e3", msg: GetCount{}},
	}
	in := testBatchOf(t, codec, ds...)
	// The second delivery under a manifest nobody registered: it cannot decode.
	plain := plainResolver{sys}
	parts, err := unmarshalDeliveries(reg, marshalDeliveries(t, reg, &msgDeliveries{out: in}), plain)
	if err != nil {
		t.Fatal(err)
	}
	parts[1].manifest = "test.nobody"
	data := marshalDeliveries(t, reg, &msgDeliveries{out: batchOf(parts)})

	// Without a system in the context, nothing is decoded ahead.
	got, err := unmarshalDeliveries(reg, data, plain)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range got {
		if d.msg != nil {
			t.Fatalf("delivery %d decoded without a receiving system: %v", i, d.msg)
		}
	}

	v, err := reg.UnmarshalContext(deliveriesName, data, res)
	if err != nil {
		t.Fatal(err)
	}
	m := v.(*msgDeliveries)
	got = m.in.all()
	want := []any{Increment{By: 1}, nil, GetCount{}}
	for i, d := range got {
		if d.msg != want[i] || d.shard != ds[i].shard || d.entity != ds[i].entity || d.sender != ds[i].sender {
			t.Fatalf("delivery %d: %+v, want message %v of %+v", i, d, want[i], ds[i])
		}
	}
	mem := m.in.mem
	m.in.release()
	for i, msg := range mem.msgs[:cap(mem.msgs)] {
		if msg != nil {
			t.Fatalf("released memory still holds message %d: %v", i, msg)
		}
	}
}

// plainResolver resolves refs in sys without naming a receiving system.
type plainResolver struct{ sys *actor.System }

func (r plainResolver) ResolveRef(uri string) (actor.Ref, error) { return r.sys.Resolve(uri) }

// A delivery too large for a batch is not added: it comes back as a msgDelivery of its
// own, and the batch is as it was.
func TestDeliveriesTooLargeGoesAlone(t *testing.T) {
	reg := testRegistry(t)
	codec := reg.NewCodec(nil)
	b := testBatchOf(t, codec, delivery{shard: "1", entity: "e1", msg: "small"})
	before := *b
	big := delivery{shard: "1", entity: "e2", msg: strings.Repeat("x", 500)}
	alone, err := b.add(codec, &big, 400)
	if err != nil || alone == nil {
		t.Fatalf("a large delivery: %v, %v", alone, err)
	}
	if b.count != 1 || len(b.payloads) != len(before.payloads) || b.size != before.size || len(b.ids) != len(before.ids) {
		t.Fatalf("the batch changed: %+v, was %+v", b, before)
	}
	msg, err := reg.Unmarshal(alone.Manifest, alone.Payload)
	if err != nil || msg != big.msg || alone.Shard != "1" || alone.Entity != "e2" || alone.HandOver || alone.Start {
		t.Fatalf("alone: %+v (%v, %v)", alone, msg, err)
	}
	// A message that cannot be encoded adds nothing either.
	if _, err := b.add(codec, &delivery{shard: "1", entity: "e3", msg: struct{ X int }{1}}, 400); err == nil {
		t.Fatal("an unregistered message was added")
	}
	if b.count != 1 || len(b.payloads) != len(before.payloads) {
		t.Fatalf("the batch changed: %+v", b)
	}
}

// deliveriesFields encodes a batch's elements as given, to build malformed ones.
func encodeDeliveriesFields(t testing.TB, fields ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.EncodeArrayLen(len(fields)); err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// What is not a batch of deliveries is refused with an error, never a panic: every
// truncation of a valid one, and each way its parts can disagree.
func TestDeliveriesRejectMalformed(t *testing.T) {
	sys := testkit.NewSystem(t)
	sender := testkit.NewProbe(t, sys).Ref()
	reg := testRegistry(t)
	res := refResolver{sys}
	good := marshalDeliveries(t, reg, &msgDeliveries{out: testBatchOf(t, reg.NewCodec(res),
		delivery{shard: "1", entity: "e1", msg: Increment{By: 1}, sender: sender},
		delivery{shard: "2", entity: "e2", msg: GetCount{}})})
	for n := range len(good) {
		if _, err := unmarshalDeliveries(reg, good[:n], res); err == nil {
			t.Errorf("a batch cut to %d of %d bytes decodes", n, len(good))
		}
	}
	fields := func(index []byte, ids string, payloads []byte, senders, manifests []string) []byte {
		return encodeDeliveriesFields(t, index, []byte(ids), payloads, senders, manifests)
	}
	one := []string{""}
	m := []string{"m"}
	for _, c := range []struct {
		what string
		data []byte
		want string
	}{
		{"too few elements", encodeDeliveriesFields(t, []byte{0, 0, 1, 1, 1}, []byte("se"), []byte{1}), "3 elements"},
		{"not an array", []byte{0x01}, "malformed"},
		{"no deliveries", fields(nil, "", nil, one, m), "no deliveries"},
		{"part of an entry", fields([]byte{0, 0, 1}, "se", nil, one, m), "index of 3"},
		{"a bad number", fields([]byte{0, 0, 1, 1, 0xff}, "se", nil, one, m), "bad number"},
		{"a sender outside the table", fields([]byte{1, 0, 1, 1, 1}, "se", []byte{1}, one, m), "outside the tables"},
		{"a manifest outside the table", fields([]byte{0, 1, 1, 1, 1}, "se", []byte{1}, one, m), "outside the tables"},
		{"an empty shard", fields([]byte{0, 0, 0, 2, 1}, "se", []byte{1}, one, m), "empty shard"},
		{"an empty entity", fields([]byte{0, 0, 2, 0, 1}, "se", []byte{1}, one, m), "empty shard or entity"},
		{"identifiers shorter than the index says", fields([]byte{0, 0, 1, 2, 1}, "se", []byte{1}, one, m), "identifiers beyond"},
		{"identifiers longer than the index says", fields([]byte{0, 0, 1, 1, 1}, "sex", []byte{1}, one, m), "index names"},
		{"encodings shorter than the index says", fields([]byte{0, 0, 1, 1, 2}, "se", []byte{1}, one, m), "encoding beyond"},
		{"encodings longer than the index says", fields([]byte{0, 0, 1, 1, 1}, "se", []byte{1, 2}, one, m), "index names"},
		{"more senders than deliveries", fields([]byte{0, 0, 1, 1, 1}, "se", []byte{1}, []string{"", ""}, m), "2 senders"},
		{"no senders", fields([]byte{0, 0, 1, 1, 1}, "se", []byte{1}, nil, m), "senders for 1"},
		{"no manifests", fields([]byte{0, 0, 1, 1, 1}, "se", []byte{1}, one, nil), "manifests for 1"},
		{"an unknown sender", fields([]byte{0, 0, 1, 1, 1}, "se", []byte{1}, []string{sender.URI() + "x"}, m), "sender"},
		{"a sender too long", fields([]byte{0, 0, 1, 1, 1}, "se", []byte{1}, []string{strings.Repeat("x", wirebatch.MaxSenderLen+1)}, m), "bytes"},
	} {
		_, err := unmarshalDeliveries(reg, c.data, res)
		if !errors.Is(err, serialization.ErrDecode) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	// A sender needs a resolver.
	if _, err := reg.Unmarshal(deliveriesName, good); !errors.Is(err, serialization.ErrDecode) {
		t.Errorf("without a resolver: %v", err)
	}
	// A well-formed batch with an element more (a newer version) decodes.
	newer := encodeDeliveriesFields(t, []byte{0, 0, 1, 1, 1}, []byte("se"), []byte{1}, []string{sender.URI()}, m, "more")
	got, err := unmarshalDeliveries(reg, newer, res)
	if err != nil {
		t.Fatalf("a batch with an element more: %v", err)
	}
	if len(got) != 1 || got[0].sender != sender || got[0].shard != "s" || got[0].entity != "e" {
		t.Fatalf("decoded %+v", got)
	}
}

// FuzzDeliveriesDecode feeds arbitrary bytes to msgDeliveries' decoder through a
// registry with a resolver. It must never panic; every error wraps
// serialization.ErrDecode; whatever decodes encodes to the same deliveries again.
func FuzzDeliveriesDecode(f *testing.F) {
	sys := testkit.NewSystem(f)
	sender := testkit.NewProbe(f, sys).Ref()
	reg := testRegistry(f)
	res := refResolver{sys}
	codec := reg.NewCodec(res)
	f.Add(marshalDeliveries(f, reg, &msgDeliveries{out: testBatchOf(f, codec,
		delivery{shard: "1", entity: "e1", msg: Increment{By: 1}, sender: sender},
		delivery{shard: "2", entity: "e2", msg: GetCount{}},
		delivery{shard: "1", entity: "e3", msg: "x", sender: sender})}))
	f.Add(marshalDeliveries(f, reg, &msgDeliveries{out: testBatchOf(f, codec, delivery{shard: "s", entity: "e", msg: 7})}))
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{msgpcode.Nil})
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := unmarshalDeliveries(reg, data, res)
		if err != nil {
			if !errors.Is(err, serialization.ErrDecode) {
				t.Fatalf("%v does not wrap ErrDecode", err)
			}
			return
		}
		if len(got) == 0 {
			return // nil decodes to the empty batch without the decoder: a region ignores it
		}
		for _, d := range got {
			if d.shard == "" || d.entity == "" {
				t.Fatalf("decoded %+v", d)
			}
		}
		again, err := unmarshalDeliveries(reg, marshalDeliveries(t, reg, &msgDeliveries{out: batchOf(got)}), res)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameDeliveries(again, got); diff != "" {
			t.Fatal(diff)
		}
	})
}

// keepsOutbox lets only deliveries and the region's flush by: every other message
// flushes what the region forwarded before it handles it.
func TestRegionFlushesBeforeItsOwnMessages(t *testing.T) {
	for _, m := range []any{refMessage{}, Envelope{}, &Envelope{}, &msgDelivery{}, &msgDeliveries{}, flushDeliveries{}} {
		if !keepsOutbox(m) {
			t.Errorf("%T flushes the outbox", m)
		}
	}
	for _, m := range []any{shardcore.BeginHandOff{}, shardcore.HandOff{}, shardcore.ShardHome{}, shardcore.HostShard{}, msgHandOverDone{},
		timerFired{}, actor.Terminated{}, actor.Stopping{}, actor.Stopped{}, actor.Restarting{}, GracefulShutdown{},
		GetShardRegionState{}, shardReady{}, shardLeftovers{}, StartEntity{}} {
		if keepsOutbox(m) {
			t.Errorf("%T does not flush the outbox", m)
		}
	}
}
