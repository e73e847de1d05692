package ddata

import (
	"errors"
	"testing"

	"github.com/troupe-go/troupe/serialization"
	"github.com/vmihailenco/msgpack/v5"
)

// enc encodes a hand-built structure the way a hostile peer could.
func enc(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const a1, a2 = "10.0.0.1:2552", "10.0.0.2:2552"

func TestHostileInputRejected(t *testing.T) {
	reg := testRegistry(t)
	cases := []struct {
		name, manifest string
		data           any
	}{
		{"counter unsorted", "ddata.GCounter", []any{[]any{a2, 1, 1}, []any{a1, 1, 1}}},
		{"counter duplicate", "ddata.GCounter", []any{[]any{a1, 1, 1}, []any{a1, 1, 2}}},
		{"counter zero", "ddata.GCounter", []any{[]any{a1, 1, 0}}},
		{"counter no address", "ddata.GCounter", []any{[]any{"", 1, 3}}},
		{"counter short entry", "ddata.GCounter", []any{[]any{a1, 1}}},
		{"counter negative", "ddata.GCounter", []any{[]any{a1, 1, -4}}},
		{"pncounter one half", "ddata.PNCounter", []any{[]any{}}},
		{"vv huge", "ddata.VersionVector", []any{[]any{a1, 1, uint64(1) << 63}}},
		{"orset version 0", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 0}}, []any{}}},
		{"orset nodes unsorted", "ddata.ORSet.string", []any{[]any{[]any{a2, 1, 1}, []any{a1, 1, 1}}, []any{}}},
		{"orset dot not covered", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 2}}, []any{[]any{"x", 0, 3}}}},
		{"orset dot seq 0", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 2}}, []any{[]any{"x", 0, 0}}}},
		{"orset dot node out of range", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 2}}, []any{[]any{"x", 1, 1}}}},
		{"orset dot node negative", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 2}}, []any{[]any{"x", -1, 1}}}},
		{"orset element without dot", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 2}}, []any{[]any{"x"}}}},
		{"orset even entry", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 2}, []any{a2, 2, 2}}, []any{[]any{"x", 0, 1, 1}}}},
		{"orset two dots of one node", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 2}, []any{a2, 2, 2}}, []any{[]any{"x", 0, 1, 0, 2}}}},
		{"orset duplicate element", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 2}}, []any{[]any{"x", 0, 1}, []any{"x", 0, 2}}}},
		{"orset wrong element type", "ddata.ORSet.string", []any{[]any{[]any{a1, 1, 2}}, []any{[]any{3.5, 0, 1}}}},
		{"orset elements nil", "ddata.ORSet.string", []any{[]any{}, nil}},
		{"orset delta bad kind", "ddata.ORSet.string.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{7, "x"}}}},
		{"orset delta node out of range", "ddata.ORSet.string.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{0, "x", 1, 1}}}},
		{"orset delta seq 0", "ddata.ORSet.string.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{0, "x", 0, 0}}}},
		{"orset delta replaces a later dot", "ddata.ORSet.string.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{0, "x", 0, 2, 0, 5}}}},
		{"orset delta ctx names node twice", "ddata.ORSet.string.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{1, "x", 0, 2, 0, 1}}}},
		{"orset delta duplicate node", "ddata.ORSet.string.delta", []any{[]any{[]any{a1, 1}, []any{a1, 1}}, []any{}}},
		{"orset delta odd ctx", "ddata.ORSet.string.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{2, 0}}}},
		{"ormap value count", "ddata.ORMap.string.GCounter", []any{[]any{[]any{a1, 1, 1}}, []any{[]any{"k", 0, 1}}, []any{}}},
		{"ormap nil value", "ddata.ORMap.string.GCounter", []any{[]any{[]any{a1, 1, 1}}, []any{[]any{"k", 0, 1}}, []any{nil}}},
		{"ormap bad value", "ddata.ORMap.string.GCounter", []any{[]any{[]any{a1, 1, 1}}, []any{[]any{"k", 0, 1}}, []any{[]any{[]any{a1, 1, 0}}}}},
		{"ormap delta put with a remove", "ddata.ORMap.string.GCounter.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{0, []any{1, "k", 0, 1}, []any{}}}}},
		{"ormap delta bad kind", "ddata.ORMap.string.GCounter.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{9, []any{0, "k", 0, 1}}}}},
		{"ormap delta remove with value", "ddata.ORMap.string.GCounter.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{2, []any{1, "k", 0, 1}, []any{}}}}},
		{"ormap delta nil put", "ddata.ORMap.string.GCounter.delta", []any{[]any{[]any{a1, 1}}, []any{[]any{0, []any{0, "k", 0, 1}, nil}}}},
		{"lww written at 5 by nobody", "ddata.LWWRegister.string", []any{"", 0, 5, "x"}},
		{"lww wrong value type", "ddata.LWWRegister.int", []any{a1, 1, 5, "x"}},
		{"flag not bool", "ddata.Flag", "yes"},
		{"gset duplicate", "ddata.GSet.string", []any{"a", "a"}},
	}
	for _, c := range cases {
		_, err := reg.Unmarshal(c.manifest, enc(t, c.data))
		if !errors.Is(err, serialization.ErrDecode) {
			t.Errorf("%s: got %v, want ErrDecode", c.name, err)
		}
	}
	// Decoding directly reports ErrInvalidData for broken invariants.
	var s ORSet[string]
	err := msgpack.Unmarshal(enc(t, []any{[]any{[]any{a1, 1, 2}}, []any{[]any{"x", 0, 3}}}), &s)
	if !errors.Is(err, ErrInvalidData) {
		t.Errorf("direct decode: %v", err)
	}
}

func TestEncodingIsDeterministic(t *testing.T) {
	reg := testRegistry(t)
	// Two sets with the same content built in different orders encode alike.
	a, b := NewORSet[string](), NewORSet[string]()
	for _, e := range []string{"x", "y", "z", "w"} {
		a.Add(n1, e)
	}
	b.Merge(a)
	c := NewORSet[string]()
	c.Add(n2, "q")
	c.Remove("q")
	b.Merge(c)
	a.Merge(c)
	sameState(t, reg, "orset", a, b)
	m1, m2 := NewLWWMap[string, map[string]int](), NewLWWMap[string, map[string]int]()
	big := map[string]int{}
	for i := range 50 {
		big[string(rune('a'+i%26))+string(rune('a'+i/26))] = i
	}
	clock := func(int64, map[string]int) int64 { return 1 }
	m1.Put(n1, "k", big, clock)
	m2.Merge(m1)
	if err := RegisterLWWMap[string, map[string]int](reg, "test.LWWMap.maps"); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		sameState(t, reg, "string-keyed maps in values", m1, m2)
	}
}

func TestCanonicalize(t *testing.T) {
	// Maps inside arrays inside maps, with int keys, come out sorted by key bytes.
	a := enc(t, []any{map[int]string{3: "c", 1: "a", 2: "b"}, map[string]any{"z": map[int]int{9: 1, 8: 2}, "y": 1}})
	want := enc(t, []any{
		msgpack.RawMessage{0x83, 0x01, 0xa1, 'a', 0x02, 0xa1, 'b', 0x03, 0xa1, 'c'},
		msgpack.RawMessage{0x82, 0xa1, 'y', 0x01, 0xa1, 'z', 0x82, 0x08, 0x02, 0x09, 0x01},
	})
	for range 10 {
		got, err := canonicalize(a)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("got %x, want %x", got, want)
		}
		a = enc(t, []any{map[int]string{3: "c", 1: "a", 2: "b"}, map[string]any{"z": map[int]int{9: 1, 8: 2}, "y": 1}})
	}
	for _, bad := range [][]byte{{0x81}, {0xdf, 0xff, 0xff, 0xff, 0xff}, {0xc1}, {0xd9, 0x05, 'a'}} {
		if _, err := canonicalize(bad); err == nil {
			t.Errorf("%x: no error", bad)
		}
	}
}
