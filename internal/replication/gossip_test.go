package replication

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// digest stands for ddata's Digest.
type digest [32]byte

var (
	notFoundDigest = digest{}
	deletedDigest  = digest{0: 0xff, 31: 0xff}
)

func dg(b byte) digest { return digest{0: b, 1: 1} }

func TestCompareStatus(t *testing.T) {
	local := map[string]digest{"a": dg(1), "b": dg(2), "c": dg(3), "gone": deletedDigest}
	cases := []struct {
		name     string
		peer     map[string]digest
		send     []string
		sendBack bool
		request  []string
	}{
		{"equal", map[string]digest{"a": dg(1), "b": dg(2), "c": dg(3), "gone": deletedDigest}, nil, false, nil},
		{"differ", map[string]digest{"a": dg(9), "b": dg(2), "c": dg(3), "gone": deletedDigest}, []string{"a"}, true, nil},
		{"peer lacks", map[string]digest{"a": dg(1)}, []string{"b", "c", "gone"}, false, nil},
		{"peer asks", map[string]digest{"a": dg(1), "b": notFoundDigest, "c": dg(3), "gone": deletedDigest}, []string{"b"}, false, nil},
		{"we lack", map[string]digest{"a": dg(1), "b": dg(2), "c": dg(3), "gone": deletedDigest, "x": dg(4), "y": dg(5)}, nil, false, []string{"x", "y"}},
		{"both lack", map[string]digest{"a": dg(1), "b": dg(2), "c": dg(3), "gone": deletedDigest, "x": notFoundDigest}, nil, false, nil},
	}
	for _, c := range cases {
		r := CompareStatus(local, Status[digest]{Digests: c.peer, TotChunks: 1}, notFoundDigest, 500)
		if !slices.Equal(r.Send, c.send) || r.SendBack != c.sendBack || !slices.Equal(r.Request, c.request) {
			t.Errorf("%s: got send %v back %v request %v", c.name, r.Send, r.SendBack, r.Request)
		}
	}
	req := RequestStatus(local, []string{"x"}, Status[digest]{TotChunks: 1}, notFoundDigest)
	if req.Digests["x"] != notFoundDigest || req.Digests["a"] != dg(1) || len(req.Digests) != 5 {
		t.Errorf("a request names the keys asked for with notFoundDigest, and the chunk's own: %v", req.Digests)
	}
}

func TestGossipChunks(t *testing.T) {
	local := make(map[string]digest)
	for i := range 1200 {
		local[fmt.Sprintf("k%04d", i)] = dg(byte(i))
	}
	seen := make(map[string]int)
	for tick := range uint64(3) {
		st := BuildStatus(local, tick, 500)
		if st.TotChunks != 3 || st.Chunk != int(tick) {
			t.Fatalf("tick %d: chunk %d of %d", tick, st.Chunk, st.TotChunks)
		}
		for k := range st.Digests {
			seen[k]++
		}
		// A peer that has nothing answers with at most 500 keys, all of this chunk.
		r := CompareStatus(map[string]digest{}, st, notFoundDigest, 500)
		if len(r.Request) != min(len(st.Digests), 500) {
			t.Fatalf("request %d of %d", len(r.Request), len(st.Digests))
		}
		// A peer holding everything sends only this chunk's keys it misses.
		r = CompareStatus(local, Status[digest]{Digests: map[string]digest{}, Chunk: st.Chunk, TotChunks: 3}, notFoundDigest, 10_000)
		if len(r.Send) != len(st.Digests) {
			t.Fatalf("send %d, want the chunk's %d", len(r.Send), len(st.Digests))
		}
	}
	if len(seen) != 1200 {
		t.Fatalf("three ticks covered %d keys, want all", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s in %d chunks", k, n)
		}
	}
	r := CompareStatus(local, Status[digest]{Digests: map[string]digest{}, TotChunks: 1}, notFoundDigest, 500)
	if len(r.Send) != 500 || r.Send[0] != "k0000" {
		t.Fatalf("send capped to 500 in key order: %d %v", len(r.Send), r.Send[:1])
	}
}

func TestSendBackKeys(t *testing.T) {
	got := SendBackKeys(map[string]digest{"a": dg(1), "b": dg(2)}, map[string]digest{"a": dg(1), "b": dg(7)})
	if !slices.Equal(got, []string{"b"}) {
		t.Fatalf("got %v", got)
	}
}

func TestGossipTarget(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	if _, ok := GossipTarget[int](nil, nil, 0, rng); ok {
		t.Fatal("a target without members")
	}
	for round := range uint64(6) {
		n, ok := GossipTarget([]int{1, 2}, []int{9}, round, rng)
		wantUnreachable := round%UnreachableGossipEvery == UnreachableGossipEvery-1
		if !ok || (n == 9) != wantUnreachable {
			t.Fatalf("round %d: target %d", round, n)
		}
	}
	if n, ok := GossipTarget(nil, []int{9}, 0, rng); !ok || n != 9 {
		t.Fatalf("only unreachable members: %d %v", n, ok)
	}
}
