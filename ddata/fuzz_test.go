package ddata

import (
	"bytes"
	"errors"
	"testing"

	"github.com/troupe-go/troupe/serialization"
)

// fuzzManifests are the types FuzzDecode feeds: ORSet and ORMap (and the maps built
// on it), with their deltas.
var fuzzManifests = []string{
	"ddata.ORSet.string", "ddata.ORSet.string.delta",
	"ddata.ORMap.string.GCounter", "ddata.ORMap.string.GCounter.delta",
	"ddata.ORMap.string.ORSet.string", "ddata.ORMap.string.ORSet.string.delta",
	"ddata.ORMultiMap.string.string.delta", "ddata.LWWMap.string.string",
}

// fuzzSeeds returns valid encodings of each fuzzed type.
func fuzzSeeds(tb tHelper, reg *serialization.Registry) map[string][]byte {
	s := NewORSet[string]()
	s.Add(n1, "a")
	s.Add(n2, "b")
	t := s.Clone()
	t.Add(n1, "a")
	s.Remove("b")
	s.Merge(t)
	sd, _ := s.TakeDelta()
	s.Clear()
	cd, _ := s.TakeDelta()
	sd, _ = sd.Compose(cd)

	m := NewORMap[string, *GCounter]()
	_ = m.Update(n1, "x", nil, func(c *GCounter) { c.Increment(n1, 3) })
	_ = m.Update(n2, "x", nil, func(c *GCounter) { c.Increment(n2, 1) })
	m.Remove("y")
	_ = m.Put(n1, "y", NewGCounter())
	m.Remove("y")
	md, _ := m.TakeDelta()

	ms := NewORMap[string, *ORSet[string]]()
	_ = ms.Update(n1, "k", nil, func(s *ORSet[string]) { s.Add(n1, "e") })
	_ = ms.Update(n1, "k", nil, func(s *ORSet[string]) { s.Add(n1, "f"); s.Remove("e") })
	msd, _ := ms.TakeDelta()

	mm := NewORMultiMap[string, string]()
	mm.AddBinding(n1, "k", "v")
	mm.Put(n2, "j", []string{"1", "2"})
	mmd, _ := mm.TakeDelta()

	lw := NewLWWMap[string, string]()
	lw.Put(n1, "k", "v", func(int64, string) int64 { return 7 })

	out := make(map[string][]byte)
	for _, v := range []any{s, sd, m, md, ms, msd, mmd, lw} {
		manifest, b, err := reg.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		out[manifest] = b
	}
	return out
}

// FuzzDecode decodes arbitrary bytes as ORSet, ORMap and their deltas. Decoding must
// never panic and must fail with ErrDecode; a value that decodes must satisfy its
// invariants: it encodes again canonically, merges with and into a valid value, and
// (for a delta) applies to an empty and to a populated value.
func FuzzDecode(f *testing.F) {
	reg := testRegistry(f)
	seeds := fuzzSeeds(f, reg)
	for i, m := range fuzzManifests {
		f.Add(uint8(i), seeds[m])
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		manifest := fuzzManifests[int(which)%len(fuzzManifests)]
		v, err := reg.Unmarshal(manifest, data)
		if err != nil {
			if !errors.Is(err, serialization.ErrDecode) {
				t.Fatalf("unclassified error: %v", err)
			}
			return
		}
		_, b, err := reg.Marshal(v)
		if err != nil {
			t.Fatalf("decoded value does not encode: %v", err)
		}
		again, err := reg.Unmarshal(manifest, b)
		if err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
		if _, b2, _ := reg.Marshal(again); !bytes.Equal(b, b2) {
			t.Fatal("encoding is not canonical")
		}
		switch x := v.(type) {
		case Delta:
			empty := x.NewData()
			if err := empty.MergeDelta(x); err != nil {
				t.Fatalf("delta on an empty value: %v", err)
			}
			checkValid(t, reg, empty)
			base, err := reg.Unmarshal(baseManifest(manifest), seeds[baseManifest(manifest)])
			if err == nil {
				full := base.(DeltaData)
				if err := full.MergeDelta(x); err != nil {
					t.Fatalf("delta on a value: %v", err)
				}
				checkValid(t, reg, full)
			}
		case ReplicatedData:
			base, err := reg.Unmarshal(manifest, seeds[manifest])
			if err != nil {
				t.Fatal(err)
			}
			mustMerge(t, base.(ReplicatedData), x)
			checkValid(t, reg, base)
			mustMerge(t, x, base.(ReplicatedData))
			checkValid(t, reg, x)
		}
	})
}

func baseManifest(m string) string {
	if len(m) > 6 && m[len(m)-6:] == ".delta" {
		return m[:len(m)-6]
	}
	return m
}

// checkValid fails unless v encodes and decodes again (decoding checks the
// invariants).
func checkValid(t *testing.T, reg *serialization.Registry, v any) {
	t.Helper()
	m, b, err := reg.Marshal(v)
	if err != nil {
		t.Fatalf("encode %T: %v", v, err)
	}
	if _, err := reg.Unmarshal(m, b); err != nil {
		t.Fatalf("a valid value became invalid: %v", err)
	}
}
