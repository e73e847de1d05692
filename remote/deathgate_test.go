package remote

import (
	"slices"
	"testing"
	"time"
)

// gateRun drives a deathGate through steps and checks each decision.
type gateStep struct {
	do      string // "hold", "ack", "tick", "requeue", "empty", "forget", "closing", "settled"
	n       uint64 // hold, closing: user frames ever queued; ack: the flush; tick: seconds since start; forget: the incarnation
	uid     uint64 // hold: the peer incarnation (0 means 1)
	name    string // hold: the notice
	flush   uint64 // hold, requeue, closing: the flush frame to queue (0: none)
	send    bool   // hold: the notice goes at once; settled: the gate is settled
	release []string
}

func runGate(t *testing.T, steps []gateStep) {
	t.Helper()
	start := time.Unix(1000, 0)
	g := deathGate{timeout: 3 * time.Second}
	now := start
	names := func(ms []sysMessage) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.other)
		}
		return out
	}
	for i, s := range steps {
		var released []sysMessage
		switch s.do {
		case "hold":
			flush, send := g.hold(sysMessage{op: opDeath, other: s.name}, max(s.uid, 1), s.n, now)
			if flush != s.flush || send != s.send {
				t.Fatalf("step %d: hold %s after %d frames: flush %d send %v, want flush %d send %v",
					i, s.name, s.n, flush, send, s.flush, s.send)
			}
		case "ack":
			released = g.acknowledged(s.n)
		case "tick":
			now = start.Add(time.Duration(s.n) * time.Second)
			released = g.expired(now)
		case "requeue":
			if flush := g.requeued(); flush != s.flush {
				t.Fatalf("step %d: requeued gives flush %d, want %d", i, flush, s.flush)
			}
		case "empty":
			released = g.emptied(s.n)
		case "forget":
			g.forget(s.n)
		case "closing":
			if flush := g.closing(s.n); flush != s.flush {
				t.Fatalf("step %d: closing after %d frames gives flush %d, want %d", i, s.n, flush, s.flush)
			}
		case "settled":
			if got := g.settled(); got != s.send {
				t.Fatalf("step %d: settled %v, want %v", i, got, s.send)
			}
		}
		if got := names(released); !slices.Equal(got, s.release) {
			t.Fatalf("step %d (%s %d): released %v, want %v", i, s.do, s.n, got, s.release)
		}
	}
}

func TestDeathGate(t *testing.T) {
	cases := []struct {
		name  string
		steps []gateStep
	}{
		{"nothing ever sent on the user lane: at once", []gateStep{
			{do: "hold", n: 0, name: "a", send: true},
		}},
		{"closing with nothing ever sent: settled, no flush", []gateStep{
			{do: "closing", n: 0},
			{do: "settled", send: true},
		}},
		{"closing after frames: settled once their flush is acknowledged", []gateStep{
			{do: "closing", n: 7, flush: 1},
			{do: "settled", send: false},
			{do: "ack", n: 1},
			{do: "settled", send: true},
			{do: "closing", n: 7}, // nothing queued since
		}},
		{"closing with a notice held: one more flush, settled when both are through", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "closing", n: 6, flush: 2},
			{do: "ack", n: 1, release: []string{"a"}},
			{do: "settled", send: false},
			{do: "ack", n: 2},
			{do: "settled", send: true},
		}},
		{"closing right behind a notice's flush: no new one", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "closing", n: 5},
			{do: "settled", send: false},
			{do: "ack", n: 1, release: []string{"a"}},
			{do: "settled", send: true},
		}},
		{"held until its flush is acknowledged", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "tick", n: 1},
			{do: "ack", n: 1, release: []string{"a"}},
			{do: "ack", n: 1}, // a duplicate releases nothing
		}},
		{"nothing queued since an acknowledged flush: at once", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "ack", n: 1, release: []string{"a"}},
			{do: "hold", n: 5, name: "b", send: true},
		}},
		{"nothing queued since an outstanding flush: waits for it", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "hold", n: 5, name: "b"},
			{do: "ack", n: 1, release: []string{"a", "b"}},
		}},
		{"a frame queued since: a new flush, and only the first is released by the first ack", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "hold", n: 6, name: "b", flush: 2},
			{do: "ack", n: 1, release: []string{"a"}},
			{do: "ack", n: 2, release: []string{"b"}},
		}},
		{"a later acknowledgement releases the earlier flushes' notices too", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "hold", n: 6, name: "b", flush: 2},
			{do: "ack", n: 2, release: []string{"a", "b"}},
			{do: "ack", n: 1},
		}},
		{"an acknowledgement of a flush never sent is ignored", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "ack", n: 9},
			{do: "ack", n: 1, release: []string{"a"}},
		}},
		{"an unacknowledged flush releases its notices at the timeout, in order", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "tick", n: 1},
			{do: "hold", n: 6, name: "b", flush: 2},
			{do: "tick", n: 2},
			{do: "tick", n: 3, release: []string{"a"}},
			{do: "tick", n: 4, release: []string{"b"}},
			{do: "ack", n: 2},
		}},
		{"a broken connection: a new flush at the end of the requeued frames", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "hold", n: 6, name: "b", flush: 2},
			{do: "requeue", flush: 3},
			{do: "ack", n: 2}, // the old flush, written again before the break: not enough
			{do: "ack", n: 3, release: []string{"a", "b"}},
		}},
		{"a broken connection with nothing outstanding queues no flush", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "ack", n: 1, release: []string{"a"}},
			{do: "requeue"},
			{do: "hold", n: 5, name: "b", send: true},
		}},
		{"a queue dropped to dead letters: nothing is ahead any more", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "hold", n: 6, name: "b", flush: 2},
			{do: "empty", n: 6, release: []string{"a", "b"}},
			{do: "hold", n: 6, name: "c", send: true},
			{do: "hold", n: 7, name: "d", flush: 3},
		}},
		{"an incarnation gone: its notices are dropped, not the next one's", []gateStep{
			{do: "hold", n: 5, name: "a", flush: 1},
			{do: "hold", n: 6, uid: 2, name: "b", flush: 2},
			{do: "forget", n: 1},
			{do: "hold", n: 6, uid: 2, name: "c"}, // the flush is still outstanding
			{do: "ack", n: 2, release: []string{"b", "c"}},
			{do: "tick", n: 10},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { runGate(t, c.steps) })
	}
}
