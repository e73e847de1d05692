package singleton

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-go/troupe/actor"
	"github.com/troupe-go/troupe/cluster"
	core "github.com/troupe-go/troupe/internal/singletoncore"
	"github.com/troupe-go/troupe/internal/tracewire"
	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
	"go.opentelemetry.io/otel/trace"
)

// testResolver resolves the paths it knows, and refuses the others.
type testResolver map[string]actor.Ref

func (r testResolver) ResolveRef(uri string) (actor.Ref, error) {
	if ref, ok := r[uri]; ok {
		return ref, nil
	}
	return actor.Ref{}, fmt.Errorf("unknown %q", uri)
}

// testSender returns an actor of a throwaway system, and a resolver that knows it.
func testSender(t testing.TB) (actor.Ref, testResolver) {
	t.Helper()
	sys, err := actor.New("wire", actor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sys.Shutdown(context.Background()) })
	ref, err := sys.Spawn(actor.PropsFunc(func(actor.Context) {}), "sender")
	if err != nil {
		t.Fatal(err)
	}
	return ref, testResolver{ref.URI(): ref}
}

func testBatch(sender actor.Ref) core.Batch {
	b := core.Batch{
		Proxy: core.ProxyID{Node: cluster.UniqueAddress{Addr: "troupe://a@10.0.0.1:2552", UID: 7}, Path: "/system/singleton-proxy/x-1#9"},
		First: 12, After: 10, Prev: cluster.UniqueAddress{Addr: "troupe://b@10.0.0.2:2552", UID: 8},
	}
	for i := range 5 {
		p := core.Payload{Manifest: "test.Msg", Data: bytes.Repeat([]byte{byte(i)}, i*40)}
		if i%2 == 1 {
			p.Sender = sender
		}
		if i == 3 {
			p.Manifest = "test.Other"
		}
		b.Payloads = append(b.Payloads, p)
	}
	return b
}

// sameBatch reports how a differs from b, or "".
func sameBatch(a, b core.Batch) string {
	if a.Proxy != b.Proxy || a.First != b.First || a.After != b.After || a.Prev != b.Prev || len(a.Payloads) != len(b.Payloads) {
		return fmt.Sprintf("%+v, want %+v", a, b)
	}
	for i := range a.Payloads {
		x, y := a.Payloads[i], b.Payloads[i]
		if x.Sender != y.Sender || x.Manifest != y.Manifest || !bytes.Equal(x.Data, y.Data) || !bytes.Equal(x.Trace, y.Trace) {
			return fmt.Sprintf("payload %d: %+v, want %+v", i, x, y)
		}
	}
	return ""
}

func marshalBatch(t testing.TB, reg *serialization.Registry, w batch) []byte {
	t.Helper()
	manifest, data, err := reg.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if manifest != batchName {
		t.Fatalf("manifest %q", manifest)
	}
	return data
}

// A batch survives the registry's encoding, with its senders resolved, whether its
// tables were built by packBatches or by the encoder.
func TestBatchRoundTrip(t *testing.T) {
	reg := serialization.NewRegistry() // knows batch without registration
	sender, res := testSender(t)
	b := testBatch(sender)
	for _, w := range []batch{{b: b}, packBatches(b, 1<<20)[0]} {
		back, err := reg.UnmarshalContext(batchName, marshalBatch(t, reg, w), res)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := back.(batch)
		if !ok {
			t.Fatalf("decoded %T", back)
		}
		if diff := sameBatch(got.b, b); diff != "" {
			t.Fatal(diff)
		}
	}
}

// A batch decoded into the memory of one released before it is whole (the memory
// holds nothing of the earlier batch), and a stream of batches whose memory is
// released decodes without allocating for their encodings or payloads.
func TestBatchMemoryReused(t *testing.T) {
	reg := serialization.NewRegistry()
	sender, res := testSender(t)
	big := testBatch(sender)
	small := big.Slice(0, 2)
	bigData, smallData := marshalBatch(t, reg, batch{b: big}), marshalBatch(t, reg, batch{b: small})
	decode := func(data []byte) batch {
		t.Helper()
		back, err := reg.UnmarshalContext(batchName, data, res)
		if err != nil {
			t.Fatal(err)
		}
		return back.(batch)
	}
	for range 10 {
		w := decode(bigData)
		if diff := sameBatch(w.b, big); diff != "" {
			t.Fatal(diff)
		}
		w.mem.release()
		w = decode(smallData)
		if diff := sameBatch(w.b, small); diff != "" {
			t.Fatal(diff)
		}
		if cap(w.b.Payloads) != len(w.b.Payloads) {
			t.Fatalf("the payloads of a decoded batch can grow into its memory: %d of %d", len(w.b.Payloads), cap(w.b.Payloads))
		}
		w.mem.release()
	}
	if raceEnabled {
		return // sync.Pool drops items at random under the race detector
	}
	codec := reg.NewCodec(res)
	without := testing.AllocsPerRun(20, func() { _, _ = codec.Decode(batchName, bigData) })
	with := testing.AllocsPerRun(20, func() {
		back, _ := codec.Decode(batchName, bigData)
		back.(batch).mem.release()
	})
	if with > without-2 {
		t.Errorf("a batch decoded into released memory allocates %v times, one in new memory %v", with, without)
	}
}

// packBatches keeps batches within the limit, numbered on, and sends a message too
// large for it alone.
func TestPackBatches(t *testing.T) {
	reg := serialization.NewRegistry()
	sender, res := testSender(t)
	b := testBatch(sender)
	b.Payloads = append(b.Payloads, core.Payload{Manifest: "test.Big", Data: make([]byte, 1000)},
		core.Payload{Manifest: "test.Msg", Data: []byte{1}})
	const limit = 400
	bs := packBatches(b, limit)
	var sizes []int
	next, n := b.First, 0
	for _, w := range bs {
		data := marshalBatch(t, reg, w)
		if len(data) > limit && len(w.b.Payloads) > 1 {
			t.Errorf("a batch of %d messages takes %d bytes", len(w.b.Payloads), len(data))
		}
		back, err := reg.UnmarshalContext(batchName, data, res)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameBatch(back.(batch).b, b.Slice(n, n+len(w.b.Payloads))); diff != "" {
			t.Fatal(diff)
		}
		if w.b.First != next {
			t.Fatalf("batch from %d, want %d", w.b.First, next)
		}
		next += uint64(len(w.b.Payloads))
		n += len(w.b.Payloads)
		sizes = append(sizes, len(w.b.Payloads))
	}
	if n != len(b.Payloads) || len(bs) < 3 {
		t.Fatalf("batches of %v messages", sizes)
	}
	if big := bs[len(bs)-2].b.Payloads; len(big) != 1 || big[0].Manifest != "test.Big" {
		t.Fatalf("batches of %v messages: the large one is not alone", sizes)
	}
}

// encodeFields writes a batch's elements as given, to build malformed ones.
func encodeFields(t *testing.T, fields ...any) []byte {
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

// What is not a batch is refused with an error, never a panic: every truncation of
// a valid one, and each way its parts can disagree.
func TestBatchRejectsMalformed(t *testing.T) {
	reg := serialization.NewRegistry()
	sender, res := testSender(t)
	good := marshalBatch(t, reg, batch{b: testBatch(sender)})
	for n := range len(good) {
		if _, err := reg.UnmarshalContext(batchName, good[:n], res); err == nil {
			t.Errorf("a batch cut to %d of %d bytes decodes", n, len(good))
		}
	}
	uri := sender.URI()
	fields := func(first uint64, index, data []byte, senders, manifests []string) []byte {
		return encodeFields(t, "troupe://a@h:1", 7, "/p", first, 0, "", 0, index, data, senders, manifests)
	}
	for _, c := range []struct {
		what string
		data []byte
		want string
	}{
		{"too few elements", encodeFields(t, "troupe://a@h:1", 7, "/p"), "3 elements"},
		{"no messages", fields(1, nil, nil, []string{""}, []string{"m"}), "no messages"},
		{"half an entry", fields(1, []byte{0, 0}, nil, []string{""}, []string{"m"}), "index of 2"},
		{"a bad number", fields(1, []byte{0, 0, 0xff}, nil, []string{""}, []string{"m"}), "bad number"},
		{"a sender outside the table", fields(1, []byte{1, 0, 1}, []byte{1}, []string{""}, []string{"m"}), "outside"},
		{"a manifest outside the table", fields(1, []byte{0, 1, 1}, []byte{1}, []string{""}, []string{"m"}), "outside"},
		{"encodings shorter than the index says", fields(1, []byte{0, 0, 2}, []byte{1}, []string{""}, []string{"m"}), "outside"},
		{"encodings longer than the index says", fields(1, []byte{0, 0, 1}, []byte{1, 2}, []string{""}, []string{"m"}), "index names"},
		{"sequence number 0", fields(0, []byte{0, 0, 1}, []byte{1}, []string{""}, []string{"m"}), "first sequence"},
		{"sequence numbers beyond the range", fields(1<<64-1, []byte{0, 0, 0, 0, 0, 0}, nil, []string{""}, []string{"m"}), "first sequence"},
		{"more senders than messages", fields(1, []byte{0, 0, 1}, []byte{1}, []string{"", ""}, []string{"m"}), "2 senders"},
		{"no manifests", fields(1, []byte{0, 0, 1}, []byte{1}, []string{""}, nil), "manifests"},
		{"an unknown sender", fields(1, []byte{0, 0, 1}, []byte{1}, []string{uri + "x"}, []string{"m"}), "unknown"},
		{"no proxy", encodeFields(t, "", 7, "/p", 1, 0, "", 0, []byte{0, 0, 1}, []byte{1}, []string{""}, []string{"m"}), "no proxy"},
	} {
		_, err := reg.UnmarshalContext(batchName, c.data, res)
		if !errors.Is(err, serialization.ErrDecode) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	// A sender needs a resolver.
	if _, err := reg.Unmarshal(batchName, good); !errors.Is(err, serialization.ErrDecode) {
		t.Errorf("without a resolver: %v", err)
	}
	// A well-formed batch with an element more (a newer version) decodes.
	newer := fields(1, []byte{0, 0, 1}, []byte{1}, []string{uri}, []string{"m"})
	newer[0]++
	newer = append(newer, 0xc0)
	back, err := reg.UnmarshalContext(batchName, newer, res)
	if err != nil {
		t.Fatalf("a batch with an element more: %v", err)
	}
	if b := back.(batch).b; len(b.Payloads) != 1 || b.Payloads[0].Sender != sender {
		t.Fatalf("decoded %+v", b)
	}
}

// Any input decodes to a batch that encodes to the same batch again, or fails with an
// error; never a panic.
func FuzzBatch(f *testing.F) {
	reg := serialization.NewRegistry()
	sender, res := testSender(f)
	f.Add(marshalBatch(f, reg, batch{b: testBatch(sender)}))
	f.Add(marshalBatch(f, reg, packBatches(testBatch(sender), 150)[0]))
	f.Add(marshalBatch(f, reg, batch{b: tracedBatch(f, sender)}))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := reg.UnmarshalContext(batchName, data, res)
		if err != nil {
			if !errors.Is(err, serialization.ErrDecode) {
				t.Fatalf("error %v does not wrap ErrDecode", err)
			}
			return
		}
		b := v.(batch).b
		if bytes.Equal(data, []byte{msgpcode.Nil}) && len(b.Payloads) == 0 {
			return // nil decodes to the zero batch without the decoder: a manager ignores it
		}
		if len(b.Payloads) == 0 || b.First == 0 {
			t.Fatalf("decoded %+v", b)
		}
		again, err := reg.UnmarshalContext(batchName, marshalBatch(t, reg, batch{b: b}), res)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameBatch(again.(batch).b, b); diff != "" {
			t.Fatal(diff)
		}
	})
}

// testTrace returns the encoding of a valid trace context whose span id is span.
func testTrace(tb testing.TB, span byte) []byte {
	tb.Helper()
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1, 2}, SpanID: trace.SpanID{span}, TraceFlags: trace.FlagsSampled})
	return tracewire.Append(nil, &sc)
}

// tracedBatch is testBatch with its second and fourth messages sent in a trace.
func tracedBatch(tb testing.TB, sender actor.Ref) core.Batch {
	b := testBatch(sender)
	b.Payloads[1].Trace = testTrace(tb, 1)
	b.Payloads[3].Trace = testTrace(tb, 3)
	return b
}

// A batch whose messages carry traces survives the encoding with them, in a twelfth
// element; a batch without any is the eleven elements it always was.
func TestBatchTraces(t *testing.T) {
	reg := serialization.NewRegistry()
	sender, res := testSender(t)
	for _, c := range []struct {
		name   string
		b      core.Batch
		fields byte
	}{
		{"untraced", testBatch(sender), batchFields},
		{"traced", tracedBatch(t, sender), batchFields + 1},
	} {
		for _, w := range []batch{{b: c.b}, packBatches(c.b, 1<<20)[0]} {
			data := marshalBatch(t, reg, w)
			if data[0] != 0x90|c.fields {
				t.Fatalf("%s: the encoding starts with %#x, want an array of %d", c.name, data[0], c.fields)
			}
			back, err := reg.UnmarshalContext(batchName, data, res)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if diff := sameBatch(back.(batch).b, c.b); diff != "" {
				t.Fatalf("%s: %s", c.name, diff)
			}
		}
	}
}

// The tables the outbox builds as messages come, with their traces, encode as the
// tables built from the batch; the trace travels with a message to a manager on
// the same member too (the payload itself).
func TestOutboxKeepsTraces(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := serialization.Register[*outboxMsg](reg, "test.outboxMsg"); err != nil {
		t.Fatal(err)
	}
	sender, res := testSender(t)
	codec := reg.NewCodec(res)
	self := core.ProxyID{Node: cluster.UniqueAddress{Addr: "troupe://a@127.0.0.1:2552", UID: 1}, Path: "/system/singleton-proxy/p"}
	o := newOutbox(self, 4<<10)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{8}})
	for i := range 6 {
		var tc *trace.SpanContext
		if i%3 != 0 {
			tc = &sc
		}
		if _, err := o.add(codec, &outboxMsg{Body: []byte{byte(i)}}, sender, tc); err != nil {
			t.Fatal(err)
		}
	}
	ps, tables, _ := o.take()
	for i, p := range ps {
		if got, err := tracewire.Parse(p.Trace); (i%3 != 0) != (err == nil) || err == nil && !got.Equal(sc.WithRemote(true)) {
			t.Fatalf("message %d: trace % x: %v, %v", i, p.Trace, got, err)
		}
	}
	b := core.Batch{Proxy: self, First: 1, Payloads: ps}
	if got := tablesFor(b, ps, tables, 4<<10); got != tables {
		t.Fatal("the outbox's tables are not the batch's")
	}
	incremental, built := marshalBatch(t, reg, batch{b: b, t: tables}), marshalBatch(t, reg, batch{b: b})
	if !bytes.Equal(incremental, built) {
		t.Fatalf("the outbox's tables encode as\n% x\nthe batch's as\n% x", incremental, built)
	}
	back, err := reg.UnmarshalContext(batchName, built, res)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sameBatch(back.(batch).b, b); diff != "" {
		t.Fatal(diff)
	}
}

// packBatches counts the traces: batches of traced messages stay within the limit.
func TestPackBatchesWithTraces(t *testing.T) {
	reg := serialization.NewRegistry()
	sender, res := testSender(t)
	b := testBatch(sender)
	b.Payloads = b.Payloads[:1]
	for i := range 40 {
		b.Payloads = append(b.Payloads, core.Payload{Sender: sender, Manifest: "test.Msg", Data: []byte{byte(i)}, Trace: testTrace(t, byte(i+1))})
	}
	const limit = 400
	bs := packBatches(b, limit)
	n := 0
	for _, w := range bs {
		data := marshalBatch(t, reg, w)
		if len(data) > limit {
			t.Errorf("a batch of %d messages takes %d bytes", len(w.b.Payloads), len(data))
		}
		back, err := reg.UnmarshalContext(batchName, data, res)
		if err != nil {
			t.Fatal(err)
		}
		if diff := sameBatch(back.(batch).b, b.Slice(n, n+len(w.b.Payloads))); diff != "" {
			t.Fatal(diff)
		}
		n += len(w.b.Payloads)
	}
	if n != len(b.Payloads) || len(bs) < 3 {
		t.Fatalf("%d batches of %d messages", len(bs), n)
	}
}

// A batch's traces that are not what the encoder writes are refused with an error,
// never a panic; a nil traces element is a batch without traces.
func TestBatchRejectsMalformedTraces(t *testing.T) {
	reg := serialization.NewRegistry()
	sender, res := testSender(t)
	uri := sender.URI()
	good := testTrace(t, 1)
	fields := func(traces any) []byte {
		return encodeFields(t, "troupe://a@h:1", 7, "/p", 1, 0, "", 0, []byte{0, 0, 1, 0, 0, 1}, []byte{1, 2}, []string{uri}, []string{"m"}, traces)
	}
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	for _, c := range []struct {
		what   string
		traces any
	}{
		{"a string", "x"},
		{"a position beyond the batch", cat([]byte{2}, good)},
		{"the same position twice", cat([]byte{1}, good, []byte{1}, good)},
		{"positions out of order", cat([]byte{1}, good, []byte{0}, good)},
		{"a bad position", cat([]byte{0xff}, good)},
		{"a position alone", cat([]byte{0}, good, []byte{1})},
		{"a context cut short", cat([]byte{0}, good[:10])},
		{"a context of zero ids", cat([]byte{0}, make([]byte, tracewire.MinLen))},
		{"a tracestate beyond the element", cat([]byte{0}, good[:tracewire.MinLen-1], []byte{9, 'a'})},
	} {
		_, err := reg.UnmarshalContext(batchName, fields(c.traces), res)
		if !errors.Is(err, serialization.ErrDecode) || !strings.Contains(err.Error(), "trace") {
			t.Errorf("%s: %v", c.what, err)
		}
	}
	for _, traces := range []any{nil, []byte{}, cat([]byte{1}, good)} {
		back, err := reg.UnmarshalContext(batchName, fields(traces), res)
		if err != nil {
			t.Fatalf("traces %v: %v", traces, err)
		}
		ps := back.(batch).b.Payloads
		if want := traces != nil && len(traces.([]byte)) > 0; ps[0].Trace != nil || (ps[1].Trace != nil) != want {
			t.Fatalf("traces %v: decoded %+v", traces, ps)
		}
	}
}
