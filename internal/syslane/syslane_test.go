package syslane

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// step is one event on a Sender and what it must decide.
type step struct {
	op   string // send, next, ack, tick, disconnect, reset
	arg  uint64 // ack: seq
	ms   int    // the time of the event
	want []uint64
	ok   bool // send: accepted; ack: changed something; tick: resend
}

func TestSender(t *testing.T) {
	cfg := Config{Capacity: 3, ResendAfter: time.Second}
	cases := []struct {
		name  string
		steps []step
	}{
		{"numbers from 1 and writes each once", []step{
			{op: "send", want: []uint64{1}, ok: true},
			{op: "send", want: []uint64{2}, ok: true},
			{op: "next", want: []uint64{1, 2}},
			{op: "next", want: nil},
			{op: "send", want: []uint64{3}, ok: true},
			{op: "next", want: []uint64{3}},
		}},
		{"an ack releases and frees room", []step{
			{op: "send", ok: true}, {op: "send", ok: true}, {op: "send", ok: true},
			{op: "send", ok: false}, // full: give up
			{op: "next", want: []uint64{1, 2, 3}},
			{op: "ack", arg: 2, ok: true},
			{op: "send", want: []uint64{4}, ok: true},
			{op: "next", want: []uint64{4}},
		}},
		{"stale or unknown acks change nothing", []step{
			{op: "send", ok: true}, {op: "send", ok: true},
			{op: "next", want: []uint64{1, 2}},
			{op: "ack", arg: 3, ok: false}, // never sent
			{op: "ack", arg: 1, ok: true},
			{op: "ack", arg: 1, ok: false}, // again
			{op: "ack", arg: 0, ok: false},
		}},
		{"a new connection writes the unacknowledged again", []step{
			{op: "send", ok: true}, {op: "send", ok: true}, {op: "send", ok: true},
			{op: "next", want: []uint64{1, 2, 3}},
			{op: "ack", arg: 1, ok: true},
			{op: "disconnect"},
			{op: "next", want: []uint64{2, 3}},
		}},
		{"stalled acks resend after ResendAfter, not before", []step{
			{op: "send", ok: true},
			{op: "next", ms: 100, want: []uint64{1}},
			{op: "tick", ms: 1099, ok: false},
			{op: "tick", ms: 1100, ok: true},
			{op: "next", ms: 1100, want: []uint64{1}},
			{op: "tick", ms: 2000, ok: false}, // the resend restarted the wait
			{op: "tick", ms: 2100, ok: true},
		}},
		{"an ack restarts the wait", []step{
			{op: "send", ok: true}, {op: "send", ok: true},
			{op: "next", ms: 0, want: []uint64{1, 2}},
			{op: "ack", arg: 1, ms: 900, ok: true},
			{op: "tick", ms: 1500, ok: false},
			{op: "tick", ms: 1900, ok: true},
			{op: "next", ms: 1900, want: []uint64{2}},
		}},
		{"messages queued long before a connection do not count as stalled", []step{
			{op: "send", ms: 0, ok: true},
			{op: "tick", ms: 5000, ok: false}, // nothing written: nothing to resend
			{op: "next", ms: 5000, want: []uint64{1}},
			{op: "tick", ms: 5001, ok: false},
		}},
		{"nothing in flight, nothing to resend", []step{
			{op: "send", ok: true},
			{op: "next", want: []uint64{1}},
			{op: "ack", arg: 1, ms: 10, ok: true},
			{op: "tick", ms: 5000, ok: false},
		}},
		{"a reset starts the next incarnation at 1", []step{
			{op: "send", ok: true}, {op: "send", ok: true},
			{op: "next", want: []uint64{1, 2}},
			{op: "reset", want: []uint64{1, 2}},
			{op: "send", want: []uint64{1}, ok: true},
			{op: "next", want: []uint64{1}},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := NewSender[string](cfg)
			for i, st := range c.steps {
				now := at(st.ms)
				var got []uint64
				var ok bool
				switch st.op {
				case "send":
					seq, accepted := s.Send("m")
					ok = accepted
					if accepted {
						got = []uint64{seq}
					}
				case "next":
					if s.HasNext() != (len(st.want) > 0) {
						t.Fatalf("step %d: HasNext = %v", i, s.HasNext())
					}
					for _, m := range s.Next(now, nil) {
						got = append(got, m.Seq)
					}
				case "ack":
					ok = s.Ack(st.arg, now)
				case "tick":
					ok = s.Tick(now)
				case "disconnect":
					s.Disconnected()
				case "reset":
					for _, m := range s.Reset() {
						got = append(got, m.Seq)
					}
				}
				if st.op != "disconnect" && (st.want != nil || st.op == "next") && !equal(got, st.want) {
					t.Fatalf("step %d (%s): got %v, want %v", i, st.op, got, st.want)
				}
				if (st.op == "send" || st.op == "ack" || st.op == "tick") && ok != st.ok {
					t.Fatalf("step %d (%s): ok = %v, want %v", i, st.op, ok, st.ok)
				}
			}
		})
	}
}

func TestReceiver(t *testing.T) {
	cases := []struct {
		name  string
		seqs  []uint64
		want  []Verdict
		acked uint64
	}{
		{"in order", []uint64{1, 2, 3}, []Verdict{Apply, Apply, Apply}, 3},
		{"written again after a reconnect", []uint64{1, 2, 1, 2, 3}, []Verdict{Apply, Apply, Duplicate, Duplicate, Apply}, 3},
		{"a gap is not applied", []uint64{1, 3, 2, 3}, []Verdict{Apply, Gap, Apply, Apply}, 3},
		{"nothing yet", nil, nil, 0},
		{"a first message that is not 1", []uint64{2}, []Verdict{Gap}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r Receiver
			for i, seq := range c.seqs {
				if got := r.Receive(seq); got != c.want[i] {
					t.Fatalf("message %d (seq %d): %v, want %v", i, seq, got, c.want[i])
				}
			}
			if r.Acked() != c.acked {
				t.Errorf("acked %d, want %d", r.Acked(), c.acked)
			}
		})
	}
}

// The two sides together deliver every message once, in order, across lost
// connections and lost acks.
func TestSenderAndReceiverTogether(t *testing.T) {
	s := NewSender[int](Config{Capacity: 100, ResendAfter: time.Second})
	var r Receiver
	var applied []int
	now := t0
	deliver := func(ms []Message[int], lose int) {
		for i, m := range ms {
			if i >= len(ms)-lose {
				return // lost with the connection
			}
			if r.Receive(m.Seq) == Apply {
				applied = append(applied, m.Msg)
			}
		}
	}
	for i := range 10 {
		s.Send(i)
	}
	deliver(s.Next(now, nil), 4) // 6 arrive, then the connection breaks
	s.Disconnected()
	for i := 10; i < 15; i++ {
		s.Send(i)
	}
	deliver(s.Next(now, nil), 0) // everything from 1 again: 1..6 are duplicates
	// The ack is lost; acks stall and everything is written again.
	now = now.Add(2 * time.Second)
	if !s.Tick(now) {
		t.Fatal("no resend after a stall")
	}
	deliver(s.Next(now, nil), 0)
	s.Ack(r.Acked(), now)
	if s.Unacked() != 0 || len(applied) != 15 {
		t.Fatalf("unacked %d, applied %v", s.Unacked(), applied)
	}
	for i, v := range applied {
		if v != i {
			t.Fatalf("applied %v", applied)
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (v Verdict) String() string {
	return [...]string{"Apply", "Duplicate", "Gap"}[v]
}
