package ddata

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
	"github.com/troupe-go/troupe/serialization"
)

func counterEnv(counts map[cluster.UniqueAddress]uint64) *envelope {
	c := NewGCounter()
	for n, v := range counts {
		c.Increment(n, v)
	}
	c.TakeDelta()
	return newEnvelope(c)
}

func envValue(e *envelope) uint64 { return e.data.(*GCounter).Value() }

func TestPruningSteps(t *testing.T) {
	counts := map[cluster.UniqueAddress]uint64{n1: 1, n2: 2, n3: 3}
	e1, e2 := counterEnv(counts), counterEnv(counts)
	entries := map[string]*envelope{"c": e1}
	p := newPruner(n1, 300*time.Second, 0)
	members := pruningMembers{leader: true, members: []cluster.UniqueAddress{n1, n2}, allReachable: true}

	p.nodeRemoved(n3, t0)
	if ch := p.tick(entries, members, t0.Add(100*time.Second)); len(ch) != 0 {
		t.Fatalf("pruning started before max-pruning-dissemination: %v", ch)
	}
	unreachable := members
	unreachable.allReachable = false
	if ch := p.tick(entries, unreachable, t0.Add(400*time.Second)); len(ch) != 0 {
		t.Fatal("pruning while a member is unreachable")
	}
	now := t0.Add(301 * time.Second)
	if ch := p.tick(entries, members, now); !slices.Equal(ch, []string{"c"}) {
		t.Fatalf("init: changed %v", ch)
	}
	if st := e1.pruning[n3]; st.performed || st.owner != n1 {
		t.Fatalf("init state %+v", st)
	}
	// Not performed until n2 has seen the init.
	if ch := p.tick(entries, members, now); len(ch) != 0 || e1.pruning[n3].performed {
		t.Fatalf("performed before every member saw the init: %v", ch)
	}
	if err := e2.mergeIncoming(e1.clone(), n2, now); err != nil {
		t.Fatal(err)
	}
	if err := e1.mergeIncoming(e2.clone(), n1, now); err != nil {
		t.Fatal(err)
	}
	if !e1.pruning[n3].hasSeen(n2) {
		t.Fatalf("seen %v", e1.pruning[n3].seen)
	}
	if ch := p.tick(entries, members, now); !slices.Equal(ch, []string{"c"}) || !e1.pruning[n3].performed {
		t.Fatalf("perform: %v %+v", ch, e1.pruning[n3])
	}
	if e1.needPruningFrom(n3) || envValue(e1) != 6 {
		t.Fatalf("after perform: value %d, nodes %v", envValue(e1), e1.data.(*GCounter).ModifiedByNodes())
	}
	// n2 still holds n3's count; merging the pruned value cleans it up first.
	if err := e2.mergeIncoming(e1.clone(), n2, now); err != nil {
		t.Fatal(err)
	}
	if e2.needPruningFrom(n3) || envValue(e2) != 6 {
		t.Fatalf("n2 after merge: %d", envValue(e2))
	}
	// A stale copy holding n3's count does not bring it back while the marker lives.
	stale := counterEnv(counts)
	if err := e1.merge(stale, now); err != nil || envValue(e1) != 6 || e1.needPruningFrom(n3) {
		t.Fatalf("stale merge: %v %d", err, envValue(e1))
	}
	// The marker is forgotten after the TTL.
	later := now.Add(301 * time.Second)
	if ch := p.tick(entries, members, later); !slices.Equal(ch, []string{"c"}) || len(e1.pruning) != 0 {
		t.Fatalf("forget: %v %v", ch, e1.pruning)
	}
	if _, ok := p.removed[n3]; ok {
		t.Fatal("the pruner still remembers n3")
	}
}

func TestPruningCollectsUnknownNodes(t *testing.T) {
	entries := map[string]*envelope{"c": counterEnv(map[cluster.UniqueAddress]uint64{n1: 1, n4: 4})}
	p := newPruner(n1, time.Second, time.Minute)
	m := pruningMembers{leader: true, members: []cluster.UniqueAddress{n1}, allReachable: true}
	p.tick(entries, m, t0)
	if _, ok := p.removed[n4]; !ok {
		t.Fatal("a node in the data but not in the cluster is a removed node")
	}
	// n1 is alone: init, then perform at once.
	p.tick(entries, m, t0.Add(2*time.Second))
	p.tick(entries, m, t0.Add(2*time.Second))
	if e := entries["c"]; !e.pruning[n4].performed || envValue(e) != 5 {
		t.Fatalf("%+v %d", e.pruning, envValue(e))
	}
}

func TestPruningStateMerge(t *testing.T) {
	initA := pruningState{owner: n1, seen: []cluster.UniqueAddress{n2}}
	initA2 := pruningState{owner: n1, seen: []cluster.UniqueAddress{n3}}
	initB := pruningState{owner: n2}
	perf1 := pruningState{performed: true, obsoleteAt: 10}
	perf2 := pruningState{performed: true, obsoleteAt: 20}
	cases := []struct {
		name string
		a, b pruningState
		want pruningState
	}{
		{"same owner joins seen", initA, initA2, pruningState{owner: n1, seen: []cluster.UniqueAddress{n2, n3}}},
		{"lower owner wins", initB, initA, initA},
		{"performed wins", initA, perf1, perf1},
		{"later marker wins", perf2, perf1, perf2},
	}
	for _, c := range cases {
		for _, got := range []pruningState{c.a.merge(c.b), c.b.merge(c.a)} {
			if got.owner != c.want.owner || got.performed != c.want.performed || got.obsoleteAt != c.want.obsoleteAt || !slices.Equal(got.seen, c.want.seen) {
				t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
			}
		}
	}
}

func TestEnvelopeWire(t *testing.T) {
	reg := testRegistry(t)
	e := counterEnv(map[cluster.UniqueAddress]uint64{n1: 1, n3: 3})
	e.initPruning(n3, n1)
	e.addSeen(n2)
	e.pruning[n4] = pruningState{performed: true, obsoleteAt: 42}
	e.deltaVersions = map[cluster.UniqueAddress]uint64{n1: 7}
	b, err := marshalEnvelope(reg, e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := unmarshalEnvelope(reg, b)
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := marshalEnvelope(reg, back)
	if string(b) != string(b2) {
		t.Fatal("envelope round trip differs")
	}
	d1, _ := e.digest(reg)
	back.deltaVersions[n1] = 9
	d2, _ := back.digest(reg)
	if d1 != d2 {
		t.Fatal("delta versions must not change the digest")
	}
	back.addSeen(n5)
	if d3, _ := back.digest(reg); d3 == d1 {
		t.Fatal("pruning state must change the digest")
	}
	if d, _ := deletedEnvelope().digest(reg); d != deletedDigest {
		t.Fatal("deleted digest")
	}
	// Hostile: data of an unknown manifest, and a deleted envelope with data.
	for _, w := range []envelopeWire{
		{Manifest: "nope", Data: []byte{0x90}},
		{Deleted: true, Manifest: "ddata.Flag", Data: []byte{0xc3}},
		{},
		{Manifest: "ddata.Flag", Data: []byte{0xc3}, DeltaVersions: []versionWire{{Node: nodeWire{Addr: "a"}, Version: 0}}},
		{Manifest: "ddata.Flag", Data: []byte{0xc3}, Pruning: []pruningWire{{Removed: nodeWire{}}}},
	} {
		_, bw, err := reg.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		_, err = unmarshalEnvelope(reg, bw)
		if !errors.Is(err, ErrInvalidData) && !errors.Is(err, serialization.ErrUnknownManifest) && !errors.Is(err, serialization.ErrDecode) {
			t.Errorf("%+v: %v", w, err)
		}
	}
}

func TestEnvelopeMerge(t *testing.T) {
	a := counterEnv(map[cluster.UniqueAddress]uint64{n1: 1})
	if err := a.merge(newEnvelope(NewFlag()), t0); !errors.Is(err, ErrTypeMismatch) || envValue(a) != 1 {
		t.Fatalf("merge of another type: %v", err)
	}
	if err := a.merge(deletedEnvelope(), t0); err != nil || !a.deleted || a.data != nil {
		t.Fatalf("deletion must win: %v %+v", err, a)
	}
	if err := a.merge(counterEnv(map[cluster.UniqueAddress]uint64{n1: 5}), t0); err != nil || !a.deleted {
		t.Fatal("a deleted key stays deleted")
	}
}
