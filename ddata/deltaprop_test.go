package ddata

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
)

func gcDelta(node cluster.UniqueAddress, v uint64) Delta {
	return &GCounterDelta{entries: []nodeCount{{node: node, n: v}}}
}

func orAdd(node cluster.UniqueAddress, seq uint64, e string) Delta {
	return &ORSetDelta[string]{ops: []orsetOp[string]{{kind: opAdd, elem: e, add: nodeDot{node: node, seq: seq}}}}
}

func TestDeltaInterval(t *testing.T) {
	if got := deltaInterval(2 * time.Second); got != 400*time.Millisecond {
		t.Errorf("2s: %v", got)
	}
	if got := deltaInterval(500 * time.Millisecond); got != 200*time.Millisecond {
		t.Errorf("500ms: %v", got)
	}
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 9: 2, 10: 3, 30: 7, 100: 10} {
		if got := sliceSize(n); got != want {
			t.Errorf("sliceSize(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestDeltaPropagationRoundRobin(t *testing.T) {
	p := newDeltaPropagation(0)
	p.setNodes([]cluster.UniqueAddress{n2, n3, n4, n5})
	if s := p.update("k", gcDelta(n1, 1)); s != 1 {
		t.Fatalf("seq %d", s)
	}
	p.update("k", gcDelta(n1, 2))
	first := p.collect()
	if len(first) != 2 {
		t.Fatalf("first tick reached %d nodes, want 2", len(first))
	}
	for n, sends := range first {
		if len(sends) != 1 || sends[0].fromSeq != 1 || sends[0].toSeq != 2 || sends[0].delta.Size() != 1 {
			t.Fatalf("%v got %+v", n, sends)
		}
	}
	p.update("k", gcDelta(n1, 3))
	second := p.collect()
	if len(second) != 2 {
		t.Fatalf("second tick reached %d nodes", len(second))
	}
	for n, sends := range second {
		if _, again := first[n]; again {
			t.Fatalf("%v reached twice before the others", n)
		}
		if sends[0].fromSeq != 1 || sends[0].toSeq != 3 {
			t.Fatalf("%v: %+v", n, sends[0])
		}
	}
	third := p.collect()
	for _, sends := range third {
		if sends[0].fromSeq != 3 || sends[0].toSeq != 3 {
			t.Fatalf("third: %+v", sends[0])
		}
	}
	if len(p.entries) != 0 {
		t.Fatalf("entries sent to every node should be dropped: %v", p.entries)
	}
	if p.currentVersion("k") != 3 {
		t.Fatal("numbering must go on after cleanup")
	}
	p.delete("k")
	if p.currentVersion("k") != 0 || p.collect() != nil {
		t.Fatal("a deleted key is forgotten")
	}
}

func TestDeltaPropagationNoDelta(t *testing.T) {
	p := newDeltaPropagation(2)
	p.setNodes([]cluster.UniqueAddress{n2})
	p.update("big", orAdd(n1, 1, "a"))
	p.update("big", orAdd(n1, 2, "b"))
	p.update("big", orAdd(n1, 3, "c")) // composed size 3 > 2
	p.update("none", nil)
	sends := p.collect()[n2]
	if len(sends) != 2 {
		t.Fatalf("sends %+v", sends)
	}
	for _, s := range sends {
		if s.delta != nil {
			t.Fatalf("%s: want no delta, got %v", s.key, s.delta)
		}
	}
}

func TestCheckDelta(t *testing.T) {
	env := newEnvelope(NewORSet[string]())
	env.deltaVersions = map[cluster.UniqueAddress]uint64{n2: 5}
	cases := []struct {
		name     string
		e        *envelope
		d        Delta
		from, to uint64
		want     deltaVerdict
	}{
		{"next", env, orAdd(n2, 1, "a"), 6, 6, deltaApply},
		{"overlap", env, orAdd(n2, 1, "a"), 4, 7, deltaApply},
		{"seen", env, orAdd(n2, 1, "a"), 3, 5, deltaSeen},
		{"gap", env, orAdd(n2, 1, "a"), 7, 8, deltaNeedFull},
		{"no delta", env, nil, 6, 6, deltaNeedFull},
		{"absent key, first", nil, orAdd(n2, 1, "a"), 1, 2, deltaApply},
		{"absent key, gap", nil, orAdd(n2, 1, "a"), 2, 2, deltaNeedFull},
		{"not causal ignores seq", env, gcDelta(n2, 1), 9, 9, deltaApply},
		{"deleted", deletedEnvelope(), orAdd(n2, 1, "a"), 1, 1, deltaSeen},
	}
	for _, c := range cases {
		if got := checkDelta(c.e, n2, c.d, c.from, c.to); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
	e, err := applyDelta(nil, n2, orAdd(n2, 1, "a"), 1)
	if err != nil || !e.data.(*ORSet[string]).Contains("a") || e.deltaVersions[n2] != 1 {
		t.Fatalf("apply to absent key: %v %+v", err, e)
	}
	if _, err := applyDelta(e, n2, gcDelta(n2, 1), 2); err == nil {
		t.Fatal("a counter delta applied to a set")
	}
}

// bump numbers a change that no node is sent: the next delta shows the gap.
func TestDeltaPropagationBump(t *testing.T) {
	p := newDeltaPropagation(0)
	p.update("k", orAdd(n1, 1, "a"))
	if s := p.bump("k"); s != 2 {
		t.Fatalf("bump gave seq %d, want 2", s)
	}
	if len(p.entries["k"]) != 0 {
		t.Fatalf("bump kept entries %v", p.entries["k"])
	}
	p.setNodes([]cluster.UniqueAddress{n2})
	p.update("k", orAdd(n1, 3, "b"))
	sent := p.collect()[n2]
	if len(sent) != 1 || sent[0].fromSeq != 3 {
		t.Fatalf("sent %+v", sent)
	}
	// A receiver that has seq 1 finds the gap and needs the full value.
	e := newEnvelope(NewORSet[string]())
	e.deltaVersions = map[cluster.UniqueAddress]uint64{n1: 1}
	if v := checkDelta(e, n1, sent[0].delta, sent[0].fromSeq, sent[0].toSeq); v != deltaNeedFull {
		t.Fatalf("verdict %d, want deltaNeedFull", v)
	}
}
