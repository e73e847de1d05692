package ddata

import (
	"fmt"
	"slices"
	"testing"
)

func dg(b byte) Digest { return Digest{0: b, 1: 1} }

func TestCompareStatus(t *testing.T) {
	local := map[string]Digest{"a": dg(1), "b": dg(2), "c": dg(3), "gone": deletedDigest}
	cases := []struct {
		name     string
		peer     map[string]Digest
		send     []string
		sendBack bool
		request  []string
	}{
		{"equal", map[string]Digest{"a": dg(1), "b": dg(2), "c": dg(3), "gone": deletedDigest}, nil, false, nil},
		{"differ", map[string]Digest{"a": dg(9), "b": dg(2), "c": dg(3), "gone": deletedDigest}, []string{"a"}, true, nil},
		{"peer lacks", map[string]Digest{"a": dg(1)}, []string{"b", "c", "gone"}, false, nil},
		{"peer asks", map[string]Digest{"a": dg(1), "b": notFoundDigest, "c": dg(3), "gone": deletedDigest}, []string{"b"}, false, nil},
		{"we lack", map[string]Digest{"a": dg(1), "b": dg(2), "c": dg(3), "gone": deletedDigest, "x": dg(4), "y": dg(5)}, nil, false, []string{"x", "y"}},
		{"both lack", map[string]Digest{"a": dg(1), "b": dg(2), "c": dg(3), "gone": deletedDigest, "x": notFoundDigest}, nil, false, nil},
	}
	for _, c := range cases {
		r := compareStatus(local, gossipStatus{digests: c.peer, totChunks: 1}, defaultMaxDeltaElements)
		if !slices.Equal(r.send, c.send) || r.sendBack != c.sendBack || !slices.Equal(r.request, c.request) {
			t.Errorf("%s: got send %v back %v request %v", c.name, r.send, r.sendBack, r.request)
		}
	}
	req := requestStatus([]string{"x"}, gossipStatus{totChunks: 1})
	if req.digests["x"] != notFoundDigest {
		t.Error("a request names keys with notFoundDigest")
	}
}

func TestGossipChunks(t *testing.T) {
	local := make(map[string]Digest)
	for i := range 1200 {
		local[fmt.Sprintf("k%04d", i)] = dg(byte(i))
	}
	seen := make(map[string]int)
	for tick := range uint64(3) {
		st := buildStatus(local, tick, 500)
		if st.totChunks != 3 || st.chunk != int(tick) {
			t.Fatalf("tick %d: chunk %d of %d", tick, st.chunk, st.totChunks)
		}
		for k := range st.digests {
			seen[k]++
		}
		// A peer that has nothing answers with at most 500 keys, all of this chunk.
		r := compareStatus(map[string]Digest{}, st, 500)
		if len(r.request) != min(len(st.digests), 500) {
			t.Fatalf("request %d of %d", len(r.request), len(st.digests))
		}
		// A peer holding everything sends only this chunk's keys it misses.
		r = compareStatus(local, gossipStatus{digests: map[string]Digest{}, chunk: st.chunk, totChunks: 3}, 10_000)
		if len(r.send) != len(st.digests) {
			t.Fatalf("send %d, want the chunk's %d", len(r.send), len(st.digests))
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
	r := compareStatus(local, gossipStatus{digests: map[string]Digest{}, totChunks: 1}, 500)
	if len(r.send) != 500 || r.send[0] != "k0000" {
		t.Fatalf("send capped to 500 in key order: %d %v", len(r.send), r.send[:1])
	}
}

func TestSendBackKeys(t *testing.T) {
	got := sendBackKeys(map[string]Digest{"a": dg(1), "b": dg(2)}, map[string]Digest{"a": dg(1), "b": dg(7)})
	if !slices.Equal(got, []string{"b"}) {
		t.Fatalf("got %v", got)
	}
}
