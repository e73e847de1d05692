package ddata

import (
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/internal/replication"
)

func gcDelta(node cluster.UniqueAddress, v uint64) Delta {
	return &GCounterDelta{entries: []nodeCount{{node: node, n: v}}}
}

func orAdd(node cluster.UniqueAddress, seq uint64, e string) Delta {
	return &ORSetDelta[string]{ops: []orsetOp[string]{{kind: opAdd, elem: e, add: nodeDot{node: node, seq: seq}}}}
}

func TestDeltaInterval(t *testing.T) {
	if got := replication.DeltaInterval(2 * time.Second); got != 400*time.Millisecond {
		t.Errorf("2s: %v", got)
	}
	if got := replication.DeltaInterval(500 * time.Millisecond); got != 200*time.Millisecond {
		t.Errorf("500ms: %v", got)
	}
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 9: 2, 10: 3, 30: 7, 100: 10} {
		if got := replication.SliceSize(n); got != want {
			t.Errorf("replication.SliceSize(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestDeltaPropagationRoundRobin(t *testing.T) {
	p := newDeltaPropagation(0)
	p.SetNodes([]cluster.UniqueAddress{n2, n3, n4, n5})
	if s := p.Update("k", gcDelta(n1, 1)); s != 1 {
		t.Fatalf("seq %d", s)
	}
	p.Update("k", gcDelta(n1, 2))
	first := p.Collect()
	if len(first) != 2 {
		t.Fatalf("first tick reached %d nodes, want 2", len(first))
	}
	for n, sends := range first {
		if len(sends) != 1 || sends[0].FromSeq != 1 || sends[0].ToSeq != 2 || sends[0].Delta.Size() != 1 {
			t.Fatalf("%v got %+v", n, sends)
		}
	}
	p.Update("k", gcDelta(n1, 3))
	second := p.Collect()
	if len(second) != 2 {
		t.Fatalf("second tick reached %d nodes", len(second))
	}
	for n, sends := range second {
		if _, again := first[n]; again {
			t.Fatalf("%v reached twice before the others", n)
		}
		if sends[0].FromSeq != 1 || sends[0].ToSeq != 3 {
			t.Fatalf("%v: %+v", n, sends[0])
		}
	}
	third := p.Collect()
	for _, sends := range third {
		if sends[0].FromSeq != 3 || sends[0].ToSeq != 3 {
			t.Fatalf("third: %+v", sends[0])
		}
	}
	if p.CurrentVersion("k") != 3 {
		t.Fatal("numbering must go on after cleanup")
	}
	p.Delete("k")
	if p.CurrentVersion("k") != 0 || p.Collect() != nil {
		t.Fatal("a deleted key is forgotten")
	}
}

func TestDeltaPropagationNoDelta(t *testing.T) {
	p := newDeltaPropagation(2)
	p.SetNodes([]cluster.UniqueAddress{n2})
	p.Update("big", orAdd(n1, 1, "a"))
	p.Update("big", orAdd(n1, 2, "b"))
	p.Update("big", orAdd(n1, 3, "c")) // composed size 3 > 2
	p.UpdateFull("none")
	sends := p.Collect()[n2]
	if len(sends) != 2 {
		t.Fatalf("sends %+v", sends)
	}
	for _, s := range sends {
		if !s.Full {
			t.Fatalf("%s: want no delta, got %v", s.Key, s.Delta)
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
		want     replication.DeltaVerdict
	}{
		{"next", env, orAdd(n2, 1, "a"), 6, 6, replication.DeltaApply},
		{"overlap", env, orAdd(n2, 1, "a"), 4, 7, replication.DeltaApply},
		{"seen", env, orAdd(n2, 1, "a"), 3, 5, replication.DeltaSeen},
		{"gap", env, orAdd(n2, 1, "a"), 7, 8, replication.DeltaNeedFull},
		{"no delta", env, nil, 6, 6, replication.DeltaNeedFull},
		{"absent key, first", nil, orAdd(n2, 1, "a"), 1, 2, replication.DeltaApply},
		{"absent key, gap", nil, orAdd(n2, 1, "a"), 2, 2, replication.DeltaNeedFull},
		{"not causal ignores seq", env, gcDelta(n2, 1), 9, 9, replication.DeltaApply},
		{"deleted", deletedEnvelope(), orAdd(n2, 1, "a"), 1, 1, replication.DeltaSeen},
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
	p.Update("k", orAdd(n1, 1, "a"))
	if s := p.Bump("k"); s != 2 {
		t.Fatalf("bump gave seq %d, want 2", s)
	}
	if _, _, ok := p.LastDelta("k"); ok {
		t.Fatal("bump kept entries")
	}
	p.SetNodes([]cluster.UniqueAddress{n2})
	p.Update("k", orAdd(n1, 3, "b"))
	sent := p.Collect()[n2]
	if len(sent) != 1 || sent[0].FromSeq != 3 {
		t.Fatalf("sent %+v", sent)
	}
	// A receiver that has seq 1 finds the gap and needs the full value.
	e := newEnvelope(NewORSet[string]())
	e.deltaVersions = map[cluster.UniqueAddress]uint64{n1: 1}
	if v := checkDelta(e, n1, sent[0].Delta, sent[0].FromSeq, sent[0].ToSeq); v != replication.DeltaNeedFull {
		t.Fatalf("verdict %d, want replication.DeltaNeedFull", v)
	}
}
