package ddata

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/troupe-go/troupe/cluster"
)

var t0 = time.Unix(1_700_000_000, 0)

func peers(reachable, unreachable, exiting []cluster.UniqueAddress) []peer {
	var out []peer
	for _, n := range reachable {
		out = append(out, peer{node: n, reachable: true})
	}
	for _, n := range unreachable {
		out = append(out, peer{node: n})
	}
	for _, n := range exiting {
		out = append(out, peer{node: n, reachable: true, exiting: true})
	}
	return out
}

func TestFanoutChoosesReachableFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// 1 local + 4 others: majority 3, so 2 primary; reachable n3, n5 come first.
	f := newFanout(WriteMajority(time.Second, 0).l, peers([]cluster.UniqueAddress{n3, n5}, []cluster.UniqueAddress{n2, n4}, nil), false, rng, t0)
	if f.needed != 2 {
		t.Fatalf("needed %d", f.needed)
	}
	got := sortNodes(slices.Clone(f.primary))
	if !slices.Equal(got, []cluster.UniqueAddress{n3, n5}) {
		t.Fatalf("primary %v, want the reachable nodes", f.primary)
	}
	if len(f.secondary) != 2 {
		t.Fatalf("secondary %v", f.secondary)
	}
	// Ordered: node order within each group.
	f = newFanout(WriteMajority(time.Second, 0).l, peers([]cluster.UniqueAddress{n5, n3}, []cluster.UniqueAddress{n4, n2}, nil), true, rng, t0)
	if !slices.Equal(f.primary, []cluster.UniqueAddress{n3, n5}) || !slices.Equal(f.secondary, []cluster.UniqueAddress{n2, n4}) {
		t.Fatalf("ordered: %v %v", f.primary, f.secondary)
	}
}

func TestFanoutSecondaryCap(t *testing.T) {
	var others []cluster.UniqueAddress
	for i := range 30 {
		others = append(others, cluster.UniqueAddress{Addr: "h", UID: uint64(i + 100)})
	}
	f := newFanout(ReadFrom(3, time.Second).l, peers(others, nil, nil), false, rand.New(rand.NewPCG(3, 4)), t0)
	if len(f.primary) != 2 || len(f.secondary) != maxSecondaryNodes {
		t.Fatalf("primary %d secondary %d", len(f.primary), len(f.secondary))
	}
}

func TestExitingLeftOutOfAllAndPlus(t *testing.T) {
	p := peers([]cluster.UniqueAddress{n2, n3}, nil, []cluster.UniqueAddress{n4})
	cases := []struct {
		name   string
		l      level
		needed int
	}{
		{"all", WriteAll(time.Second).l, 2},                 // n4 left out: N = 3
		{"plus", WriteMajorityPlus(time.Second, 1, 0).l, 2}, // N = 3: min(3, 3/2+1+1) = 3
		{"majority", WriteMajority(time.Second, 0).l, 2},    // N = 4: 3
		{"from", WriteTo(4, time.Second).l, 3},              // N = 4
	}
	for _, c := range cases {
		f := newFanout(c.l, p, true, nil, t0)
		if f.needed != c.needed {
			t.Errorf("%s: needed %d, want %d", c.name, f.needed, c.needed)
		}
		if c.name == "all" && slices.Contains(append(f.primary, f.secondary...), n4) {
			t.Errorf("all: exiting node asked")
		}
	}
}

func TestWriteAggregator(t *testing.T) {
	others := peers([]cluster.UniqueAddress{n2, n3, n4, n5}, nil, nil)
	type step struct {
		at    time.Duration
		do    string // ack, nack, store, storefail, tick
		node  cluster.UniqueAddress
		want  writeOutcome
		nSent int // for tick: secondary nodes sent
	}
	cases := []struct {
		name    string
		c       WriteConsistency
		durable bool
		steps   []step
	}{
		{"majority succeeds after 2 acks", WriteMajority(time.Second, 0), false, []step{
			{do: "ack", node: n2, want: writePending},
			{do: "ack", node: n2, want: writePending}, // duplicate
			{do: "ack", node: n3, want: writeSucceeded},
		}},
		{"secondary after timeout/5, then timeout", WriteMajority(time.Second, 0), false, []step{
			{at: 100 * time.Millisecond, do: "tick", want: writePending},
			{at: 200 * time.Millisecond, do: "tick", want: writePending, nSent: 2},
			{at: 300 * time.Millisecond, do: "tick", want: writePending},
			{at: time.Second, do: "tick", want: writeTimedOut},
			{do: "ack", node: n2, want: writeTimedOut},
		}},
		{"durable waits for the local store", WriteAll(time.Second), true, []step{
			{do: "ack", node: n2}, {do: "ack", node: n3}, {do: "ack", node: n4},
			{do: "ack", node: n5, want: writePending},
			{do: "store", want: writeSucceeded},
		}},
		{"local store failure", WriteMajority(time.Second, 0), true, []step{
			{do: "storefail", want: writeStoreFailed},
		}},
		{"too many nacks fail fast", WriteAll(time.Second), false, []step{
			{do: "ack", node: n2},
			{do: "nack", node: n3, want: writeTimedOut},
		}},
		{"local acts as done", WriteLocal(), false, []step{
			{do: "tick", want: writeSucceeded},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWriteAggregator(c.c, others, true, nil, c.durable, t0)
			for i, s := range c.steps {
				var got writeOutcome
				switch s.do {
				case "ack":
					got = w.ack(s.node)
				case "nack":
					got = w.nack(s.node)
				case "store":
					got = w.localStore(true)
				case "storefail":
					got = w.localStore(false)
				case "tick":
					var sent []cluster.UniqueAddress
					sent, got = w.tick(t0.Add(s.at))
					if len(sent) != s.nSent {
						t.Fatalf("step %d: sent %v, want %d nodes", i, sent, s.nSent)
					}
				}
				if got != s.want {
					t.Fatalf("step %d (%s %v): outcome %d, want %d", i, s.do, s.node, got, s.want)
				}
			}
		})
	}
}

func TestWriteAggregatorDeltaNack(t *testing.T) {
	w := newWriteAggregator(WriteAll(time.Second), peers([]cluster.UniqueAddress{n2, n3}, nil, nil), true, nil, false, t0)
	if !w.deltaNack(n2) {
		t.Fatal("a delta nack from an asked node should resend the full value")
	}
	if w.deltaNack(n4) {
		t.Fatal("a node not asked gets nothing")
	}
	w.ack(n2)
	if w.deltaNack(n2) {
		t.Fatal("an acked node gets nothing")
	}
}

func TestReadAggregator(t *testing.T) {
	local := NewGCounter()
	local.Increment(n1, 1)
	r := newReadAggregator(ReadMajority(time.Second, 0), peers([]cluster.UniqueAddress{n2, n3, n4, n5}, nil, nil), rand.New(rand.NewPCG(5, 6)), local.Clone(), t0)
	if len(r.primary) != 2 {
		t.Fatalf("primary %v", r.primary)
	}
	a, b := r.primary[0], r.primary[1]
	reply := NewGCounter()
	reply.Increment(a, 5)
	if out, err := r.reply(a, reply); err != nil || out != readPending {
		t.Fatalf("first reply: %d %v", out, err)
	}
	reply.Increment(a, 1) // the aggregator must not have kept the reply
	if out, err := r.reply(b, nil); err != nil || out != readDone {
		t.Fatalf("second reply (not found): %d %v", out, err)
	}
	if got := r.value().(*GCounter).Value(); got != 6 {
		t.Fatalf("merged %d, want 6 (local 1 + a's 5)", got)
	}
	// A reply of another type fails, and cannot make the read succeed.
	r2 := newReadAggregator(ReadAll(time.Second), peers([]cluster.UniqueAddress{n2}, nil, nil), nil, NewGCounter(), t0)
	if out, err := r2.reply(n2, NewFlag()); !errors.Is(err, ErrTypeMismatch) || out != readTimedOut {
		t.Fatalf("mismatch: %d %v", out, err)
	}
	// Timeout.
	r3 := newReadAggregator(ReadAll(time.Second), peers([]cluster.UniqueAddress{n2}, nil, nil), nil, nil, t0)
	if _, out := r3.tick(t0.Add(time.Second)); out != readTimedOut {
		t.Fatalf("timeout: %d", out)
	}
	// No other node: done at once, as a local read.
	if r4 := newReadAggregator(ReadAll(time.Second), nil, nil, nil, t0); r4.outcome != readDone {
		t.Fatal("alone: should be done")
	}
}

// From levels ask for exactly n replicas: with fewer nodes the write cannot succeed
// and fails at once, saying so (not as a timeout), while Majority and All act as
// local.
func TestFromNeedsItsReplicas(t *testing.T) {
	w := newWriteAggregator(WriteTo(2, time.Second), nil, false, nil, false, t0)
	if w.outcome != writeTooFew || w.needed != 1 || w.known != 1 {
		t.Fatalf("WriteTo(2) alone: outcome %d (needed %d, known %d), want too few", w.outcome, w.needed, w.known)
	}
	w = newWriteAggregator(WriteTo(3, time.Second), peers([]cluster.UniqueAddress{n2}, nil, nil), false, nil, false, t0)
	if w.outcome != writeTooFew || len(w.primary) != 1 || w.known != 2 {
		t.Fatalf("WriteTo(3) with 2 nodes: outcome %d, primary %v", w.outcome, w.primary)
	}
	for _, c := range []WriteConsistency{WriteMajority(time.Second, 0), WriteAll(time.Second)} {
		if w := newWriteAggregator(c, nil, false, nil, false, t0); w.outcome != writeSucceeded {
			t.Fatalf("%v alone: outcome %d, want success", c, w.outcome)
		}
	}
	r := newReadAggregator(ReadFrom(2, time.Second), nil, nil, nil, t0)
	if r.outcome != readTooFew {
		t.Fatalf("ReadFrom(2) alone: outcome %d, want too few", r.outcome)
	}
}
