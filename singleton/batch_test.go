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
	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
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
		if x.Sender != y.Sender || x.Manifest != y.Manifest || !bytes.Equal(x.Data, y.Data) {
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
