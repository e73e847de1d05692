package ddata

import (
	"errors"
	"math"
	"slices"
	"testing"
)

func TestGCounter(t *testing.T) {
	reg := testRegistry(t)
	a, b := NewGCounter(), NewGCounter()
	a.Increment(n1, 3)
	a.Increment(n1, 2)
	b.Increment(n2, 7)
	b.Increment(n1, 1)
	a.Merge(b)
	if got := a.Value(); got != 12 {
		t.Fatalf("value %d, want 12 (n1: max(5, 1), n2: 7)", got)
	}
	d, changed := a.TakeDelta()
	if !changed || d.Size() != 1 {
		t.Fatalf("delta %v %v, want one entry", d, changed)
	}
	if _, changed := a.TakeDelta(); changed {
		t.Fatal("a second TakeDelta reports a change")
	}
	c := NewGCounter()
	if err := c.MergeDelta(d); err != nil {
		t.Fatal(err)
	}
	if c.Value() != 5 {
		t.Fatalf("delta gave %d, want 5", c.Value())
	}
	back := roundTrip(t, reg, a).(*GCounter)
	sameState(t, reg, "round trip", a, back)
	if err := a.MergeData(NewPNCounter()); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("merge of a PNCounter: %v", err)
	}
	if err := a.MergeDelta(&PNCounterDelta{}); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("delta of a PNCounter: %v", err)
	}
}

func TestGCounterSaturates(t *testing.T) {
	c := NewGCounter()
	c.Increment(n1, math.MaxUint64-1)
	c.Increment(n1, 5)
	c.Increment(n2, 5)
	if c.Value() != math.MaxUint64 {
		t.Fatalf("value %d, want saturation", c.Value())
	}
	if got := c.BigValue().String(); got != "18446744073709551620" {
		t.Fatalf("big value %s", got)
	}
}

func TestPNCounter(t *testing.T) {
	c := NewPNCounter()
	c.Increment(n1, 10)
	c.Decrement(n2, 15)
	c.Add(n1, -2)
	c.Add(n3, 4)
	if c.Value() != -3 {
		t.Fatalf("value %d, want -3", c.Value())
	}
	c.Add(n1, math.MinInt64)
	if c.BigValue().String() != "-9223372036854775811" || c.Value() != math.MinInt64 {
		t.Fatalf("value %d / %s", c.Value(), c.BigValue())
	}
}

func TestORSetAddRemove(t *testing.T) {
	reg := testRegistry(t)
	a := NewORSet[string]()
	a.Add(n1, "x")
	a.Add(n1, "y")
	b := a.Clone()
	// Concurrent: a removes x, b re-adds x. The add wins.
	a.Remove("x")
	b.Add(n2, "x")
	a2, b2 := a.Clone(), b.Clone()
	a2.Merge(b)
	b2.Merge(a)
	sameState(t, reg, "commutative", a2, b2)
	if !a2.Contains("x") || !a2.Contains("y") {
		t.Fatalf("add should win: %v", a2.Elements())
	}
	// A remove that has seen the add removes it everywhere.
	a2.Remove("x")
	b2.Merge(a2)
	if b2.Contains("x") {
		t.Fatal("observed remove did not remove")
	}
	a2.Clear()
	b2.Merge(a2)
	if b2.Len() != 0 {
		t.Fatalf("clear left %v", b2.Elements())
	}
}

func TestFlagAndRegister(t *testing.T) {
	f, g := NewFlag(), NewFlag()
	g.SwitchOn()
	f.Merge(g)
	if !f.Enabled() {
		t.Fatal("flag not on")
	}
	clock := func(ts int64) Clock[string] { return func(int64, string) int64 { return ts } }
	a := NewLWWRegister(n2, "a", clock(5))
	b := NewLWWRegister(n1, "b", clock(5))
	c := NewLWWRegister(n3, "c", clock(4))
	a.Merge(b)
	a.Merge(c)
	if a.Value() != "b" || a.UpdatedBy() != n1 {
		t.Fatalf("tie goes to the lower node: got %q by %v", a.Value(), a.UpdatedBy())
	}
	var zero LWWRegister[string]
	zero.Merge(c)
	if zero.Value() != "c" {
		t.Fatal("an unwritten register must lose")
	}
	d := NewLWWRegister(n1, "d", nil)
	before := d.Timestamp()
	d.Set(n1, "e", nil)
	if d.Timestamp() <= before {
		t.Fatal("the default clock must increase")
	}
	r := NewLWWRegister(n1, "first", ReverseClock[string])
	r2 := r.Clone()
	r2.Set(n1, "second", ReverseClock[string])
	r.Merge(r2)
	if r.Value() != "first" {
		t.Fatalf("reverse clock: %q", r.Value())
	}
}

func TestVersionVectorCompare(t *testing.T) {
	a, b := NewVersionVector(), NewVersionVector()
	if a.Compare(b) != Same {
		t.Fatal("empty vectors")
	}
	a.Increment(n1)
	if a.Compare(b) != After || b.Compare(a) != Before {
		t.Fatal("after/before")
	}
	b.Increment(n2)
	if a.Compare(b) != Concurrent {
		t.Fatal("concurrent")
	}
	a.Merge(b)
	if a.Compare(b) != After || a.Version(n2) != 1 {
		t.Fatal("merge")
	}
	a.Prune(n2, n1)
	if a.NeedPruningFrom(n2) || a.Version(n1) != 2 {
		t.Fatalf("prune: %v", a.ModifiedByNodes())
	}
}

func TestORMapUpdate(t *testing.T) {
	reg := testRegistry(t)
	m := NewORMap[string, *GCounter]()
	if err := m.Update(n1, "a", nil, func(c *GCounter) { c.Increment(n1, 2) }); err != nil {
		t.Fatal(err)
	}
	if err := m.Put(n1, "b", NewGCounter()); err != nil {
		t.Fatal(err)
	}
	other := m.Clone()
	if err := other.Update(n2, "a", nil, func(c *GCounter) { c.Increment(n2, 5) }); err != nil {
		t.Fatal(err)
	}
	d, _ := other.TakeDelta()
	if d.Size() != 2 {
		t.Fatalf("update delta size %d, want 1 op + 1 counter entry", d.Size())
	}
	if err := m.MergeDelta(d); err != nil {
		t.Fatal(err)
	}
	a, _ := m.Get("a")
	if a.Value() != 7 {
		t.Fatalf("a = %d, want 7", a.Value())
	}
	back := roundTrip(t, reg, m).(*ORMap[string, *GCounter])
	sameState(t, reg, "round trip", m, back)
	keys := back.Keys()
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"a", "b"}) {
		t.Fatalf("keys %v", keys)
	}
}

func TestDerivedMaps(t *testing.T) {
	reg := testRegistry(t)
	lm := NewLWWMap[string, string]()
	lm.Put(n1, "k", "v1", nil)
	lm.Put(n1, "k", "v2", nil)
	if v, _ := lm.Get("k"); v != "v2" {
		t.Fatalf("lww map %q", v)
	}
	pm := NewPNCounterMap[string]()
	pm.Increment(n1, "k", 3)
	pm.Decrement(n2, "k", 5)
	if v, _ := pm.Get("k"); v != -2 {
		t.Fatalf("pn map %d", v)
	}
	mm := NewORMultiMap[string, string]()
	mm.AddBinding(n1, "k", "a")
	mm.AddBinding(n1, "k", "b")
	mm.RemoveBinding(n1, "k", "a")
	if !mm.ContainsBinding("k", "b") || mm.ContainsBinding("k", "a") {
		t.Fatal("multimap bindings")
	}
	mm.RemoveBinding(n1, "k", "b")
	if mm.Len() != 0 {
		t.Fatal("removing the last binding should remove the key")
	}
	mm.Put(n1, "j", []string{"x", "y"})
	for _, v := range []ReplicatedData{lm, pm, mm} {
		sameState(t, reg, "round trip", v, roundTrip(t, reg, v))
	}
}

func TestKey(t *testing.T) {
	k := NewKey[*ORSet[string]]("cart-42")
	if k.ID() != "cart-42" || k.TypeName() != "*ddata.ORSet[string]" {
		t.Fatalf("key %v", k)
	}
	if _, err := k.Cast(NewGCounter()); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("cast of a counter: %v", err)
	}
	if _, err := k.Cast(nil); !errors.Is(err, ErrTypeMismatch) {
		t.Fatalf("cast of nil: %v", err)
	}
	s, err := k.Cast(NewORSet[string]())
	if err != nil || s == nil {
		t.Fatal(err)
	}
	var any1, any2 AnyKey = k, NewKey[*GCounter]("cart-42")
	if any1.ID() != any2.ID() || any1.DataType() == any2.DataType() {
		t.Fatal("one id with two types must be detectable")
	}
}
