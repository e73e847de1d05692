package ddata_test

import (
	"fmt"
	"testing"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/ddata"
	"github.com/troupe-go/troupe/serialization"
)

// MaxInt is a user-defined CRDT: the largest value any replica has set. Its merge
// (max) is commutative, associative and idempotent. It is encoded by msgpack's
// reflection ({"V": n}); a type with maps or invariants would implement
// msgpack.CustomEncoder and CustomDecoder instead, as the types of ddata do.
type MaxInt struct {
	V int64
}

func (m *MaxInt) Set(v int64) { m.V = max(m.V, v) }

func (m *MaxInt) MergeData(other ddata.ReplicatedData) error {
	o, ok := other.(*MaxInt)
	if !ok {
		return fmt.Errorf("%w: MaxInt merged with %T", ddata.ErrTypeMismatch, other)
	}
	m.Set(o.V)
	return nil
}

func (m *MaxInt) CloneData() ddata.ReplicatedData {
	c := *m
	return &c
}

func TestCustomCRDT(t *testing.T) {
	reg := serialization.NewRegistry()
	if err := ddata.RegisterTypes(reg); err != nil {
		t.Fatal(err)
	}
	// The user registers the type, and any ddata instantiation holding it.
	if err := serialization.Register[*MaxInt](reg, "test.MaxInt"); err != nil {
		t.Fatal(err)
	}
	if err := ddata.RegisterORMap[string, *MaxInt](reg, "test.ORMap.string.MaxInt"); err != nil {
		t.Fatal(err)
	}

	key := ddata.NewKey[*MaxInt]("high-score")
	var stored ddata.ReplicatedData = &MaxInt{V: 3}
	other := &MaxInt{V: 7}
	if err := stored.MergeData(other); err != nil {
		t.Fatal(err)
	}
	v, err := key.Cast(stored)
	if err != nil || v.V != 7 {
		t.Fatalf("cast: %v %v", v, err)
	}
	if _, err := ddata.NewKey[*ddata.GCounter]("high-score").Cast(stored); err == nil {
		t.Fatal("a MaxInt read as a counter")
	}

	// Through the registry, alone and inside an ORMap.
	m, b, err := reg.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	back, err := reg.Unmarshal(m, b)
	if err != nil || back.(*MaxInt).V != 7 {
		t.Fatalf("round trip: %v %v", back, err)
	}
	self := cluster.UniqueAddress{Addr: "127.0.0.1:2552", UID: 1}
	scores := ddata.NewORMap[string, *MaxInt]()
	if err := scores.Update(self, "alice", nil, func(s *MaxInt) { s.Set(10) }); err != nil {
		t.Fatal(err)
	}
	d, _ := scores.TakeDelta()
	replica := ddata.NewORMap[string, *MaxInt]()
	if err := replica.MergeDelta(d); err != nil {
		t.Fatal(err)
	}
	d1, err := ddata.DigestOf(reg, scores)
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := ddata.DigestOf(reg, replica)
	if d1 != d2 {
		t.Fatal("replica differs after the delta")
	}
	m, b, err = reg.Marshal(replica)
	if err != nil {
		t.Fatal(err)
	}
	if back, err := reg.Unmarshal(m, b); err != nil {
		t.Fatal(err)
	} else if s, _ := back.(*ddata.ORMap[string, *MaxInt]).Get("alice"); s.V != 10 {
		t.Fatalf("alice %d", s.V)
	}
}
