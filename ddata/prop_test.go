package ddata

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/serialization"
	"pgregory.net/rapid"
)

// model describes one CRDT type for the property tests.
type model struct {
	name string
	newV func() ReplicatedData
	// op applies one random operation on behalf of node.
	op func(t *rapid.T, v ReplicatedData, node cluster.UniqueAddress)
	// keysOf, for the ORMap family, returns the map's keys: merges are an exact
	// lattice join on the keys, while values may keep state across a concurrent
	// remove and update (see ORMap).
	keysOf func(v ReplicatedData) ReplicatedData
}

var smallKeys = []string{"a", "b", "c"}

func drawKey(t *rapid.T) string { return rapid.SampledFrom(smallKeys).Draw(t, "key") }

// testClock increases by 1 or 2, so that different nodes often tie.
func testClock[V any](t *rapid.T) Clock[V] {
	return func(cur int64, _ V) int64 { return cur + rapid.Int64Range(1, 2).Draw(t, "tick") }
}

// badClock may repeat a timestamp, so that even one node's writes tie; merges must
// stay commutative and associative all the same.
func badClock[V any](t *rapid.T) Clock[V] {
	return func(cur int64, _ V) int64 { return cur + rapid.Int64Range(0, 2).Draw(t, "tick") }
}

var models = []model{
	{name: "GCounter", newV: func() ReplicatedData { return NewGCounter() },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			v.(*GCounter).Increment(n, rapid.Uint64Range(0, 5).Draw(t, "n"))
		}},
	{name: "PNCounter", newV: func() ReplicatedData { return NewPNCounter() },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			v.(*PNCounter).Add(n, rapid.Int64Range(-5, 5).Draw(t, "n"))
		}},
	{name: "GSet", newV: func() ReplicatedData { return NewGSet[int]() },
		op: func(t *rapid.T, v ReplicatedData, _ cluster.UniqueAddress) {
			v.(*GSet[int]).Add(rapid.IntRange(0, 9).Draw(t, "e"))
		}},
	{name: "ORSet", newV: func() ReplicatedData { return NewORSet[int]() },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			s := v.(*ORSet[int])
			switch rapid.IntRange(0, 9).Draw(t, "op") {
			case 0:
				s.Clear()
			case 1, 2, 3:
				s.Remove(rapid.IntRange(0, 5).Draw(t, "e"))
			default:
				s.Add(n, rapid.IntRange(0, 5).Draw(t, "e"))
			}
		}},
	{name: "Flag", newV: func() ReplicatedData { return NewFlag() },
		op: func(t *rapid.T, v ReplicatedData, _ cluster.UniqueAddress) {
			if rapid.IntRange(0, 3).Draw(t, "on") == 0 {
				v.(*Flag).SwitchOn()
			}
		}},
	{name: "LWWRegister", newV: func() ReplicatedData { return &LWWRegister[int]{} },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			v.(*LWWRegister[int]).Set(n, rapid.IntRange(0, 3).Draw(t, "v"), badClock[int](t))
		}},
	{name: "VersionVector", newV: func() ReplicatedData { return NewVersionVector() },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			v.(*VersionVector).Increment(n)
		}},
	{name: "ORMap", newV: func() ReplicatedData { return NewORMap[string, *GCounter]() },
		keysOf: func(v ReplicatedData) ReplicatedData { return &v.(*ORMap[string, *GCounter]).keys },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			m := v.(*ORMap[string, *GCounter])
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0:
				if !noRemoves {
					m.Remove(drawKey(t))
				}
			case 1:
				c := NewGCounter()
				c.Increment(n, rapid.Uint64Range(1, 3).Draw(t, "n"))
				if err := m.Put(n, drawKey(t), c); err != nil {
					t.Fatal(err)
				}
			default:
				inc := rapid.Uint64Range(0, 3).Draw(t, "n")
				if err := m.Update(n, drawKey(t), nil, func(c *GCounter) { c.Increment(n, inc) }); err != nil {
					t.Fatal(err)
				}
			}
		}},
	{name: "ORMapOfORSets", newV: func() ReplicatedData { return NewORMap[string, *ORSet[string]]() },
		keysOf: func(v ReplicatedData) ReplicatedData { return &v.(*ORMap[string, *ORSet[string]]).keys },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			m := v.(*ORMap[string, *ORSet[string]])
			switch rapid.IntRange(0, 5).Draw(t, "op") {
			case 0:
				if !noRemoves {
					m.Remove(drawKey(t))
				}
			default:
				e := drawKey(t)
				add := rapid.Bool().Draw(t, "add")
				if err := m.Update(n, drawKey(t), nil, func(s *ORSet[string]) {
					if add {
						s.Add(n, e)
					} else {
						s.Remove(e)
					}
				}); err != nil {
					t.Fatal(err)
				}
			}
		}},
	{name: "LWWMap", newV: func() ReplicatedData { return NewLWWMap[string, string]() },
		keysOf: func(v ReplicatedData) ReplicatedData { return &v.(*LWWMap[string, string]).m.keys },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			m := v.(*LWWMap[string, string])
			if rapid.IntRange(0, 4).Draw(t, "op") == 0 {
				if !noRemoves {
					m.Remove(drawKey(t))
				}
			} else {
				m.Put(n, drawKey(t), drawKey(t), testClock[string](t))
			}
		}},
	{name: "PNCounterMap", newV: func() ReplicatedData { return NewPNCounterMap[string]() },
		keysOf: func(v ReplicatedData) ReplicatedData { return &v.(*PNCounterMap[string]).m.keys },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			m := v.(*PNCounterMap[string])
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0:
				if !noRemoves {
					m.Remove(drawKey(t))
				}
			case 1:
				m.Decrement(n, drawKey(t), rapid.Uint64Range(0, 3).Draw(t, "n"))
			default:
				m.Increment(n, drawKey(t), rapid.Uint64Range(0, 3).Draw(t, "n"))
			}
		}},
	{name: "ORMultiMap", newV: func() ReplicatedData { return NewORMultiMap[string, string]() },
		keysOf: func(v ReplicatedData) ReplicatedData { return &v.(*ORMultiMap[string, string]).m.keys },
		op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
			m := v.(*ORMultiMap[string, string])
			switch rapid.IntRange(0, 6).Draw(t, "op") {
			case 0:
				if !noRemoves {
					m.Remove(drawKey(t))
				}
			case 1:
				m.Put(n, drawKey(t), []string{drawKey(t), drawKey(t)})
			case 2:
				if !noRemoves { // the last binding's removal removes the key
					m.RemoveBinding(n, drawKey(t), drawKey(t))
				}
			default:
				m.AddBinding(n, drawKey(t), drawKey(t))
			}
		}},
}

// withoutRemoves returns, for each map model, a variant whose operations never
// remove a key and whose merges and deltas are checked exactly, values included.
func withoutRemoves(ms []model) []model {
	var out []model
	for _, m := range ms {
		if m.keysOf == nil {
			continue
		}
		op := m.op
		out = append(out, model{name: m.name + "/noRemove", newV: m.newV,
			op: func(t *rapid.T, v ReplicatedData, n cluster.UniqueAddress) {
				noRemoves = true
				defer func() { noRemoves = false }()
				op(t, v, n)
			}})
	}
	return out
}

// noRemoves, while set, makes the map models' operations skip removes. The
// property tests run one at a time.
var noRemoves bool

func init() { models = append(models, withoutRemoves(models)...) }

// genReplicas runs random operations and merges on three replicas (nodes n1..n3)
// and returns their states, with no pending delta.
func genReplicas(t *rapid.T, m model) []ReplicatedData {
	reps := []ReplicatedData{m.newV(), m.newV(), m.newV()}
	steps := rapid.IntRange(0, 25).Draw(t, "steps")
	for range steps {
		i := rapid.IntRange(0, 2).Draw(t, "replica")
		if rapid.IntRange(0, 3).Draw(t, "merge?") == 0 {
			j := rapid.IntRange(0, 2).Draw(t, "from")
			mustMerge(t, reps[i], reps[j].CloneData())
		} else {
			m.op(t, reps[i], testNodes[i])
		}
	}
	for _, r := range reps {
		if dd, ok := r.(DeltaData); ok {
			dd.TakeDelta()
		}
	}
	return reps
}

func mustMerge(t tHelper, into, from ReplicatedData) {
	t.Helper()
	if err := into.MergeData(from); err != nil {
		t.Fatalf("merge: %v", err)
	}
}

func merged(t tHelper, a, b ReplicatedData) ReplicatedData {
	t.Helper()
	c := a.CloneData()
	mustMerge(t, c, b)
	return c
}

// stateEq compares encodings; for the ORMap family with exact false it compares
// the keys only.
func stateEq(t tHelper, reg *serialization.Registry, m model, what string, a, b ReplicatedData, exact bool) {
	t.Helper()
	if !exact && m.keysOf != nil {
		a, b = m.keysOf(a), m.keysOf(b)
	}
	sameState(t, reg, m.name+": "+what, a, b)
}

// TestMergeLaws: merge is commutative, associative and idempotent, and every state
// survives an encode/decode round trip with the same encoding.
func TestMergeLaws(t *testing.T) {
	reg := testRegistry(t)
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				s := genReplicas(t, m)
				a, b, c := s[0], s[1], s[2]
				stateEq(t, reg, m, "commutative", merged(t, a, b), merged(t, b, a), true)
				stateEq(t, reg, m, "idempotent", merged(t, a, a), a, true)
				ab := merged(t, a, b)
				stateEq(t, reg, m, "absorbs", merged(t, ab, b), ab, true)
				left, right := merged(t, ab, c), merged(t, a, merged(t, b, c))
				stateEq(t, reg, m, "associative", left, right, false)
				for _, v := range s {
					back := roundTrip(t, reg, v)
					sameState(t, reg, m.name+": round trip", v, back)
					stateEq(t, reg, m, "clone", v.CloneData(), v, true)
				}
			})
		})
	}
}

// TestDeltaLaw: for a replica R that has merged the originator's state S0, applying
// the delta of the originator's next operations (composed one by one, and sent
// through the registry) equals merging the originator's new state S1.
func TestDeltaLaw(t *testing.T) {
	reg := testRegistry(t)
	for _, m := range models {
		if _, ok := m.newV().(DeltaData); !ok {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				s := genReplicas(t, m)
				o, r := s[0], s[1]
				mustMerge(t, r, o.CloneData())
				var d Delta
				for range rapid.IntRange(1, 4).Draw(t, "ops") {
					m.op(t, o, testNodes[0])
					di, changed := o.(DeltaData).TakeDelta()
					if changed && di == nil {
						t.Fatal("small change without a delta")
					}
					if di == nil {
						continue
					}
					di = roundTrip(t, reg, di).(Delta)
					if d == nil {
						d = di
					} else {
						var err error
						if d, err = d.Compose(di); err != nil {
							t.Fatal(err)
						}
					}
				}
				if d == nil {
					return
				}
				viaDelta := r.CloneData()
				if err := viaDelta.(DeltaData).MergeDelta(d); err != nil {
					t.Fatal(err)
				}
				viaFull := merged(t, r, o)
				// For the ORMap family with removes only the keys are exact: a
				// value of a key removed at R and re-created at O differs (see
				// ORMap). The "/noRemove" models check the values too.
				stateEq(t, reg, m, "delta vs full", viaDelta, viaFull, false)
				z := d.NewData()
				if err := z.MergeDelta(d); err != nil {
					t.Fatalf("delta on an empty value: %v", err)
				}
			})
		})
	}
}

// TestDeltaLawORMapUpdate: for an ORMap whose keys are not removed, the delta of an
// update is exact for values too.
func TestDeltaLawORMapUpdate(t *testing.T) {
	reg := testRegistry(t)
	m := NewORMap[string, *GCounter]
	rapid.Check(t, func(t *rapid.T) {
		reps := []*ORMap[string, *GCounter]{m(), m(), m()}
		upd := func(i int) {
			inc := rapid.Uint64Range(0, 3).Draw(t, "n")
			n := testNodes[i]
			if err := reps[i].Update(n, drawKey(t), nil, func(c *GCounter) { c.Increment(n, inc) }); err != nil {
				t.Fatal(err)
			}
		}
		for range rapid.IntRange(0, 20).Draw(t, "steps") {
			i := rapid.IntRange(0, 2).Draw(t, "replica")
			if rapid.Bool().Draw(t, "merge?") {
				reps[i].Merge(reps[rapid.IntRange(0, 2).Draw(t, "from")])
			} else {
				upd(i)
			}
		}
		for _, r := range reps {
			r.TakeDelta()
		}
		reps[1].Merge(reps[0])
		upd(0)
		d, _ := reps[0].TakeDelta()
		viaDelta := reps[1].Clone()
		if err := viaDelta.MergeDelta(d); err != nil {
			t.Fatal(err)
		}
		viaFull := reps[1].Clone()
		viaFull.Merge(reps[0])
		sameState(t, reg, "ORMap delta vs full", viaDelta, viaFull)
	})
}

// TestConvergence runs random operations on four replicas that exchange deltas in
// random order, with duplicates and drops, applying causal deltas only in order per
// originator (a gap falls back to a full-state merge, as the replicator does), and
// occasional full-state gossip. After a final exchange of full states every replica
// holds the same state.
func TestConvergence(t *testing.T) {
	reg := testRegistry(t)
	for _, m := range models {
		if _, ok := m.newV().(DeltaData); !ok {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) { runConvergence(t, reg, m) })
		})
	}
}

type logged struct {
	d    Delta // nil: a change without a delta
	full bool
}

func runConvergence(t *rapid.T, reg *serialization.Registry, m model) {
	const k = 4
	reps := make([]DeltaData, k)
	logs := make([][]logged, k) // logs[i][s-1]: i's s-th delta
	recv := make([][]int, k)    // recv[j][i]: the last of i's deltas j has
	for i := range reps {
		reps[i] = m.newV().(DeltaData)
		recv[i] = make([]int, k)
	}
	full := func(j, i int) {
		mustMerge(t, reps[j], reps[i].CloneData())
		recv[j][i] = max(recv[j][i], len(logs[i]))
	}
	for range rapid.IntRange(0, 60).Draw(t, "steps") {
		switch rapid.IntRange(0, 9).Draw(t, "step") {
		case 0: // full-state gossip
			full(rapid.IntRange(0, k-1).Draw(t, "to"), rapid.IntRange(0, k-1).Draw(t, "from"))
		case 1, 2, 3, 4: // deliver a range of deltas, maybe with a gap or a duplicate
			i, j := rapid.IntRange(0, k-1).Draw(t, "from"), rapid.IntRange(0, k-1).Draw(t, "to")
			if i == j || len(logs[i]) == 0 {
				continue
			}
			from := rapid.IntRange(1, len(logs[i])).Draw(t, "first")
			to := rapid.IntRange(from, len(logs[i])).Draw(t, "last")
			deliver(t, reps, logs, recv, full, i, j, from, to)
		default:
			i := rapid.IntRange(0, k-1).Draw(t, "replica")
			m.op(t, reps[i], testNodes[i])
			d, changed := reps[i].TakeDelta()
			if changed {
				logs[i] = append(logs[i], logged{d: d, full: d == nil})
				recv[i][i] = len(logs[i])
			}
		}
	}
	// Deliver everything in order, then gossip full states around twice.
	for i := range k {
		for j := range k {
			if i != j && recv[j][i] < len(logs[i]) {
				deliver(t, reps, logs, recv, full, i, j, recv[j][i]+1, len(logs[i]))
			}
		}
	}
	for range 2 {
		for j := range k {
			for i := range k {
				if i != j {
					full(j, i)
				}
			}
		}
	}
	for i := 1; i < k; i++ {
		sameState(t, reg, fmt.Sprintf("%s: replica %d vs 0", m.name, i), reps[i], reps[0])
	}
}

// deliver sends i's deltas from..to to j, applying the replicator's rule.
func deliver(t *rapid.T, reps []DeltaData, logs [][]logged, recv [][]int, full func(j, i int), i, j, from, to int) {
	var d Delta
	for s := from; s <= to; s++ {
		e := logs[i][s-1]
		if e.full {
			full(j, i) // a change without a delta travels as full state
			return
		}
		if d == nil {
			d = e.d
		} else {
			var err error
			if d, err = d.Compose(e.d); err != nil {
				t.Fatal(err)
			}
		}
	}
	cur := recv[j][i]
	if d.Causal() {
		switch {
		case to <= cur:
			return // duplicate
		case from > cur+1:
			full(j, i) // gap
			return
		}
	}
	if err := reps[j].MergeDelta(d); err != nil {
		t.Fatal(err)
	}
	recv[j][i] = max(cur, to)
}

// TestPruningKeepsCounterValues: pruning a removed node into another keeps every
// counter's value, and replicas that clean up and then merge the pruned state
// agree with it.
func TestPruningKeepsCounterValues(t *testing.T) {
	reg := testRegistry(t)
	for _, m := range models {
		if _, ok := m.newV().(PrunableData); !ok {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				s := genReplicas(t, m)
				// n3 (replica 2) is removed; n1 (replica 0) prunes it after merging
				// everything; replica 1 cleans up and merges the pruned state.
				mustMerge(t, s[0], s[2])
				mustMerge(t, s[1], s[2])
				before := observe(s[0])
				p := s[0].(PrunableData)
				p.Prune(n3, n1)
				if p.NeedPruningFrom(n3) {
					t.Fatalf("still needs pruning from n3: %v", p.ModifiedByNodes())
				}
				if after := observe(s[0]); after != before {
					t.Fatalf("pruning changed the value: %s -> %s", before, after)
				}
				other := s[1].(PrunableData)
				other.PruningCleanup(n3)
				mustMerge(t, other, s[0])
				if other.NeedPruningFrom(n3) {
					t.Fatal("cleanup left n3")
				}
				withPruned := merged(t, s[0], other)
				stateEq(t, reg, m, "merge of pruned states", withPruned, other, true)
			})
		})
	}
}

// observe returns what a user sees of a value (its elements or counts), as text.
func observe(v ReplicatedData) string {
	var b bytes.Buffer
	switch x := v.(type) {
	case *GCounter:
		fmt.Fprint(&b, x.Value())
	case *PNCounter:
		fmt.Fprint(&b, x.Value())
	case *VersionVector:
		// Pruning changes a vector (it moves the removed node's count); what
		// matters is that the pruned vector is after the original.
	case *ORSet[int]:
		fmt.Fprint(&b, sortedInts(x.Elements()))
	case *ORMap[string, *GCounter]:
		for _, k := range smallKeys {
			if c, ok := x.Get(k); ok {
				fmt.Fprintf(&b, "%s=%d ", k, c.Value())
			}
		}
	case *ORMap[string, *ORSet[string]]:
		for _, k := range smallKeys {
			if s, ok := x.Get(k); ok {
				fmt.Fprintf(&b, "%s=%v ", k, sortedStrings(s.Elements()))
			}
		}
	case *LWWMap[string, string]:
		for _, k := range smallKeys {
			if v, ok := x.Get(k); ok {
				fmt.Fprintf(&b, "%s=%s ", k, v)
			}
		}
	case *PNCounterMap[string]:
		for _, k := range smallKeys {
			if v, ok := x.Get(k); ok {
				fmt.Fprintf(&b, "%s=%d ", k, v)
			}
		}
	case *ORMultiMap[string, string]:
		for _, k := range smallKeys {
			if v, ok := x.Get(k); ok {
				fmt.Fprintf(&b, "%s=%v ", k, sortedStrings(v))
			}
		}
	default:
		fmt.Fprintf(&b, "%T", v)
	}
	return b.String()
}
