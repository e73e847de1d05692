package replication

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// Nodes are ints in these tests.
const (
	n1 = iota + 1
	n2
	n3
	n4
	n5
)

func peers(reachable, unreachable, exiting []int) []Peer[int] {
	var out []Peer[int]
	for _, n := range reachable {
		out = append(out, Peer[int]{Node: n, Reachable: true})
	}
	for _, n := range unreachable {
		out = append(out, Peer[int]{Node: n})
	}
	for _, n := range exiting {
		out = append(out, Peer[int]{Node: n, Reachable: true, Exiting: true})
	}
	return out
}

// Levels as ddata's constructors build them.
func writeMajority(timeout time.Duration, minCap int) Level {
	return Level{Kind: Majority, MinCap: minCap, Timeout: timeout}
}
func writeMajorityPlus(timeout time.Duration, additional, minCap int) Level {
	return Level{Kind: Majority, Additional: additional, MinCap: minCap, Timeout: timeout}
}
func writeTo(n int, timeout time.Duration) Level { return Level{Kind: From, N: n, Timeout: timeout} }
func writeAll(timeout time.Duration) Level       { return Level{Kind: All, Timeout: timeout} }

func newWrite(l Level, p []Peer[int], ordered bool, rng *rand.Rand, durable bool, now time.Time) *WriteAggregator[int] {
	return NewWriteAggregator(l, p, cmp.Compare[int], ordered, rng, durable, now)
}

func newRead(l Level, p []Peer[int], rng *rand.Rand, now time.Time) *ReadAggregator[int] {
	return NewReadAggregator(l, p, cmp.Compare[int], rng, now)
}

func TestFanoutChoosesReachableFirst(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	// 1 local + 4 others: majority 3, so 2 primary; reachable n3, n5 come first.
	f := NewFanout(writeMajority(time.Second, 0), peers([]int{n3, n5}, []int{n2, n4}, nil), cmp.Compare[int], false, rng, t0)
	if f.needed != 2 {
		t.Fatalf("needed %d", f.needed)
	}
	got := slices.Sorted(slices.Values(f.primary))
	if !slices.Equal(got, []int{n3, n5}) {
		t.Fatalf("primary %v, want the reachable nodes", f.primary)
	}
	if len(f.secondary) != 2 {
		t.Fatalf("secondary %v", f.secondary)
	}
	// Ordered: node order within each group.
	f = NewFanout(writeMajority(time.Second, 0), peers([]int{n5, n3}, []int{n4, n2}, nil), cmp.Compare[int], true, rng, t0)
	if !slices.Equal(f.primary, []int{n3, n5}) || !slices.Equal(f.secondary, []int{n2, n4}) {
		t.Fatalf("ordered: %v %v", f.primary, f.secondary)
	}
}

func TestFanoutSecondaryCap(t *testing.T) {
	var others []int
	for i := range 30 {
		others = append(others, i+100)
	}
	f := NewFanout(writeTo(3, time.Second), peers(others, nil, nil), cmp.Compare[int], false, rand.New(rand.NewPCG(3, 4)), t0)
	if len(f.primary) != 2 || len(f.secondary) != MaxSecondaryNodes {
		t.Fatalf("primary %d secondary %d", len(f.primary), len(f.secondary))
	}
}

func TestExitingLeftOutOfAllAndPlus(t *testing.T) {
	p := peers([]int{n2, n3}, nil, []int{n4})
	cases := []struct {
		name   string
		l      Level
		needed int
	}{
		{"all", writeAll(time.Second), 2},                 // n4 left out: N = 3
		{"plus", writeMajorityPlus(time.Second, 1, 0), 2}, // N = 3: min(3, 3/2+1+1) = 3
		{"majority", writeMajority(time.Second, 0), 2},    // N = 4: 3
		{"from", writeTo(4, time.Second), 3},              // N = 4
	}
	for _, c := range cases {
		f := NewFanout(c.l, p, cmp.Compare[int], true, nil, t0)
		if f.needed != c.needed {
			t.Errorf("%s: needed %d, want %d", c.name, f.needed, c.needed)
		}
		if c.name == "all" && slices.Contains(append(f.primary, f.secondary...), n4) {
			t.Errorf("all: exiting node asked")
		}
	}
}

func TestWriteAggregator(t *testing.T) {
	others := peers([]int{n2, n3, n4, n5}, nil, nil)
	type step struct {
		at    time.Duration
		do    string // ack, nack, store, storefail, tick
		node  int
		want  WriteOutcome
		nSent int // for tick: secondary nodes sent
	}
	cases := []struct {
		name    string
		c       Level
		durable bool
		steps   []step
	}{
		{"majority succeeds after 2 acks", writeMajority(time.Second, 0), false, []step{
			{do: "ack", node: n2, want: WritePending},
			{do: "ack", node: n2, want: WritePending}, // duplicate
			{do: "ack", node: n3, want: WriteSucceeded},
		}},
		{"secondary after timeout/5, then timeout", writeMajority(time.Second, 0), false, []step{
			{at: 100 * time.Millisecond, do: "tick", want: WritePending},
			{at: 200 * time.Millisecond, do: "tick", want: WritePending, nSent: 2},
			{at: 300 * time.Millisecond, do: "tick", want: WritePending},
			{at: time.Second, do: "tick", want: WriteTimedOut},
			{do: "ack", node: n2, want: WriteTimedOut},
		}},
		{"durable waits for the local store", writeAll(time.Second), true, []step{
			{do: "ack", node: n2}, {do: "ack", node: n3}, {do: "ack", node: n4},
			{do: "ack", node: n5, want: WritePending},
			{do: "store", want: WriteSucceeded},
		}},
		{"local store failure", writeMajority(time.Second, 0), true, []step{
			{do: "storefail", want: WriteStoreFailed},
		}},
		{"too many nacks fail fast", writeAll(time.Second), false, []step{
			{do: "ack", node: n2},
			{do: "nack", node: n3, want: WriteTimedOut},
		}},
		{"local acts as done", Level{}, false, []step{
			{do: "tick", want: WriteSucceeded},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWrite(c.c, others, true, nil, c.durable, t0)
			for i, s := range c.steps {
				var got WriteOutcome
				switch s.do {
				case "ack":
					got = w.Ack(s.node)
				case "nack":
					got = w.Nack(s.node)
				case "store":
					got = w.LocalStore(true)
				case "storefail":
					got = w.LocalStore(false)
				case "tick":
					var sent []int
					sent, got = w.Tick(t0.Add(s.at))
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
	w := newWrite(writeAll(time.Second), peers([]int{n2, n3}, nil, nil), true, nil, false, t0)
	if !w.DeltaNack(n2) {
		t.Fatal("a delta nack from an asked node should resend the full value")
	}
	if w.DeltaNack(n4) {
		t.Fatal("a node not asked gets nothing")
	}
	w.Ack(n2)
	if w.DeltaNack(n2) {
		t.Fatal("an acked node gets nothing")
	}
}

func TestReadAggregator(t *testing.T) {
	r := newRead(writeMajority(time.Second, 0), peers([]int{n2, n3, n4, n5}, nil, nil), rand.New(rand.NewPCG(5, 6)), t0)
	if len(r.primary) != 2 {
		t.Fatalf("primary %v", r.primary)
	}
	a, b := r.primary[0], r.primary[1]
	if !r.Accepts(a) || r.Accepts(n1) {
		t.Fatal("Accepts: an asked node counts, another does not")
	}
	if out := r.Reply(a); out != ReadPending {
		t.Fatalf("first reply: %d", out)
	}
	if out := r.Reply(a); out != ReadPending || r.Accepts(a) {
		t.Fatalf("a repeated reply: %d", out)
	}
	if out := r.Reply(b); out != ReadDone {
		t.Fatalf("second reply: %d", out)
	}
	// A reply that cannot be used fails, and cannot make the read succeed.
	r2 := newRead(writeAll(time.Second), peers([]int{n2}, nil, nil), nil, t0)
	if out := r2.Fail(n2); out != ReadTimedOut {
		t.Fatalf("failed reply: %d", out)
	}
	if out := r2.Reply(n2); out != ReadTimedOut {
		t.Fatalf("after the outcome: %d", out)
	}
	// Timeout.
	r3 := newRead(writeAll(time.Second), peers([]int{n2}, nil, nil), nil, t0)
	if _, out := r3.Tick(t0.Add(time.Second)); out != ReadTimedOut {
		t.Fatalf("timeout: %d", out)
	}
	// No other node: done at once, as a local read.
	if r4 := newRead(writeAll(time.Second), nil, nil, t0); r4.outcome != ReadDone {
		t.Fatal("alone: should be done")
	}
}

// From levels ask for exactly n replicas: with fewer nodes the write cannot succeed
// and fails at once, saying so (not as a timeout), while Majority and All act as
// local.
func TestFromNeedsItsReplicas(t *testing.T) {
	w := newWrite(writeTo(2, time.Second), nil, false, nil, false, t0)
	if w.outcome != WriteTooFew || w.needed != 1 || w.known != 1 {
		t.Fatalf("writeTo(2) alone: outcome %d (needed %d, known %d), want too few", w.outcome, w.needed, w.known)
	}
	w = newWrite(writeTo(3, time.Second), peers([]int{n2}, nil, nil), false, nil, false, t0)
	if w.outcome != WriteTooFew || len(w.primary) != 1 || w.known != 2 {
		t.Fatalf("writeTo(3) with 2 nodes: outcome %d, primary %v", w.outcome, w.primary)
	}
	for _, c := range []Level{writeMajority(time.Second, 0), writeAll(time.Second)} {
		if w := newWrite(c, nil, false, nil, false, t0); w.outcome != WriteSucceeded {
			t.Fatalf("%v alone: outcome %d, want success", c, w.outcome)
		}
	}
	r := newRead(writeTo(2, time.Second), nil, nil, t0)
	if r.outcome != ReadTooFew {
		t.Fatalf("writeTo(2) alone: outcome %d, want too few", r.outcome)
	}
}
